package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/persistence"
)

// runTwice delivers every chat twice, from one encoded envelope: what a
// cluster member does if it sends a forwarded request again after the
// owner ran it (the owner's answer taken for lost). runtime/cluster sends a
// request again only when it was refused unprocessed; this is the worst
// case that rule guards against, made deterministic.
type runTwice struct {
	next  httpapi.Agents
	codec *msg.Codec
}

func (d *runTwice) Request(ctx context.Context, id string, m any) (any, error) {
	if _, ok := m.(*agent.Chat); !ok {
		return d.next.Request(ctx, id, m)
	}
	dl, _ := ctx.Deadline()
	req, err := d.codec.EncodeRequest(id, m, dl, "")
	if err != nil {
		return nil, err
	}
	raw, err := proto.Marshal(req)
	if err != nil {
		return nil, err
	}
	var v any
	for range 2 {
		var back msg.AgentRequest
		if err := proto.Unmarshal(raw, &back); err != nil {
			return nil, err
		}
		got, err := d.codec.DecodeRequest(&back)
		if err != nil {
			return nil, err
		}
		if v, err = d.next.Request(ctx, id, got); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// sends counts the EVM payment intents in the store: one per payment made.
func sends(t *testing.T, st persistence.Store) int {
	t.Helper()
	recs, err := st.List(context.Background(), evm.TableIntents, persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		var it struct{ Op string }
		if json.Unmarshal(r.Value, &it) == nil && it.Op == "send" {
			n++
		}
	}
	return n
}

// A chat without an Idempotency-Key that the system itself runs twice (a
// forwarded request sent again) pays once: the payment keys come from
// the HTTP request's own id (agent.Chat.RequestID), which travels inside
// the envelope's payload, so both runs derive the same keys. A client's
// own second request is a new HTTP request and a new intent: it pays again.
// Without RequestID the keys came from the conversation's message count,
// which the second run had moved on: two payments.
func TestChatRunTwiceByTheSystemPaysOnce(t *testing.T) {
	e := newEnv(t, envOptions{evm: true})
	c := msg.NewCodec()
	agent.RegisterWire(c)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Store: e.store, Agents: &runTwice{next: wire(e.host), codec: c},
		RateLimit: httpapi.RateLimit{PerSecond: -1}}))
	t.Cleanup(srv.Close)
	twice := *e
	twice.url = srv.URL

	alice := e.create(t, newEVMOwner(t), "twice-payer", "ethereum")
	bob := e.create(t, newEVMOwner(t), "twice-payee", "ethereum")
	// Two payments of different amounts: the same payment asked for again
	// by the client would ask first (issue 32 item 4).
	bodies := []map[string]string{{"message": "send 0.01 ETH to twice-payee"}, {"message": "send 0.02 ETH to twice-payee"}}
	scan := func() int {
		t.Helper()
		_, out := e.chat(t, bob.ID, e.key, map[string]string{"message": "scan for payments"})
		var scanned struct{ Count int }
		if len(out.ToolCalls) != 1 || json.Unmarshal([]byte(out.ToolCalls[0].Detail), &scanned) != nil {
			t.Fatalf("scan: %+v", out)
		}
		return scanned.Count
	}
	for i, want := range []int{1, 2} {
		r, out := twice.chat(t, alice.ID, e.key, bodies[i])
		if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
			t.Fatalf("request %d = %d %s", i+1, r.status, r.body)
		}
		if got := sends(t, e.store); got != want {
			t.Fatalf("after request %d (each run twice): %d payments, want %d", i+1, got, want)
		}
		var paid struct{ TxHash string }
		_ = json.Unmarshal([]byte(out.ToolCalls[0].Detail), &paid)
		if !strings.HasPrefix(paid.TxHash, "0x") {
			t.Fatalf("detail %s", out.ToolCalls[0].Detail)
		}
		// A second payment would have taken a later nonce than any
		// earlier one: once the answered one is mined, all are.
		e.waitMined(t, paid.TxHash)
		if n := scan(); n != 1 {
			t.Fatalf("request %d: the payee found %d new payments, want 1", i+1, n)
		}
	}
}
