//go:build !nodevnet

package httpapi_test

import (
	"strings"
	"testing"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/runtime/audit"
)

// TestInvoiceLifecycle: an invoice made in chat, read with GET, and
// confirmed with POST /paid only once the chain shows a payment of at least
// its amount, in its asset, to its own address; repeats are idempotent.
func TestInvoiceLifecycle(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	inv := e.createInvoice(t, a.ID, `create an invoice for 0.05 ETH for "design work"`)
	if inv.Status != "pending" || inv.TxHash != nil || inv.Amount != "0.05" || inv.Asset != "ETH" || inv.AgentName != "alice" ||
		inv.PaymentLink != e.url+"/pay/"+inv.ID || inv.Chain != "ethereum" || !evmAddrRE.MatchString(inv.PayTo) {
		t.Fatalf("created %+v", inv)
	}

	// GET: the owner's account only.
	r := e.do("GET", "/invoice/"+inv.ID, e.key, nil)
	var got invoiceJSON
	r.decode(t, &got)
	if r.status != 200 || got.ID != inv.ID || got.Status != "pending" || got.TxHash != nil || got.PayTo != inv.PayTo {
		t.Fatalf("GET = %d %s", r.status, r.body)
	}
	if !strings.Contains(string(r.body), `"txHash":null`) {
		t.Fatalf("txHash must be null until paid: %s", r.body)
	}
	other := e.newKey("mallory")
	for _, c := range []struct{ method, path, key string }{
		{"GET", "/invoice/" + inv.ID, other},
		{"POST", "/invoice/" + inv.ID + "/paid", other},
		{"GET", "/invoice/not-a-uuid", e.key},
		{"GET", "/invoice/00000000-0000-4000-8000-000000000000", e.key},
	} {
		r := e.do(c.method, c.path, c.key, nil)
		if msg, status := r.errorBody(t); status != 404 || msg != "invoice not found" {
			t.Fatalf("%s %s = %d %q", c.method, c.path, status, msg)
		}
	}
	if r := e.do("GET", "/invoice/"+inv.ID, "", nil); r.status != 401 {
		t.Fatalf("GET without a key = %d", r.status)
	}

	// Nothing paid yet.
	r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, nil)
	if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, "no payment to the invoice's address") {
		t.Fatalf("paid with no payment = %d %q", status, msg)
	}
	r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, map[string]string{"txHash": "0x" + strings.Repeat("ab", 32)})
	if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, "not mined") {
		t.Fatalf("unknown tx = %d %q", status, msg)
	}
	if r := e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, `{"txHash": 5}`); r.status != 400 {
		t.Fatalf("bad body = %d", r.status)
	}

	p := e.newPayer(t)
	// A transaction that pays someone else.
	elsewhere := e.pay(t, p, "0x000000000000000000000000000000000000dEaD", "0.05")
	r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, map[string]string{"txHash": elsewhere})
	if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, "pays nothing in ETH to the invoice's address") {
		t.Fatalf("tx to another address = %d %q", status, msg)
	}
	// Too little.
	part := e.pay(t, p, inv.PayTo, "0.02")
	r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, map[string]string{"txHash": part})
	if msg, status := r.errorBody(t); status != 400 || !strings.Contains(msg, "asks for 0.05 ETH") {
		t.Fatalf("underpayment = %d %q", status, msg)
	}
	// The rest: the payments at the address now cover the invoice.
	rest := e.pay(t, p, inv.PayTo, "0.03")
	r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, map[string]string{"txHash": rest})
	r.decode(t, &got)
	if r.status != 200 || got.Status != "paid" || got.TxHash == nil || !strings.EqualFold(*got.TxHash, rest) {
		t.Fatalf("paid = %d %s", r.status, r.body)
	}
	// Idempotent: with or without a body, same invoice, one invoice_paid.
	for _, body := range []any{nil, map[string]string{"txHash": rest}, map[string]string{"txHash": part}} {
		r = e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, body)
		var again invoiceJSON
		r.decode(t, &again)
		if r.status != 200 || again.Status != "paid" || *again.TxHash != *got.TxHash {
			t.Fatalf("repeat = %d %s", r.status, r.body)
		}
	}
	in := e.notes(t, a.ID)
	if countType(in, agent.NoteInvoicePaid) != 1 || countType(in, agent.NotePaymentReceived) != 2 {
		t.Fatalf("notifications %+v", in.Notifications)
	}
	var st agent.Status
	e.do("GET", "/agent/"+a.ID+"/status", e.key, nil).decode(t, &st)
	if st.PendingInvoices != 0 {
		t.Fatalf("status %+v", st)
	}
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "show my invoices"})
	if r.status != 200 || !strings.Contains(out.ToolCalls[0].Detail, `"paid":1`) {
		t.Fatalf("check_invoices = %d %s", r.status, r.body)
	}
}

