package state

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/fakeclock"
)

// TestAMaintenancePassDuringACreateLeavesItsDestinationAlone: the scanner's
// reclaim pass (actors/scanner, reclaimDestinations) rewrites every
// destination it finds due. One running while create_invoice activates
// the address found the fresh record due at once and moved its NextAt, so
// the create's write (AtVersion) conflicted and create_invoice failed (the
// flaky TestWalletInterop/stellar). A fresh destination is due only once
// it could be an orphan, and at once when its invoice is stored.
func TestAMaintenancePassDuringACreateLeavesItsDestinationAlone(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	var gens atomic.Int64
	gen := func(ctx context.Context, c chains.ID) (string, []byte, error) {
		return fmt.Sprintf("G%055d", gens.Add(1)), []byte{1, 2, 3}, nil
	}
	passes := 0
	// The pass, as the scanner runs it, while the address is activated.
	prep := func(ctx context.Context, c chains.ID, asset, addr string, eph []byte) error {
		ds, err := Destinations(ctx, s, c)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if !d.Due(clk.Now()) {
				continue
			}
			passes++
			due, next, err := Reclaim(ctx, s, d, clk.Now())
			if err != nil || due {
				return fmt.Errorf("a fresh destination reclaimed during its create (%v)", err)
			}
			if err := DestinationLater(ctx, s, d, next, ""); err != nil {
				return err
			}
		}
		return nil
	}
	inv := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", gen).WithPrep(prep).WithPrepares(func(chains.ID) bool { return true })
	got, err := inv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "XLM", Memo: "m"}, Chain: chains.Stellar}, "k1")
	if err != nil {
		t.Fatalf("create_invoice with a maintenance pass during its activation: %v", err)
	}
	if passes != 0 {
		t.Fatalf("the pass rewrote %d fresh destinations", passes)
	}
	ds, err := Destinations(ctx, s, chains.Stellar)
	if err != nil || len(ds) != 1 {
		t.Fatalf("destinations %v %v", ds, err)
	}
	if d := ds[0]; d.InvoiceID != got.ID || !d.Due(clk.Now()) {
		t.Fatalf("stored invoice's destination %+v: want its invoice and due at once (its reclaim follows the invoice)", d)
	}

	// An orphan (its create failed after the activation) is due after
	// OrphanAfter, not before.
	fail := func(ctx context.Context, c chains.ID, asset, addr string, eph []byte) error {
		return fmt.Errorf("node down")
	}
	orphans := NewInvoices(s, "agent-b", clk.Now, "bob", "https://veil.test", gen).WithPrep(fail).WithPrepares(func(chains.ID) bool { return true })
	if _, err := orphans.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "XLM", Memo: "m"}, Chain: chains.Stellar}, "k2"); err == nil {
		t.Fatal("create with a failing activation succeeded")
	}
	ds, _ = Destinations(ctx, s, chains.Stellar)
	for _, d := range ds {
		if d.AgentID != "agent-b" {
			continue
		}
		if d.Due(clk.Now().Add(OrphanAfter-time.Second)) || !d.Due(clk.Now().Add(OrphanAfter)) {
			t.Fatalf("orphan %+v: want due at OrphanAfter", d)
		}
		return
	}
	t.Fatal("the orphan's destination is not recorded")
}
