//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/faultproxy"
	"github.com/veilhq/veil/persistence"
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

// invoicePaid is pay_invoice's detail as these tests read it.
type invoicePaid struct {
	Invoice, TxHash, Amount, Asset, PayTo, Payee string
	// pending: the call answered the payment pending, and this was read
	// from its record once it confirmed.
	pending bool
}

// payInvoice sends msg to agentID's chat, whose one tool call must pay an
// invoice, and answers the payment. Under load the chat can answer before
// the node did: the call then reports the payment pending (its record's
// id; "on its way"), and payInvoice waits for that record to settle
// (settledPayment) and reads the payment from it, instead of failing.
func (e *env) payInvoice(t *testing.T, agentID, msg string) invoicePaid {
	t.Helper()
	name, status, detail := e.tool(t, agentID, msg)
	var d struct {
		invoicePaid
		Status, PaymentID string
	}
	if err := json.Unmarshal([]byte(detail), &d); name != "pay_invoice" || status != "success" || err != nil {
		t.Fatalf("%q: %s %s %s (%v)", msg, name, status, detail, err)
	}
	if d.Status != tools.StatusPending {
		return d.invoicePaid
	}
	if d.PaymentID == "" {
		t.Fatalf("%q: pending without its payment's id: %s", msg, detail)
	}
	rec := e.settledPayment(t, agentID, d.PaymentID)
	// The record names the payee as pay_invoice does: "<payee> (invoice <id>)".
	payee, id, ok := strings.Cut(strings.TrimSuffix(rec.Recipient.Name, ")"), " (invoice ")
	if !ok || rec.Kind != string(tools.KindPayInvoice) {
		t.Fatalf("%q: payment record %+v", msg, rec)
	}
	return invoicePaid{Invoice: id, TxHash: rec.TxHash, Amount: rec.Amount, Asset: rec.Asset, PayTo: rec.Recipient.Address, Payee: payee, pending: true}
}

// settledPayment polls agentID's payment record id until it is confirmed,
// bounded by the test's context and deadline; failed or refused, or still
// open when the time is up, fails the test.
func (e *env) settledPayment(t *testing.T, agentID, id string) client.PaymentRecord {
	t.Helper()
	ctx := t.Context()
	if end, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end.Add(-10*time.Second))
		defer cancel()
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var rec client.PaymentRecord
		r := e.do("GET", "/agent/"+agentID+"/payments/"+id, e.key, nil)
		if r.status != 200 {
			t.Fatalf("payment %s = %d %s", id, r.status, r.body)
		}
		r.decode(t, &rec)
		switch rec.Status {
		case string(tools.PaymentConfirmed):
			return rec
		case string(tools.PaymentFailed), string(tools.PaymentRefused):
			t.Fatalf("payment %s ended %s: %s", id, rec.Status, rec.Reason)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("payment %s still %s when the test's time ran out (%v)", id, rec.Status, ctx.Err())
		case <-tick.C:
		}
	}
}

// TestPayInvoicePendingWaitsForSettlement: payInvoice, which the
// end-to-end test pays through, copes with a pay_invoice answered pending
// (the node's answer lost, as under load): it waits for the payment's
// record to confirm and reads the payment from it; the invoice is paid
// once, and its payer told once.
func TestPayInvoicePendingWaitsForSettlement(t *testing.T) {
	e := newEnv(t, envOptions{evm: true, evmFaults: true})
	payer := e.create(t, newEVMOwner(t), "pending-invoice-payer", "ethereum")
	payee := e.create(t, newEVMOwner(t), "pending-invoice-payee", "ethereum")
	r, out := e.chat(t, payee.ID, e.key, map[string]string{"message": "create an invoice for 0.002 ETH for the pending test"})
	var inv invoiceJSON
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" || json.Unmarshal([]byte(out.ToolCalls[0].Detail), &inv) != nil || inv.ID == "" {
		t.Fatalf("create invoice = %d %s", r.status, r.body)
	}

	_, done := e.proxy.Arm(faultproxy.AnswerLost, faultproxy.BodyContains("eth_sendRawTransaction"))
	paid := e.payInvoice(t, payer.ID, "pay invoice "+inv.ID)
	<-done
	if !paid.pending {
		t.Fatalf("the lost answer did not leave the payment pending: %+v", paid)
	}
	if paid.Invoice != inv.ID || paid.Payee != "pending-invoice-payee.veil" || paid.Amount != "0.002" || paid.Asset != "ETH" ||
		!strings.EqualFold(paid.PayTo, inv.PayTo) || paid.TxHash == "" {
		t.Fatalf("pending invoice payment read as %+v", paid)
	}
	// One transaction to the invoice's address in the connector's ledger.
	recs, err := e.store.List(context.Background(), evm.TableIntents, persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	signed := 0
	for _, r := range recs {
		var it struct{ Op, To string }
		if json.Unmarshal(r.Value, &it) == nil && it.Op == "withdraw" && strings.EqualFold(it.To, inv.PayTo) {
			signed++
		}
	}
	if signed != 1 {
		t.Fatalf("%d transactions to the invoice's address, want 1", signed)
	}
	told := 0
	for _, x := range e.inbox(t, payer.ID).Notifications {
		if x.Type == agent.NotePaymentSent && strings.Contains(x.Body, inv.ID) {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("the payer got %d payment_sent for invoice %s, want 1", told, inv.ID)
	}
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
	// The payer's server relays settlements, as veild does: a payment the
	// chat could only answer pending (under load) is waited for until it
	// confirms (payInvoice), and its payer told then.
	e := newMoneyEnv(t, withSettlements)
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
	paid := e.payInvoice(t, a.ID, "pay invoice "+inv.ID)
	if paid.Invoice != inv.ID || paid.Amount != "0.004" || paid.Asset != "ETH" || !strings.EqualFold(paid.PayTo, inv.PayTo) || paid.Payee != "payee.veil" {
		t.Fatalf("pay invoice by id: %+v", paid)
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
	if p := e.payInvoice(t, a.ID, "please pay this invoice: "+inv2.PaymentLink); p.Invoice != inv2.ID || p.TxHash == "" {
		t.Fatalf("pay invoice by link: %+v", p)
	}
	e.waitPaid(t, inv2.ID)

	// By link, on another Veil server: read as JSON, checked, paid.
	inv3 := far.createInvoice(t, c.ID, "create an invoice for 0.002 ETH for the translation")
	if !strings.HasPrefix(inv3.PaymentLink, far.url+"/pay/") {
		t.Fatalf("foreign payment link %q", inv3.PaymentLink)
	}
	txOf := func(msg string) string {
		t.Helper()
		d := e.payInvoice(t, a.ID, msg)
		if d.TxHash == "" || d.Payee != "faraway.veil" || d.Invoice != inv3.ID {
			t.Fatalf("%q: %+v", msg, d)
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
	_, status, detail := e.tool(t, a.ID, "settle "+big.PaymentLink)
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