// TestScannerSettlesInvoiceAndOnDemandScanAgrees: with the background
// scanner running, a plain payment to the invoice's address settles it by
// itself; the chat's on-demand scan afterwards finds nothing new and raises
// no second notification.
func TestScannerSettlesInvoiceAndOnDemandScanAgrees(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	e.startScanner(t)
	inv := e.createInvoice(t, a.ID, "invoice 0.01 ETH memo \"hosting\"")
	p := e.newPayer(t)
	e.pay(t, p, inv.PayTo, "0.01")
	// And a stealth payment from bob, announced on chain.
	r, out := e.chat(t, b.ID, e.key, map[string]string{"message": "send 0.002 ETH to alice"})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
		t.Fatalf("bob pays = %d %s", r.status, r.body)
	}
	waitFor(t, "the scanner settles the invoice and sees bob's payment", func() bool {
		var got invoiceJSON
		e.do("GET", "/invoice/"+inv.ID, e.key, nil).decode(t, &got)
		in := e.notes(t, a.ID)
		return got.Status == "paid" && countType(in, agent.NotePaymentReceived) == 2
	})
	r, out = e.chat(t, a.ID, e.key, map[string]string{"message": "scan for new payments"})
	if r.status != 200 || len(out.ToolCalls) != 1 || !strings.Contains(out.ToolCalls[0].Detail, `"count":0`) {
		t.Fatalf("on-demand scan = %d %s", r.status, r.body)
	}
	in := e.notes(t, a.ID)
	if countType(in, agent.NotePaymentReceived) != 2 || countType(in, agent.NoteInvoicePaid) != 1 {
		t.Fatalf("notifications %+v", in.Notifications)
	}
	for _, n := range in.Notifications {
		if n.Type == agent.NotePaymentReceived && (strings.Contains(n.Body, "bob") || strings.Contains(n.Body, p.addr.Hex())) {
			t.Fatalf("payment_received names the sender: %q", n.Body)
		}
	}
}

// TestPublicClaimSettlesOnce: POST /pay/:id/paid, without an API key,
// settles an invoice from the transaction that paid it, verified on chain;
// a hash that pays something else, or none, changes nothing; repeating
// the paying hash answers the paid invoice, another hash is 409; one
// invoice_paid in all.
func TestPublicClaimSettlesOnce(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	inv := e.createInvoice(t, a.ID, `create an invoice for 0.05 ETH for "design work"`)
	path := "/pay/" + inv.ID + "/paid"
	p := e.newPayer(t)
	elsewhere := e.pay(t, p, "0x000000000000000000000000000000000000dEaD", "0.05")
	for _, c := range []struct {
		name, path string
		body       any
		status     int
		msg        string
	}{
		{"no body", path, nil, 400, "txHash is required"},
		{"empty hash", path, map[string]string{"txHash": " "}, 400, "txHash is required"},
		{"not JSON", path, `{"txHash": 5}`, 400, "not valid JSON"},
		{"not a hash", path, map[string]string{"txHash": "a/b"}, 400, "not a transaction hash"},
		{"unknown tx", path, map[string]string{"txHash": "0x" + strings.Repeat("ab", 32)}, 400, "not mined"},
		{"pays another address", path, map[string]string{"txHash": elsewhere}, 400, "pays nothing in ETH to the invoice's address"},
		{"unknown invoice", "/pay/00000000-0000-4000-8000-000000000000/paid", map[string]string{"txHash": elsewhere}, 404, "invoice not found"},
		{"not an id", "/pay/not-a-uuid/paid", map[string]string{"txHash": elsewhere}, 404, "invoice not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			msg, status := e.do("POST", c.path, "", c.body).errorBody(t)
			if status != c.status || !strings.Contains(msg, c.msg) {
				t.Fatalf("= %d %q, want %d %q", status, msg, c.status, c.msg)
			}
		})
	}
	var view agent.PayView
	e.do("GET", "/pay/"+inv.ID+"/status", "", nil).decode(t, &view)
	if view.Status != "pending" {
		t.Fatalf("a refused claim changed the invoice: %+v", view)
	}

	paid := e.pay(t, p, inv.PayTo, "0.05")
	for i := 0; i < 2; i++ { // the paying hash again: the same paid invoice
		r := e.do("POST", path, "", map[string]string{"txHash": paid})
		var got agent.PayView
		r.decode(t, &got)
		if r.status != 200 || got.Status != "paid" || got.ID != inv.ID || got.TxLink == "" {
			t.Fatalf("claim %d = %d %s", i, r.status, r.body)
		}
	}
	if msg, status := e.do("POST", path, "", map[string]string{"txHash": elsewhere}).errorBody(t); status != 409 || !strings.Contains(msg, "paid by another transaction") {
		t.Fatalf("another hash on a paid invoice = %d %q", status, msg)
	}
	in := e.notes(t, a.ID)
	if countType(in, agent.NoteInvoicePaid) != 1 || countType(in, agent.NotePaymentReceived) != 1 {
		t.Fatalf("notifications %+v", in.Notifications)
	}
	// The audit trail: one record of the claim that settled it (none of
	// the refused ones or the repeat) and one of the payment received.
	if n := len(e.moneyRecords(t, audit.ActionInvoiceClaim, a.ID, inv.ID, paid)); n != 1 {
		t.Fatalf("%d invoice.claim audit records, want 1", n)
	}
	if n := len(e.moneyRecords(t, audit.ActionPaymentReceived, a.ID, paid, inv.ID)); n != 1 {
		t.Fatalf("%d payment.received audit records, want 1", n)
	}
}
