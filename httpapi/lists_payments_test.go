//go:build !nodevnet

package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	neturl "net/url"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// paymentPageJSON is GET /agent/:id/payments's answer.
type paymentPageJSON struct {
	Payments   []client.PaymentRecord `json:"payments"`
	NextCursor string                 `json:"nextCursor"`
}

// TestListPayments: over real HTTP, the payments an agent made in chat on
// the devnet (two sent, one its owner's policy refused) and one still
// pending on another chain are listed newest first, filtered by status,
// chain and since, paged by cursor, read one by one, for the caller's
// account only; a bad filter is a 400 that changes nothing.
func TestListPayments(t *testing.T) {
	e := newMoneyEnv(t)
	o := newEVMOwner(t)
	a := e.create(t, o, "alice", "ethereum")
	e.create(t, newEVMOwner(t), "bob", "ethereum")

	pay := func(msg, want string) {
		t.Helper()
		r, out := e.chat(t, a.ID, e.key, map[string]string{"message": msg})
		if r.status != 200 || len(out.ToolCalls) != 1 || !strings.Contains(out.ToolCalls[0].Detail, want) {
			t.Fatalf("chat %q = %d %s", msg, r.status, r.body)
		}
	}
	pay("send 0.01 ETH to bob", `"txHash"`)
	pay("send 0.02 ETH to bob", `"txHash"`)
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.05"}})
	pay("send 0.3 ETH to bob", "refused")
	// A payment still on its way on another chain (recorded, never
	// answered): written as the agent writes one before signing.
	amt, err := chains.ParseAmount("7", 6)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := state.NewOutgoing(e.store, a.ID, e.clock.Now).Open(context.Background(), tools.OutgoingPayment{
		Kind: tools.KindSendPayment, Source: tools.PaymentSource{Type: tools.SourceAPI}, Chain: chains.Base, Asset: "USDC",
		Amount: chains.NewAmount(amt, 6), Recipient: tools.PaymentRecipient{Name: "carol.veil", Address: "0x000000000000000000000000000000000000c0de"},
		IdempotencyKey: "lists-test-pending",
	})
	if err != nil {
		t.Fatal(err)
	}

	list := func(key, agentID string, q neturl.Values) (response, paymentPageJSON) {
		t.Helper()
		path := "/agent/" + agentID + "/payments"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r := e.do("GET", path, key, nil)
		var p paymentPageJSON
		if r.status == 200 {
			r.decode(t, &p)
		}
		return r, p
	}
	describe := func(ps []client.PaymentRecord) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Amount+" "+p.Asset+" "+p.Status)
		}
		return strings.Join(out, ",")
	}
	all := func(q neturl.Values) (string, int) {
		t.Helper()
		var got []client.PaymentRecord
		for pages := 1; ; pages++ {
			r, p := list(e.key, a.ID, q)
			if r.status != 200 {
				t.Fatalf("list %v = %d %s", q, r.status, r.body)
			}
			got = append(got, p.Payments...)
			if p.NextCursor == "" {
				return describe(got), pages
			}
			if pages > 10 {
				t.Fatal("the cursor never ends")
			}
			q = cloneValues(q)
			q.Set("cursor", p.NextCursor)
		}
	}

	_, first := list(e.key, a.ID, nil)
	if len(first.Payments) != 4 {
		t.Fatalf("payments: %+v", first)
	}
	sent := first.Payments[3] // the 0.01 ETH, oldest
	if sent.Status != client.PaymentBroadcast && sent.Status != client.PaymentConfirmed {
		t.Fatalf("sent payment %+v", sent)
	}
	if sent.Kind != "send_payment" || sent.Chain != "ethereum" || sent.Recipient.Name == "" || sent.TxHash == "" || sent.Source.Type != "conversation" || sent.AgentID != a.ID {
		t.Fatalf("sent payment %+v", sent)
	}
	refused := first.Payments[1]
	if refused.Status != client.PaymentRefused || !strings.Contains(refused.Reason, "policy") || refused.TxHash != "" {
		t.Fatalf("refused payment %+v", refused)
	}
	sentStatus := sent.Status
	tests := []struct {
		name      string
		q         neturl.Values
		want      string
		wantPages int
	}{
		{"everything, newest first", nil, "7 USDC pending,0.3 ETH refused,0.02 ETH " + sentStatus + ",0.01 ETH " + sentStatus, 1},
		{"pending", neturl.Values{"status": {"pending"}}, "7 USDC pending", 1},
		{"refused", neturl.Values{"status": {"refused"}}, "0.3 ETH refused", 1},
		{"sent", neturl.Values{"status": {sentStatus}}, "0.02 ETH " + sentStatus + ",0.01 ETH " + sentStatus, 1},
		{"on ethereum", neturl.Values{"chain": {"ethereum"}}, "0.3 ETH refused,0.02 ETH " + sentStatus + ",0.01 ETH " + sentStatus, 1},
		{"on solana", neturl.Values{"chain": {"solana"}}, "", 1},
		{"since the refused one", neturl.Values{"since": {refused.CreatedAt.Format(time.RFC3339Nano)}}, "7 USDC pending,0.3 ETH refused", 1},
		{"pages of one", neturl.Values{"limit": {"1"}}, "7 USDC pending,0.3 ETH refused,0.02 ETH " + sentStatus + ",0.01 ETH " + sentStatus, 4},
		{"pages of three on ethereum", neturl.Values{"limit": {"3"}, "chain": {"ethereum"}}, "0.3 ETH refused,0.02 ETH " + sentStatus + ",0.01 ETH " + sentStatus, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, pages := all(tt.q); got != tt.want || pages != tt.wantPages {
				t.Fatalf("got %q in %d pages, want %q in %d", got, pages, tt.want, tt.wantPages)
			}
		})
	}

	// One record by id: the same as in the list.
	r := e.do("GET", "/agent/"+a.ID+"/payments/"+pending.ID, e.key, nil)
	var one client.PaymentRecord
	r.decode(t, &one)
	if r.status != 200 || one.ID != pending.ID || one.Status != "pending" || one.Amount != "7" || one.Recipient.Address != pending.Recipient.Address {
		t.Fatalf("GET one = %d %s", r.status, r.body)
	}
	if strings.Contains(string(r.body), "idempotencyKey") || strings.Contains(string(r.body), `"units"`) {
		t.Fatalf("the record shows its key or raw units: %s", r.body)
	}

	// Not found: unknown or malformed ids, another account, no key.
	mallory := e.newKey("mallory")
	for _, c := range []struct {
		key, path string
		status    int
		msg       string
	}{
		{e.key, "/agent/" + a.ID + "/payments/00000000-0000-7000-8000-000000000000", 404, "payment not found"},
		{e.key, "/agent/" + a.ID + "/payments/nope", 404, "payment not found"},
		{mallory, "/agent/" + a.ID + "/payments/" + pending.ID, 404, "payment not found"},
		{mallory, "/agent/" + a.ID + "/payments", 404, "agent not found"},
		{"", "/agent/" + a.ID + "/payments", 401, ""},
	} {
		r := e.do("GET", c.path, c.key, nil)
		if msg, status := r.errorBody(t); status != c.status || (c.msg != "" && msg != c.msg) {
			t.Fatalf("GET %s = %d %q, want %d %q", c.path, status, msg, c.status, c.msg)
		}
	}

	// Bad filters: a 400 naming the parameter.
	for _, c := range []struct {
		q    neturl.Values
		want string
	}{
		{neturl.Values{"status": {"sent"}}, `status "sent" is not one of pending, broadcast, confirmed, failed, refused`},
		{neturl.Values{"chain": {"bitcoin"}}, `chain "bitcoin" is not one of horizen, ethereum, polygon, base, stellar, solana`},
		{neturl.Values{"since": {"last week"}}, `since "last week" is not a time`},
		{neturl.Values{"limit": {"-1"}}, `limit "-1" is not a whole number from 1 to 100`},
		{neturl.Values{"cursor": {"abc"}}, "cursor is not one this API gave out"},
	} {
		r, _ := list(e.key, a.ID, c.q)
		if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, c.want) {
			t.Fatalf("list %v = %d %q, want 400 %q", c.q, status, msg, c.want)
		}
	}
	if got, _ := all(nil); !strings.HasPrefix(got, "7 USDC pending,0.3 ETH refused") || strings.Count(got, ",") != 3 {
		t.Fatalf("after the bad requests: %q", got)
	}
}
