package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// TestInvoiceJSONIsStable pins the bytes of an invoice as stored
// (InvoiceRecord, table invoices) and as tools and the API answer it
// (tools.Invoice): records written by earlier versions must read back the
// same, and the wire must not change. Each row is one shape of invoice.
func TestInvoiceJSONIsStable(t *testing.T) {
	created := time.Date(2026, 3, 1, 12, 30, 0, 0, time.UTC)
	expires := created.Add(7 * 24 * time.Hour)
	paid := created.Add(time.Hour)
	tx := "0xabc"
	full := tools.Invoice{Invoice: client.Invoice{ID: "3f2a9c1e-0000-4000-8000-000000000001", AgentName: "alice", Amount: "25", Asset: "USDC", Memo: "logo work", Status: InvoicePaid, TxHash: &tx, PaymentLink: "https://veil.example/pay/3f2a9c1e-0000-4000-8000-000000000001", CreatedAt: created}, AgentID: "agent-1", Chain: chains.Base, PayTo: "0x00000000000000000000000000000000000000aa", ExpiresAt: &expires}
	bare := tools.Invoice{Invoice: client.Invoice{ID: "id-2", Status: InvoicePending, CreatedAt: created}}
	for _, tc := range []struct {
		name string
		v    any
		into func() any
		want string
	}{
		{"record, every field", InvoiceRecord{Invoice: full, AgentID: "agent-1", EphemeralPubKey: "02ab", PaidAt: &paid}, func() any { return new(InvoiceRecord) },
			`{"id":"3f2a9c1e-0000-4000-8000-000000000001","agentName":"alice","amount":"25","asset":"USDC","memo":"logo work","status":"paid","txHash":"0xabc","paymentLink":"https://veil.example/pay/3f2a9c1e-0000-4000-8000-000000000001","createdAt":"2026-03-01T12:30:00Z","chain":"base","payTo":"0x00000000000000000000000000000000000000aa","expiresAt":"2026-03-08T12:30:00Z","agentId":"agent-1","ephemeralPubKey":"02ab","paidAt":"2026-03-01T13:30:00Z"}`},
		{"record, Solana reference", InvoiceRecord{Invoice: bare, Reference: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"}, func() any { return new(InvoiceRecord) },
			`{"id":"id-2","agentName":"","amount":"","asset":"","memo":"","status":"pending","txHash":null,"paymentLink":"","createdAt":"2026-03-01T12:30:00Z","chain":"","payTo":"","expiresAt":null,"agentId":"","ephemeralPubKey":"","reference":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"}`},
		{"record, empty fields", InvoiceRecord{Invoice: bare}, func() any { return new(InvoiceRecord) },
			`{"id":"id-2","agentName":"","amount":"","asset":"","memo":"","status":"pending","txHash":null,"paymentLink":"","createdAt":"2026-03-01T12:30:00Z","chain":"","payTo":"","expiresAt":null,"agentId":"","ephemeralPubKey":""}`},
		{"invoice (tools, wire)", full, func() any { return new(tools.Invoice) },
			`{"id":"3f2a9c1e-0000-4000-8000-000000000001","agentName":"alice","amount":"25","asset":"USDC","memo":"logo work","status":"paid","txHash":"0xabc","paymentLink":"https://veil.example/pay/3f2a9c1e-0000-4000-8000-000000000001","createdAt":"2026-03-01T12:30:00Z","chain":"base","payTo":"0x00000000000000000000000000000000000000aa","expiresAt":"2026-03-08T12:30:00Z"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("marshal:\n got %s\nwant %s", got, tc.want)
			}
			back := tc.into()
			if err := json.Unmarshal([]byte(tc.want), back); err != nil {
				t.Fatal(err)
			}
			// Invoice.AgentID is not in the JSON (the record keeps its own).
			want := tc.v
			switch v := want.(type) {
			case tools.Invoice:
				v.AgentID = ""
				want = v
			case InvoiceRecord:
				v.Invoice.AgentID = ""
				want = v
			}
			if got := reflect.ValueOf(back).Elem().Interface(); !reflect.DeepEqual(got, want) {
				t.Fatalf("unmarshal:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
