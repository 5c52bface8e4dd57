package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// TestListQueryOnTheWire: ListInvoices sends the filter as the query the
// API documents and reads the page.
func TestListQueryOnTheWire(t *testing.T) {
	rc := &recorder{body: `{"invoices":[{"id":"i-1","agentName":"alice","amount":"1","asset":"ETH","memo":"m","status":"pending","txHash":null,"paymentLink":"http://h/pay/i-1","createdAt":"2026-01-15T12:00:00Z","expiresAt":"2026-01-16T12:00:00Z"}],"nextCursor":"abc"}`}
	c := fakeClient(t, rc)
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	tests := []struct {
		q    client.ListQuery
		want string
	}{
		{client.ListQuery{}, ""},
		{client.ListQuery{Status: client.InvoiceExpired, Since: since, Limit: 2, Cursor: "c/1"}, "cursor=c%2F1&limit=2&since=2026-01-02T02%3A04%3A05Z&status=expired"},
	}
	for _, tt := range tests {
		p, err := c.ListInvoices(ctx(t), agentID, tt.q)
		if err != nil || rc.req.Method != "GET" || rc.req.URL.Path != "/agent/"+agentID+"/invoices" || rc.req.URL.RawQuery != tt.want {
			t.Fatalf("%+v: %v %s", tt.q, err, rc.req.URL)
		}
		if len(p.Invoices) != 1 || p.NextCursor != "abc" || p.Invoices[0].ExpiresAt == nil || p.Invoices[0].TxHash != nil {
			t.Fatalf("page %+v", p)
		}
	}
}

// TestListInvoicesOnRealServer: the Go client pages a real server's list
// to the end, filters it, and gets the API's errors as typed ones.
func TestListInvoicesOnRealServer(t *testing.T) {
	s := newServer(t)
	c := s.client(s.key)
	ctx := ctx(t)
	a, err := c.CreateAgentSigned(ctx, "lister", client.ChainBase, newEVM(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	gen := func(context.Context, chains.ID) (string, []byte, error) {
		n++
		return fmt.Sprintf("0x%040x", n), []byte{1}, nil
	}
	invs := state.NewInvoices(s.store, a.ID, nil, "lister", "http://veil.test", gen)
	for i := range 5 {
		if _, err := invs.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: fmt.Sprint("job ", i)}, Chain: chains.Base}, ""); err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.ListInvoices(ctx, a.ID, client.ListQuery{Limit: 2})
	if err != nil || len(p.Invoices) != 2 || p.NextCursor == "" || p.Invoices[0].Memo != "job 4" {
		t.Fatalf("first page %+v %v", p, err)
	}
	all, err := c.AllInvoices(ctx, a.ID, client.ListQuery{Limit: 2})
	if err != nil || len(all) != 5 || all[4].Memo != "job 0" {
		t.Fatalf("all %d %v", len(all), err)
	}
	if paid, err := c.AllInvoices(ctx, a.ID, client.ListQuery{Status: client.InvoicePaid}); err != nil || len(paid) != 0 {
		t.Fatalf("paid %+v %v", paid, err)
	}
	if _, err := c.ListInvoices(ctx, a.ID, client.ListQuery{Limit: client.MaxPageLimit + 1}); !client.IsBadRequest(err) {
		t.Fatalf("limit over the max: %v", err)
	}
	if _, err := c.ListInvoices(ctx, a.ID, client.ListQuery{Cursor: "nope"}); !client.IsBadRequest(err) {
		t.Fatalf("bad cursor: %v", err)
	}
	if _, err := s.client(s.newKey("other")).ListInvoices(ctx, a.ID, client.ListQuery{}); !client.IsNotFound(err) {
		t.Fatalf("another account: %v", err)
	}
}

// TestPaymentQueryOnTheWire: ListPayments sends status, chain and the
// paging as the API documents; GetPayment reads one record.
func TestPaymentQueryOnTheWire(t *testing.T) {
	rc := &recorder{body: `{"payments":[{"id":"p-1","agentId":"a","kind":"send_payment","source":{"type":"conversation","id":"c"},"chain":"base","asset":"USDC","amount":"7","recipient":{"name":"bob.veil","address":"st:..."},"status":"pending","createdAt":"2026-01-15T12:00:00Z","updatedAt":"2026-01-15T12:00:00Z"}],"nextCursor":"p-1"}`}
	c := fakeClient(t, rc)
	p, err := c.ListPayments(ctx(t), agentID, client.PaymentQuery{ListQuery: client.ListQuery{Status: client.PaymentPending, Limit: 3}, Chain: "base"})
	if err != nil || rc.req.URL.Path != "/agent/"+agentID+"/payments" || rc.req.URL.RawQuery != "chain=base&limit=3&status=pending" {
		t.Fatalf("%v %s", err, rc.req.URL)
	}
	if len(p.Payments) != 1 || p.NextCursor != "p-1" || p.Payments[0].Recipient.Name != "bob.veil" || p.Payments[0].Source.Type != "conversation" {
		t.Fatalf("page %+v", p)
	}
	rc.body = `{"id":"p-1","status":"confirmed","confirmations":3}`
	one, err := c.GetPayment(ctx(t), agentID, "p-1")
	if err != nil || rc.req.URL.Path != "/agent/"+agentID+"/payments/p-1" || one.Status != client.PaymentConfirmed || one.Confirmations != 3 {
		t.Fatalf("get %+v %v %s", one, err, rc.req.URL)
	}
}
