//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
)

// invoiceStatus is the invoice's status as its own server's API says.
func (e *moneyEnv) invoiceStatus(t *testing.T, id string) string {
	t.Helper()
	var inv invoiceJSON
	r := e.do("GET", "/invoice/"+id, e.key, nil)
	r.decode(t, &inv)
	if r.status != 200 {
		t.Fatalf("GET invoice %s = %d %s", id, r.status, r.body)
	}
	return inv.Status
}

// waitPaid waits until the payee's server settled the invoice by itself
// (its scanner saw the transfer).
func (e *moneyEnv) waitPaid(t *testing.T, id string) {
	t.Helper()
	waitFor(t, "invoice "+id+" paid", func() bool { return e.invoiceStatus(t, id) == "paid" })
}

// weiAt is the wei an address holds on the devnet.
func (e *moneyEnv) weiAt(t *testing.T, addr string) string {
	t.Helper()
	b, err := e.eth.BalanceAt(context.Background(), common.HexToAddress(addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// noteCount counts an agent's notifications of typ whose body names what.
func (e *moneyEnv) noteCount(t *testing.T, agentID, typ, what string) int {
	t.Helper()
	n := 0
	for _, b := range e.noteBodies(t, agentID, typ) {
		if strings.Contains(b, what) {
			n++
		}
	}
	return n
}

// TestPayInvoiceEndToEnd: on the EVM devnet, with real HTTP, an agent pays
// another agent's invoice by id and by payment link, and an invoice of
// another Veil server (a second in-process server on the same devnet) by
// its link: exactly the invoice's amount reaches its address, the payee's
// invoice settles by itself with one invoice_paid, the payer gets one
// payment_sent, and paying again pays nothing. A foreign server that lies
// moves nothing; an invoice over the per-payment cap is refused; with
// approvals configured it is held, and paid once when the owner approves.
func TestPayInvoiceEndToEnd(t *testing.T) {
	e := newMoneyEnv(t)
	far := newMoneyServer(t, e.cfg, 12) // another Veil server, same devnet
	e.startScanner(t)
	// far's scanner runs its passes when the test says (see "before the
	// payee's server saw it"); the first pass sets its cursor at the head.
	farScan := far.newScannerOnce(t)
	if _, err := farScan.ScanOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := newEVMOwner(t)
	a := e.create(t, o, "payer", "ethereum")
	b := e.create(t, newEVMOwner(t), "payee", "ethereum")
	c := far.create(t, newEVMOwner(t), "faraway", "ethereum")

	// By id, on this server.
	inv := e.createInvoice(t, b.ID, "create an invoice for 0.004 ETH for the design work")
	if inv.PayTo == "" || inv.Status != "pending" {
		t.Fatalf("invoice %+v", inv)
	}
	name, status, detail := e.tool(t, a.ID, "pay invoice "+inv.ID)
	var paid struct {
		Invoice, TxHash, Amount, Asset, PayTo, Payee string
	}
	if err := json.Unmarshal([]byte(detail), &paid); name != "pay_invoice" || status != "success" || err != nil ||
		paid.Invoice != inv.ID || paid.Amount != "0.004" || paid.Asset != "ETH" || !strings.EqualFold(paid.PayTo, inv.PayTo) || paid.Payee != "payee.veil" {
		t.Fatalf("pay invoice by id: %s %s %s", name, status, detail)
	}
	e.waitMined(t, paid.TxHash)
	e.waitPaid(t, inv.ID)
	if got := e.weiAt(t, inv.PayTo); got != "4000000000000000" {
		t.Fatalf("the invoice's address holds %s wei, want exactly 0.004 ETH", got)
	}
	// Paying it again (by id, then by link) pays nothing.
	e.steps(t, a.ID, []step{
		{"pay invoice " + inv.ID, "pay_invoice", "error", "already paid"},
		{"settle " + inv.PaymentLink, "pay_invoice", "error", "already paid"},
	})
	if got := e.weiAt(t, inv.PayTo); got != "4000000000000000" {
		t.Fatalf("after paying again the address holds %s wei", got)
	}

	// By link, on this server.
	inv2 := e.createInvoice(t, b.ID, "create an invoice for 0.003 ETH for hosting")
	if !strings.HasPrefix(inv2.PaymentLink, e.url+"/pay/") {
		t.Fatalf("payment link %q", inv2.PaymentLink)
	}
	e.steps(t, a.ID, []step{{"please pay this invoice: " + inv2.PaymentLink, "pay_invoice", "success", inv2.ID}})
	e.waitPaid(t, inv2.ID)

	// By link, on another Veil server: read as JSON, checked, paid.
	inv3 := far.createInvoice(t, c.ID, "create an invoice for 0.002 ETH for the translation")
	if !strings.HasPrefix(inv3.PaymentLink, far.url+"/pay/") {
		t.Fatalf("foreign payment link %q", inv3.PaymentLink)
	}
	txOf := func(msg string) string {
		t.Helper()
		name, status, detail := e.tool(t, a.ID, msg)
		var d struct{ TxHash, Payee string }
		if err := json.Unmarshal([]byte(detail), &d); name != "pay_invoice" || status != "success" || err != nil || d.TxHash == "" || d.Payee != "faraway.veil" {
			t.Fatalf("%q: %s %s %s", msg, name, status, detail)
		}
		return d.TxHash
	}
	first := txOf("pay " + inv3.PaymentLink)
	e.waitMined(t, first)
	// Paid again before the payee's server saw it (its scanner is not
	// running yet): the invoice is still pending there, and the chain's
	// ledger answers the first payment under the invoice's key.
	if again := txOf("please pay this invoice: " + inv3.PaymentLink); again != first {
		t.Fatalf("paying a pending invoice again sent %s after %s", again, first)
	}
	if got := e.weiAt(t, inv3.PayTo); got != "2000000000000000" {
		t.Fatalf("after paying twice the foreign invoice's address holds %s wei", got)
	}
	waitFor(t, "the foreign invoice paid", func() bool {
		if _, err := farScan.ScanOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		return far.invoiceStatus(t, inv3.ID) == "paid"
	})
	e.steps(t, a.ID, []step{{"settle " + inv3.PaymentLink, "pay_invoice", "error", "already paid"}})
	if got := e.weiAt(t, inv3.PayTo); got != "2000000000000000" {
		t.Fatalf("the foreign invoice's address holds %s wei", got)
	}

	// Each payee's invoice settled by itself, once; the payer was told once per invoice.
	for _, tc := range []struct {
		env     *moneyEnv
		agentID string
		inv     invoiceJSON
	}{{e, b.ID, inv}, {e, b.ID, inv2}, {far, c.ID, inv3}} {
		if n := tc.env.noteCount(t, tc.agentID, agent.NoteInvoicePaid, tc.inv.ID); n != 1 {
			t.Errorf("invoice %s: %d invoice_paid, want 1", tc.inv.ID, n)
		}
		if n := e.noteCount(t, a.ID, agent.NotePaymentSent, tc.inv.ID); n != 1 {
			t.Errorf("invoice %s: the payer got %d payment_sent, want 1", tc.inv.ID, n)
		}
	}

	// A foreign server that lies moves nothing: the answer is checked
	// against the link, this node's chain and the user's words.
	target := far.createInvoice(t, c.ID, "create an invoice for 0.005 ETH for the audit")
	truth := map[string]any{}
	if r := far.doHeaders("GET", "/pay/"+target.ID, "", nil, "Accept", "application/json"); r.status != 200 {
		t.Fatalf("JSON form of the pay link = %d %s", r.status, r.body)
	} else if err := json.Unmarshal(r.body, &truth); err != nil || truth["payTo"] != target.PayTo || truth["amount"] != "0.005" {
		t.Fatalf("JSON form of the pay link: %s (%v)", r.body, err)
	}
	liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/pay/")
		answer := map[string]any{}
		for k, v := range truth {
			answer[k] = v
		}
		answer["id"] = id
		switch id {
		case "bigger00-0000-4000-8000-000000000000":
			answer["amount"] = "0.05"
		case "network0-0000-4000-8000-000000000000":
			answer["chainId"] = 1
		case "garbage0-0000-4000-8000-000000000000":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id": "garbage0-0000-4000-8000-000000000000", "amount": `))
			return
		case "badaddr0-0000-4000-8000-000000000000":
			answer["payTo"] = "0x1234"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	defer liar.Close()
	e.steps(t, a.ID, []step{
		{"pay the 0.005 ETH invoice " + liar.URL + "/pay/bigger00-0000-4000-8000-000000000000", "pay_invoice", "error", "asks for 0.05 ETH"},
		{"pay " + liar.URL + "/pay/network0-0000-4000-8000-000000000000", "pay_invoice", "error", "another network"},
		{"pay " + liar.URL + "/pay/garbage0-0000-4000-8000-000000000000", "pay_invoice", "error", "malformed"},
		{"pay " + liar.URL + "/pay/badaddr0-0000-4000-8000-000000000000", "pay_invoice", "error", "address"},
		{"pay https://127.0.0.1:1/pay/nothere0-0000-4000-8000-000000000000", "pay_invoice", "error", "did not answer"},
		{"pay invoice 0badc0de-0000-4000-8000-000000000000", "pay_invoice", "error", "no invoice"},
	})
	if r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "don't pay " + target.PaymentLink}); r.status != 200 || len(out.ToolCalls) != 0 {
		t.Fatalf("a negation called tools: %s", r.body)
	}
	if got := e.weiAt(t, target.PayTo); got != "0" || far.invoiceStatus(t, target.ID) != "pending" {
		t.Fatalf("after the lies the invoice's address holds %s wei", got)
	}
	if n := countType(e.notes(t, a.ID), agent.NotePaymentSent); n != 3 {
		t.Fatalf("the payer got %d payment_sent, want 3", n)
	}

	// The owner's policy: over the per-payment cap, refused; its own
	// invoice, refused.
	own := e.createInvoice(t, a.ID, "create an invoice for 0.001 ETH for lunch")
	big := e.createInvoice(t, b.ID, "create an invoice for 0.02 ETH for the logo")
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"}})
	e.steps(t, a.ID, []step{
		{"pay invoice " + big.ID, "pay_invoice", "error", "per payment"},
		{"pay invoice " + own.ID, "pay_invoice", "error", "own invoice"},
	})
	if got := e.weiAt(t, big.PayTo); got != "0" || e.invoiceStatus(t, big.ID) != "pending" {
		t.Fatalf("a refused invoice payment moved %s wei", got)
	}

	// With approvals: held, then paid once when the owner approves.
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.05"},
		Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.01"}}})
	_, status, detail = e.tool(t, a.ID, "settle "+big.PaymentLink)
	var held heldDetail
	if err := json.Unmarshal([]byte(detail), &held); status != "success" || err != nil || held.Status != "pending_approval" || held.ApprovalID == "" {
		t.Fatalf("over the approval threshold: %s %s", status, detail)
	}
	if got := e.weiAt(t, big.PayTo); got != "0" {
		t.Fatalf("a held invoice payment moved %s wei", got)
	}
	var view approvalView
	e.do("GET", "/agent/"+a.ID+"/approvals/"+held.ApprovalID, e.key, nil).decode(t, &view)
	if view.Kind != policy.KindInvoice || view.Amount != "0.02" || !strings.Contains(view.Recipient, big.ID) {
		t.Fatalf("approval %+v", view)
	}
	// Asking again while it is held holds the same approval.
	if _, _, d := e.tool(t, a.ID, "pay invoice "+big.ID); !strings.Contains(d, held.ApprovalID) {
		t.Fatalf("paying a held invoice again: %s", d)
	}
	r := e.do("POST", "/agent/"+a.ID+"/approvals/"+held.ApprovalID, e.key, o.decision(a.ID, held.ApprovalID, false, e.clock.Now()))
	var dec approvalView
	r.decode(t, &dec)
	if r.status != 200 || dec.Status != "approved" || dec.TxHash == "" {
		t.Fatalf("approve = %d %s", r.status, r.body)
	}
	e.waitMined(t, dec.TxHash)
	e.waitPaid(t, big.ID)
	e.steps(t, a.ID, []step{{"pay invoice " + big.ID, "pay_invoice", "error", "already paid"}})
	if got := e.weiAt(t, big.PayTo); got != "20000000000000000" {
		t.Fatalf("the approved invoice's address holds %s wei, want exactly 0.02 ETH", got)
	}
	if n := e.noteCount(t, b.ID, agent.NoteInvoicePaid, big.ID); n != 1 {
		t.Fatalf("%d invoice_paid for the approved invoice", n)
	}
}
