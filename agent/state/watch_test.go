package state

import (
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestInvoiceWatches: a Solana invoice gets a fresh Solana Pay reference
// (a 32-byte key, another per invoice) and an invoice_watch entry while
// it is pending; paying it removes the entry; an invoice on a chain
// scanned chain-wide (EVM, Stellar) has neither.
func TestInvoiceWatches(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", StealthAddresses(keysFor(t, "alice").meta, cryptoRand{}))
	exp := clk.Now().Add(time.Hour)
	refs := map[string]bool{}
	var sol []tools.Invoice
	for _, c := range []struct {
		chain chains.ID
		asset string
	}{{chains.Solana, "SOL"}, {chains.Solana, "USDC"}, {chains.Base, "USDC"}, {chains.Stellar, "XLM"}} {
		got, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: c.asset, Memo: "m"}, Chain: c.chain, ExpiresAt: &exp}, "")
		if err != nil {
			t.Fatal(err)
		}
		rec, err := inv.Record(ctx, got.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.chain != chains.Solana {
			if rec.Reference != "" {
				t.Errorf("%s invoice has reference %q", c.chain, rec.Reference)
			}
			continue
		}
		if b, err := base58.Decode(rec.Reference); err != nil || len(b) != 32 || refs[rec.Reference] || rec.Reference == rec.PayTo {
			t.Errorf("reference %q: %v (seen before: %v)", rec.Reference, err, refs[rec.Reference])
		}
		refs[rec.Reference] = true
		sol = append(sol, got)
	}
	for _, c := range []chains.ID{chains.Base, chains.Stellar} {
		if ws, err := InvoiceWatches(ctx, s, c); err != nil || len(ws) != 0 {
			t.Errorf("%s watches %+v %v", c, ws, err)
		}
	}
	ws, err := InvoiceWatches(ctx, s, chains.Solana)
	if err != nil || len(ws) != 2 {
		t.Fatalf("solana watches %+v %v", ws, err)
	}
	for _, w := range ws {
		rec, err := inv.Record(ctx, w.InvoiceID)
		if err != nil || w.AgentID != "agent-a" || w.PayTo != rec.PayTo || w.Asset != rec.Asset || w.Reference != rec.Reference || w.ExpiresAt == nil || !w.ExpiresAt.Equal(exp) {
			t.Errorf("watch %+v of %+v %v", w, rec, err)
		}
	}
	if _, changed, err := inv.MarkPaid(ctx, sol[0].ID, "sig1"); err != nil || !changed {
		t.Fatal(changed, err)
	}
	ws, err = InvoiceWatches(ctx, s, chains.Solana)
	if err != nil || len(ws) != 1 || ws[0].InvoiceID != sol[1].ID {
		t.Fatalf("after paying %s: %+v %v", sol[0].ID, ws, err)
	}
	if err := ForgetInvoiceWatch(ctx, s, chains.Solana, ws[0]); err != nil {
		t.Fatal(err)
	}
	if ws, err := InvoiceWatches(ctx, s, chains.Solana); err != nil || len(ws) != 0 {
		t.Fatalf("after forgetting: %+v %v", ws, err)
	}
	// Paying it after it was forgotten still works (the delete is Any).
	if _, changed, err := inv.MarkPaid(ctx, sol[1].ID, "sig2"); err != nil || !changed {
		t.Fatal(changed, err)
	}
}
