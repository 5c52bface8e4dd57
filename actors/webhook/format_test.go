package webhook

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The delivery body is byte for byte docs/webhooks.md's payload, and an
// outbox record reads the same whatever the order of its keys: a record
// written before Event embedded Payload (accountId second) decodes to the
// same event, and a record written now has the same keys and values.
func TestEventAndPayloadJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	ev := Event{Payload: Payload{ID: "evt_1", Type: "invoice_paid", AgentID: "a1", CreatedAt: at, Data: json.RawMessage(`{"amount":"5"}`)}, AccountID: "acct"}
	const (
		payload  = `{"id":"evt_1","type":"invoice_paid","agentId":"a1","createdAt":"2026-01-02T03:04:05.000006Z","data":{"amount":"5"}}`
		recorded = `{"id":"evt_1","accountId":"acct","agentId":"a1","type":"invoice_paid","createdAt":"2026-01-02T03:04:05.000006Z","data":{"amount":"5"}}`
	)
	body, err := json.Marshal(ev.Payload)
	if err != nil || string(body) != payload {
		t.Fatalf("payload %s %v, want %s", body, err, payload)
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rec  string
	}{
		{"written before", recorded},
		{"written now", string(raw)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Event
			if err := json.Unmarshal([]byte(tc.rec), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, ev) {
				t.Errorf("decoded %+v, want %+v", got, ev)
			}
			var gotKeys, wantKeys map[string]any
			if err := json.Unmarshal([]byte(tc.rec), &gotKeys); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(recorded), &wantKeys); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotKeys, wantKeys) {
				t.Errorf("record %v, want %v", gotKeys, wantKeys)
			}
		})
	}
}
