//go:build !nodevnet

package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	neturl "net/url"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// TestListReceived: over real HTTP, the stealth payments an agent received
// on the devnet (two from another agent in chat, one from an outside
// wallet to an invoice's address, each found by the scanner) are listed
// newest first, filtered by chain, status and since, paged by cursor (a
// payment received between two pages neither repeats nor skips one), for
// the caller's account only, through the Go client too; they stay listed
// after the notifications are deleted (the list reads the payment
// records, not the inbox). A bad parameter is a 400 in the spec's error
// body that changes nothing.
func TestListReceived(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	sc := e.newScannerOnce(t)
	scan := func() {
		t.Helper()
		if _, err := sc.ScanOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	send := func(msg string) string {
		t.Helper()
		_, status, detail := e.tool(t, b.ID, msg)
		if status != "success" || !strings.Contains(detail, `"txHash"`) {
			t.Fatalf("%s: %s %s", msg, status, detail)
		}
		return detail
	}

	list := func(key string, q neturl.Values) (response, client.ReceivedPage) {
		t.Helper()
		path := "/agent/" + a.ID + "/payments/received"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r := e.do("GET", path, key, nil)
		var p client.ReceivedPage
		if r.status == 200 {
			r.decode(t, &p)
		}
		return r, p
	}
	if r, p := list(e.key, nil); r.status != 200 || p.Payments == nil || len(p.Payments) != 0 || p.NextCursor != "" {
		t.Fatalf("before any payment = %d %s", r.status, r.body)
	}

	send("send 0.01 ETH to alice")
	scan()
	e.clock.Advance(time.Minute)
	send("send 0.0000001 ETH to alice")
	scan()
	e.clock.Advance(time.Minute)
	inv := e.createInvoice(t, a.ID, "create an invoice for 0.003 ETH for a logo")
	payTx := e.pay(t, e.newPayer(t), inv.PayTo, "0.003")
	scan()
	waitFor(t, "the invoice paid", func() bool {
		var got invoiceJSON
		e.do("GET", "/invoice/"+inv.ID, e.key, nil).decode(t, &got)
		return got.Status == "paid"
	})

	describe := func(ps []client.ReceivedPayment) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Amount+" "+p.Asset)
		}
		return strings.Join(out, ",")
	}
	all := func(q neturl.Values) (string, int) {
		t.Helper()
		var got []client.ReceivedPayment
		for pages := 1; ; pages++ {
			r, p := list(e.key, q)
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

	_, first := list(e.key, nil)
	if got := describe(first.Payments); got != "0.003 ETH,0.0000001 ETH,0.01 ETH" {
		t.Fatalf("received: %s", got)
	}
	invPaid := first.Payments[0]
	if invPaid.Chain != "ethereum" || !strings.EqualFold(invPaid.StealthAddress, inv.PayTo) || invPaid.TxHash != payTx ||
		len(invPaid.TxHashes) != 1 || invPaid.Balance != "0.003" || invPaid.Withdrawn || invPaid.EphemeralPubKey == "" {
		t.Fatalf("the invoice's payment: %+v", invPaid)
	}
	tiny := first.Payments[1]
	if tiny.StealthAddress == "" || tiny.EphemeralPubKey == "" || tiny.TxHash == "" || tiny.ReceivedAt.IsZero() || !tiny.ReceivedAt.Before(invPaid.ReceivedAt) {
		t.Fatalf("the tiny payment: %+v", tiny)
	}
	// The oldest is withdrawn, as the agent records a withdrawal.
	oldest := first.Payments[2]
	if err := state.NewPayments(e.store, a.ID, e.clock.Now).MarkWithdrawn(context.Background(), tools.Withdrawal{
		Chain: chains.Ethereum, StealthAddress: oldest.StealthAddress, To: "0x00000000000000000000000000000000000000b2", TxHash: "0x" + strings.Repeat("ab", 32),
	}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		q         neturl.Values
		want      string
		wantPages int
	}{
		{"everything, newest first", nil, "0.003 ETH,0.0000001 ETH,0.01 ETH", 1},
		{"on ethereum", neturl.Values{"chain": {"ethereum"}}, "0.003 ETH,0.0000001 ETH,0.01 ETH", 1},
		{"on solana", neturl.Values{"chain": {"solana"}}, "", 1},
		{"held", neturl.Values{"status": {"held"}}, "0.003 ETH,0.0000001 ETH", 1},
		{"withdrawn", neturl.Values{"status": {"withdrawn"}}, "0.01 ETH", 1},
		{"since the tiny one", neturl.Values{"since": {tiny.ReceivedAt.Format(time.RFC3339Nano)}}, "0.003 ETH,0.0000001 ETH", 1},
		{"pages of one", neturl.Values{"limit": {"1"}}, "0.003 ETH,0.0000001 ETH,0.01 ETH", 3},
		{"pages of two, held", neturl.Values{"limit": {"2"}, "status": {"held"}}, "0.003 ETH,0.0000001 ETH", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, pages := all(tt.q); got != tt.want || pages != tt.wantPages {
				t.Fatalf("got %q in %d pages, want %q in %d", got, pages, tt.want, tt.wantPages)
			}
		})
	}

	// A payment received between two pages: the next page goes on where
	// the first stopped, and the new one is first in a fresh list.
	_, p1 := list(e.key, neturl.Values{"limit": {"2"}})
	e.clock.Advance(time.Minute)
	send("send 0.02 ETH to alice")
	scan()
	_, p2 := list(e.key, neturl.Values{"limit": {"2"}, "cursor": {p1.NextCursor}})
	if got := describe(p1.Payments) + "|" + describe(p2.Payments); got != "0.003 ETH,0.0000001 ETH|0.01 ETH" || p2.NextCursor != "" {
		t.Fatalf("pages around a new payment: %s", got)
	}

	// The Go client reads the same list; and it outlives the inbox.
	if r := e.do("DELETE", "/agent/"+a.ID+"/notifications", e.key, nil); r.status != 200 {
		t.Fatalf("delete notifications = %d", r.status)
	}
	c, err := client.New(e.url, e.key)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.AllReceived(context.Background(), a.ID, client.ReceivedQuery{ListQuery: client.ListQuery{Limit: 1}, Chain: "ethereum"})
	if err != nil || describe(got) != "0.02 ETH,0.003 ETH,0.0000001 ETH,0.01 ETH" {
		t.Fatalf("the Go client: %s %v", describe(got), err)
	}
	if held, err := c.ListReceived(context.Background(), a.ID, client.ReceivedQuery{ListQuery: client.ListQuery{Status: client.ReceivedWithdrawn}}); err != nil || describe(held.Payments) != "0.01 ETH" {
		t.Fatalf("the Go client, withdrawn: %+v %v", held, err)
	}

	// Bob received nothing; another account, no key.
	if r := e.do("GET", "/agent/"+b.ID+"/payments/received", e.key, nil); r.status != 200 || !strings.Contains(string(r.body), `"payments":[]`) {
		t.Fatalf("bob's received = %d %s", r.status, r.body)
	}
	mallory := e.newKey("mallory")
	for _, c := range []struct {
		key    string
		status int
		msg    string
	}{{mallory, 404, "agent not found"}, {"", 401, ""}} {
		r, _ := list(c.key, nil)
		if msg, status := r.errorBody(t); status != c.status || (c.msg != "" && msg != c.msg) {
			t.Fatalf("another key = %d %q, want %d %q", status, msg, c.status, c.msg)
		}
	}

	// Bad parameters: a 400 naming the parameter, nothing changed.
	for _, c := range []struct {
		q    neturl.Values
		want string
	}{
		{neturl.Values{"status": {"confirmed"}}, `status "confirmed" is not one of held, withdrawn`},
		{neturl.Values{"chain": {"bitcoin"}}, `chain "bitcoin" is not one of horizen, ethereum, polygon, base, stellar, solana`},
		{neturl.Values{"since": {"yesterday"}}, `since "yesterday" is not a time`},
		{neturl.Values{"limit": {"0"}}, `limit "0" is not a whole number from 1 to 100`},
		{neturl.Values{"limit": {"101"}}, `limit "101" is not a whole number from 1 to 100`},
		{neturl.Values{"cursor": {"abc"}}, "cursor is not one this API gave out"},
		{neturl.Values{"cursor": {first.Payments[0].TxHash}}, "cursor is not one this API gave out"},
	} {
		r, _ := list(e.key, c.q)
		if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, c.want) {
			t.Fatalf("list %v = %d %q, want 400 %q", c.q, status, msg, c.want)
		}
	}
	if got, _ := all(nil); got != "0.02 ETH,0.003 ETH,0.0000001 ETH,0.01 ETH" {
		t.Fatalf("after the bad requests: %q", got)
	}
}
