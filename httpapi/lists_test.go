//go:build !nodevnet

package httpapi_test

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// invoicePageJSON is GET /agent/:id/invoices's answer.
type invoicePageJSON struct {
	Invoices   []invoiceJSON `json:"invoices"`
	NextCursor string        `json:"nextCursor"`
}

// TestListInvoices: over real HTTP, GET /agent/:id/invoices lists the
// agent's invoices newest first, filters by status (pending, paid,
// expired) and since, pages with limit and the opaque cursor without
// repeats or gaps, is the caller's account's only (another account's
// agent is a 404), and answers a bad filter with a 400 in the error
// format that changes nothing.
func TestListInvoices(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")

	// Four through chat (the real path), one of them paid on the devnet;
	// one that expires, written to the store with an expiry; one of bob's.
	var made []invoiceJSON
	for i := range 4 {
		made = append(made, e.createInvoice(t, a.ID, fmt.Sprintf(`create an invoice for 0.0%d ETH for "job %d"`, i+1, i)))
	}
	paid := made[1]
	tx := e.pay(t, e.newPayer(t), paid.PayTo, "0.02")
	if r := e.do("POST", "/invoice/"+paid.ID+"/paid", e.key, map[string]string{"txHash": tx}); r.status != 200 {
		t.Fatalf("paid: %d %s", r.status, r.body)
	}
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("0x%040x", time.Now().UnixNano()), []byte{1}, nil
	}
	expires := e.clock.Now().Add(time.Hour)
	expiring, err := state.NewInvoices(e.store, a.ID, e.clock.Now, "alice", e.url, gen).Create(context.Background(),
		tools.Invoice{Invoice: client.Invoice{Amount: "0.5", Asset: "ETH", Memo: "expiring"}, Chain: chains.Ethereum, ExpiresAt: &expires}, "")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Hour)
	bobs := e.createInvoice(t, b.ID, `create an invoice for 1 ETH for "bob's"`)

	list := func(key, agentID string, q neturl.Values) (response, invoicePageJSON) {
		t.Helper()
		path := "/agent/" + agentID + "/invoices"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		r := e.do("GET", path, key, nil)
		var p invoicePageJSON
		if r.status == 200 {
			r.decode(t, &p)
		}
		return r, p
	}
	memos := func(invs []invoiceJSON) string {
		var out []string
		for _, i := range invs {
			if i.ID == bobs.ID {
				t.Fatalf("bob's invoice in alice's list")
			}
			out = append(out, i.Memo)
		}
		return strings.Join(out, ",")
	}
	// all follows the cursor to the end and returns every page's memos.
	all := func(q neturl.Values) (string, int) {
		t.Helper()
		var got []invoiceJSON
		pages := 0
		for {
			r, p := list(e.key, a.ID, q)
			if r.status != 200 {
				t.Fatalf("list %v = %d %s", q, r.status, r.body)
			}
			pages++
			got = append(got, p.Invoices...)
			if p.NextCursor == "" {
				return memos(got), pages
			}
			if pages > 10 {
				t.Fatal("the cursor never ends")
			}
			q = cloneValues(q)
			q.Set("cursor", p.NextCursor)
		}
	}

	sinceThird := made[2].CreatedAt
	tests := []struct {
		name      string
		q         neturl.Values
		want      string
		wantPages int
	}{
		{"everything, newest first", nil, "expiring,job 3,job 2,job 1,job 0", 1},
		{"pending: payable only", neturl.Values{"status": {"pending"}}, "job 3,job 2,job 0", 1},
		{"paid", neturl.Values{"status": {"paid"}}, "job 1", 1},
		{"expired", neturl.Values{"status": {"expired"}}, "expiring", 1},
		{"since, inclusive", neturl.Values{"since": {sinceThird}}, "expiring,job 3,job 2", 1},
		{"since a date before all", neturl.Values{"since": {"2000-01-01"}}, "expiring,job 3,job 2,job 1,job 0", 1},
		{"pages of two", neturl.Values{"limit": {"2"}}, "expiring,job 3,job 2,job 1,job 0", 3},
		{"pages of one, pending", neturl.Values{"limit": {"1"}, "status": {"pending"}}, "job 3,job 2,job 0", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, pages := all(tt.q)
			if got != tt.want || pages != tt.wantPages {
				t.Fatalf("got %q in %d pages, want %q in %d", got, pages, tt.want, tt.wantPages)
			}
		})
	}

	// The answer's shape: the spec's Invoice plus chain, payTo, expiresAt;
	// no nextCursor on the last page; an empty list is [].
	r, p := list(e.key, a.ID, neturl.Values{"status": {"expired"}})
	if len(p.Invoices) != 1 || p.Invoices[0].ID != expiring.ID || !strings.Contains(string(r.body), `"expiresAt":"`) || strings.Contains(string(r.body), "nextCursor") {
		t.Fatalf("expired page: %s", r.body)
	}
	r, _ = list(e.key, a.ID, neturl.Values{"since": {e.clock.Now().Add(24 * time.Hour).Format(time.RFC3339)}})
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"invoices":[]}` {
		t.Fatalf("empty page: %d %s", r.status, r.body)
	}

	// Another account sees no agent; no key is a 401.
	mallory := e.newKey("mallory")
	for _, c := range []struct {
		key, agent string
		status     int
		msg        string
	}{
		{mallory, a.ID, 404, "agent not found"},
		{e.key, "not-a-uuid", 404, "agent not found"},
		{e.key, "00000000-0000-4000-8000-000000000000", 404, "agent not found"},
		{"", a.ID, 401, ""},
	} {
		r, _ := list(c.key, c.agent, nil)
		if msg, status := r.errorBody(t); status != c.status || (c.msg != "" && msg != c.msg) {
			t.Fatalf("list as %q of %s = %d %q", c.key, c.agent, status, msg)
		}
	}

	// Bad filters: 400 naming the parameter.
	for _, c := range []struct {
		q    neturl.Values
		want string
	}{
		{neturl.Values{"status": {"open"}}, `status "open" is not one of pending, paid, expired`},
		{neturl.Values{"since": {"yesterday"}}, `since "yesterday" is not a time`},
		{neturl.Values{"limit": {"0"}}, `limit "0" is not a whole number from 1 to 100`},
		{neturl.Values{"limit": {"101"}}, `limit "101" is not a whole number from 1 to 100`},
		{neturl.Values{"limit": {"ten"}}, `limit "ten"`},
		{neturl.Values{"cursor": {"bm9wZQ"}}, "cursor is not one this API gave out"},
		{neturl.Values{"cursor": {"!!"}}, "cursor is not one this API gave out"},
	} {
		r, _ := list(e.key, a.ID, c.q)
		if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, c.want) {
			t.Fatalf("list %v = %d %q, want 400 %q", c.q, status, msg, c.want)
		}
	}
	// Nothing changed: the same five invoices, the same statuses.
	if got, _ := all(nil); got != "expiring,job 3,job 2,job 1,job 0" {
		t.Fatalf("after the bad requests: %q", got)
	}
}

func cloneValues(q neturl.Values) neturl.Values {
	out := neturl.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
