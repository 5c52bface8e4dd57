//go:build !nodevnet

package httpapi_test

import (
	"context"
	"testing"

	solanago "github.com/gagliardetto/solana-go"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/solana/solanapaytest"
)

// TestSolanaPayWalletSettles: a wallet pays a Solana invoice from the pay
// page's Solana Pay URI (its reference key, no call to /paid), in SOL and
// in USDC; one pass of the payee's scanner finds the payment by the
// reference (chains.ReferenceScanner) and settles the invoice, with one
// invoice_paid and one payment_received each; more passes change nothing.
// An invoice the wallet has not paid stays pending.
func TestSolanaPayWalletSettles(t *testing.T) {
	ctx := context.Background()
	e, conn := newLedgerServer(t, chains.Solana, 41, ledgerDevnet(t, chains.Solana))
	payee := e.create(t, newEdOwner(t, "solana"), "payee", "solana")
	s := e.newScannerOnce(t)
	cl := conn.(*solana.Connector).Client()
	wallet := solanago.NewWallet().PrivateKey
	if _, err := conn.Fund(ctx, wallet.PublicKey().String()); err != nil {
		t.Fatal(err)
	}
	unpaid := e.createInvoice(t, payee.ID, "create an invoice for 1 SOL for the unpaid job")
	for i, tc := range []struct {
		message, amount, asset string
		decimals               int
	}{
		{"create an invoice for 0.25 SOL for the design work", "0.25", "SOL", 9},
		{"create an invoice for 2.5 USDC for the logo", "2.5", "USDC", 6},
	} {
		inv := e.createInvoice(t, payee.ID, tc.message)
		var v struct {
			PaymentURI string `json:"paymentUri"`
			Token      string `json:"token"`
		}
		e.do("GET", "/pay/"+inv.ID+"/status", "", nil).decode(t, &v)
		req, err := solanapaytest.Parse(v.PaymentURI)
		if err != nil || req.Recipient.String() != inv.PayTo || req.Amount != tc.amount || len(req.References) != 1 || req.References[0].String() == inv.PayTo ||
			(tc.asset == "SOL") != (v.Token == "") || v.Token != "" && req.Token.String() != v.Token {
			t.Fatalf("paymentUri %q: %+v %v", v.PaymentURI, req, err)
		}
		sig, err := solanapaytest.Pay(ctx, cl, wallet, v.PaymentURI, tc.decimals)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := s.ScanOnce(ctx)
		if err != nil || rep.InvoicesPaid != 1 || rep.New != 1 {
			t.Fatalf("scan after paying %s: %+v %v", tc.asset, rep, err)
		}
		for range 2 {
			if rep, err := s.ScanOnce(ctx); err != nil || rep.InvoicesPaid != 0 || rep.New != 0 {
				t.Fatalf("scan again: %+v %v", rep, err)
			}
		}
		var got invoiceJSON
		e.do("GET", "/invoice/"+inv.ID, e.key, nil).decode(t, &got)
		if got.Status != "paid" || got.TxHash == nil || *got.TxHash != sig {
			t.Fatalf("invoice after the wallet paid %s: %+v", sig, got)
		}
		in := e.notes(t, payee.ID)
		if n := countType(in, agent.NoteInvoicePaid); n != i+1 {
			t.Fatalf("%d invoice_paid after %d invoices: %+v", n, i+1, in.Notifications)
		}
		if n := countType(in, agent.NotePaymentReceived); n != i+1 {
			t.Fatalf("%d payment_received after %d payments: %+v", n, i+1, in.Notifications)
		}
	}
	var got invoiceJSON
	e.do("GET", "/invoice/"+unpaid.ID, e.key, nil).decode(t, &got)
	if got.Status != "pending" {
		t.Fatalf("the unpaid invoice: %+v", got)
	}
}
