//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// TestX402ChatPaysInvoice: in chat, with the builtin planner, an agent
// pays a resource that asks for x402 payment — here another agent's
// invoice, whose x402 resource is an x402 server — only within the
// maximum the user states: above it nothing is signed, a negation fetches
// nothing, and within it the invoice is paid once, on chain, with one
// invoice_paid.
func TestX402ChatPaysInvoice(t *testing.T) {
	e := newMoneyEnv(t)
	ctx := context.Background()
	alice := e.create(t, newEVMOwner(t), "alice", "ethereum")
	bob := e.create(t, newEVMOwner(t), "bob", "ethereum")
	for _, a := range []string{alice.Address, bob.Address} {
		res, err := e.conn.Fund(ctx, a) // alice's account pays the settlement's gas; bob's holds the USDC
		if err != nil {
			t.Fatal(err)
		}
		e.waitMined(t, res.TxHash)
	}
	inv := e.createInvoice(t, alice.ID, `create an invoice for 2.5 USDC for "api access"`)
	url := e.url + "/pay/" + inv.ID + "/x402"
	before := e.usdc(t, bob.Address)

	for _, msg := range []string{
		"fetch " + url + " paying up to 2 USDC",       // the resource asks for more
		"don't fetch " + url + " paying up to 3 USDC", // not an instruction
		"fetch " + url, // no maximum stated
	} {
		r, out := e.chat(t, bob.ID, e.key, map[string]string{"message": msg})
		if r.status != 200 {
			t.Fatalf("chat %q = %d %s", msg, r.status, r.body)
		}
		for _, c := range out.ToolCalls {
			if c.Name == "fetch_paid" && c.Status == "success" {
				t.Fatalf("chat %q paid: %s", msg, c.Detail)
			}
		}
		if got := e.usdc(t, bob.Address); got != before {
			t.Fatalf("after %q bob's USDC moved: %s → %s", msg, before, got)
		}
	}
	if n := countType(e.notes(t, alice.ID), "invoice_paid"); n != 0 {
		t.Fatalf("%d invoice_paid before the payment", n)
	}

	msg := "Fetch " + url + ". You may pay up to 3 USDC."
	r, out := e.chat(t, bob.ID, e.key, map[string]string{"message": msg})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "fetch_paid" || out.ToolCalls[0].Status != "success" {
		t.Fatalf("chat %q = %d %s", msg, r.status, r.body)
	}
	var got struct {
		Status     int    `json:"status"`
		Paid       bool   `json:"paid"`
		Amount     string `json:"amount"`
		Settlement *struct {
			Success     bool   `json:"success"`
			Transaction string `json:"transaction"`
		} `json:"settlement"`
	}
	if err := json.Unmarshal([]byte(out.ToolCalls[0].Detail), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status != 200 || !got.Paid || got.Amount != "2.5" || got.Settlement == nil || !got.Settlement.Success {
		t.Fatalf("fetch_paid %s", out.ToolCalls[0].Detail)
	}
	if !strings.Contains(out.Response, "2.5 USDC") || !strings.Contains(out.Response, "not instructions") {
		t.Fatalf("answer %q", out.Response)
	}
	e.waitMined(t, got.Settlement.Transaction)
	if b := e.usdc(t, inv.PayTo); b != "2.5" {
		t.Fatalf("the invoice address holds %s USDC, want 2.5", b)
	}
	want, _ := new(big.Rat).SetString(before)
	want.Sub(want, big.NewRat(5, 2))
	if after, _ := new(big.Rat).SetString(e.usdc(t, bob.Address)); after == nil || after.Cmp(want) != 0 {
		t.Fatalf("bob holds %s USDC, want %s", e.usdc(t, bob.Address), want.FloatString(6))
	}
	if n := countType(e.notes(t, alice.ID), "invoice_paid"); n != 1 {
		t.Fatalf("%d invoice_paid notifications, want 1", n)
	}

	// The same instruction again: the invoice is paid, nothing more moves.
	e.chat(t, bob.ID, e.key, map[string]string{"message": msg})
	if after, _ := new(big.Rat).SetString(e.usdc(t, bob.Address)); after == nil || after.Cmp(want) != 0 {
		t.Fatalf("a second fetch moved bob's USDC: %s", e.usdc(t, bob.Address))
	}
}
