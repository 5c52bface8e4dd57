//go:build !nodevnet

package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/state"
)

// The policy preview says that invoices meet the allowlist by their
// issuer, and for an invoice of this server names the issuer it checked
// and whether a payment would pass (issue 34 item 3); an invoice the
// server does not have is a 404, a malformed one a 400; nothing changes.
func TestPolicyPreviewChecksInvoicesByIssuer(t *testing.T) {
	e := newMoneyEnv(t)
	alice := e.create(t, newEVMOwner(t), "alice", "ethereum")
	bob := e.create(t, newEVMOwner(t), "bob", "ethereum")
	inv := e.createInvoice(t, bob.ID, "create an invoice for 0.02 ETH for hosting")

	type check struct {
		InvoiceID string `json:"invoiceId"`
		Issuer    string `json:"issuer"`
		PayTo     string `json:"payTo"`
		CheckedBy string `json:"checkedBy"`
		Allowed   bool   `json:"allowed"`
		Reason    string `json:"reason"`
	}
	type preview struct {
		Hash         string `json:"hash"`
		Message      string `json:"message"`
		InvoiceRule  string `json:"invoiceRule"`
		InvoiceCheck *check `json:"invoiceCheck"`
	}
	post := func(body any) (response, preview) {
		t.Helper()
		r := e.do("POST", "/agent/"+alice.ID+"/policy/preview", e.key, body)
		var p preview
		if r.status == 200 {
			r.decode(t, &p)
		}
		return r, p
	}
	// Without an invoice: the rule is stated.
	r, p := post(map[string]any{"policy": map[string]any{"allowlist": []string{"bob"}}})
	if r.status != 200 || !strings.Contains(p.InvoiceRule, "by their issuer, not by their one-time address") || p.InvoiceCheck != nil || p.Hash == "" {
		t.Fatalf("preview = %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		name      string
		allowlist []string
		perTx     map[string]string
		ref       string
		allowed   bool
		reason    string
	}{
		{"issuer on the list, by id", []string{"bob"}, nil, inv.ID, true, ""},
		{"issuer on the list as name.veil, by link", []string{"carol", "bob.veil"}, nil, inv.PaymentLink, true, ""},
		{"issuer not on the list", []string{"carol"}, nil, inv.ID, false, "issued by bob.veil, which is not on the allowlist"},
		{"issuer on the list, over the cap", []string{"bob"}, map[string]string{"ETH": "0.01"}, inv.ID, false, "over the cap"},
		{"no allowlist", nil, nil, inv.ID, true, ""},
	} {
		pol := map[string]any{}
		if tc.allowlist != nil {
			pol["allowlist"] = tc.allowlist
		}
		if tc.perTx != nil {
			pol["perTransaction"] = tc.perTx
		}
		r, p := post(map[string]any{"policy": pol, "invoice": tc.ref})
		c := p.InvoiceCheck
		switch {
		case r.status != 200 || c == nil:
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		case c.InvoiceID != inv.ID || c.Issuer != "bob.veil" || c.PayTo != inv.PayTo || c.CheckedBy != "issuer" ||
			c.Allowed != tc.allowed || !strings.Contains(c.Reason, tc.reason) || p.InvoiceRule == "":
			t.Errorf("%s: %s", tc.name, r.body)
		}
	}
	// Bad input: a clear 4xx in the error format.
	for _, tc := range []struct {
		body   any
		status int
		msg    string
	}{
		{map[string]any{"policy": map[string]any{}, "invoice": "00000000-0000-4000-8000-000000000000"}, 404, "no invoice 00000000-0000-4000-8000-000000000000 on this server"},
		{map[string]any{"policy": map[string]any{}, "invoice": "not an id!"}, 400, "give an invoice id of this server"},
		{map[string]any{"policy": map[string]any{}, "invoice": strings.Repeat("a", 301)}, 400, "at most 300"},
		{map[string]any{"policy": map[string]any{}, "invoice": 5}, 400, "invoice"},
	} {
		r := e.do("POST", "/agent/"+alice.ID+"/policy/preview", e.key, tc.body)
		msg, status := r.errorBody(t)
		if r.status != tc.status || status != tc.status || !strings.Contains(msg, tc.msg) {
			t.Errorf("%v: %d %s", tc.body, r.status, r.body)
		}
	}
	// The preview changed nothing: alice still has no policy.
	if r := e.do("GET", "/agent/"+alice.ID+"/policy", e.key, nil); r.status != 200 || !strings.Contains(string(r.body), `"policy":null`) {
		t.Errorf("policy after previews: %d %s", r.status, r.body)
	}
}

// Cancelling an invoice in chat, over HTTP: the invoice shows cancelledAt
// and expired, POST /invoice/:id/paid refuses it, and a paid invoice is
// refused with the reason.
func TestCancelInvoiceInChat(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	inv := e.createInvoice(t, a.ID, "create an invoice for 0.03 ETH for logo work")
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "cancel the invoice for 0.03 eth"})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "cancel_invoice" || out.ToolCalls[0].Status != "success" ||
		!strings.Contains(out.Response, "Cancelled invoice "+inv.ID) {
		t.Fatalf("cancel = %d %s", r.status, r.body)
	}
	g := e.do("GET", "/invoice/"+inv.ID, e.key, nil)
	if g.status != 200 || !strings.Contains(string(g.body), `"cancelledAt"`) || !strings.Contains(string(g.body), `"status":"pending"`) {
		t.Fatalf("invoice after cancel = %d %s", g.status, g.body)
	}
	// Refused as cancelled, not as expired: the payer learns why.
	if p := e.do("POST", "/invoice/"+inv.ID+"/paid", e.key, map[string]string{"txHash": "0x" + strings.Repeat("ab", 32)}); p.status != 409 ||
		!strings.Contains(string(p.body), "was cancelled by its payee") {
		t.Fatalf("paid after cancel = %d %s", p.status, p.body)
	}
	if p := e.do("POST", "/pay/"+inv.ID+"/paid", "", map[string]string{"txHash": "0x" + strings.Repeat("ab", 32)}); p.status != 409 ||
		!strings.Contains(string(p.body), "was cancelled by its payee") {
		t.Fatalf("pay page's I paid after cancel = %d %s", p.status, p.body)
	}
	// A paid invoice: refused in words, nothing changes.
	paid := e.createInvoice(t, a.ID, "create an invoice for 0.04 ETH for hosting")
	if _, _, err := state.NewInvoices(e.store, a.ID, time.Now, "alice", "", nil).MarkPaid(context.Background(), paid.ID, "0x"+strings.Repeat("cd", 32)); err != nil {
		t.Fatal(err)
	}
	r, out = e.chat(t, a.ID, e.key, map[string]string{"message": "cancel invoice " + paid.ID})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "error" || !strings.Contains(out.Response, "already paid") {
		t.Fatalf("cancel paid = %d %s", r.status, r.body)
	}
}
