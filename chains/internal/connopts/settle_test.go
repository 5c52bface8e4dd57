package connopts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

func TestBaseOutcomeUnknown(t *testing.T) {
	b := NewBase(chains.Solana, "", 0, nil)
	for _, cause := range []error{errors.New("EOF"), context.Canceled, fmt.Errorf("x: %w", chains.ErrUnavailable)} {
		err := b.OutcomeUnknown("k", "sig", "send", cause)
		var ou *chains.OutcomeUnknownError
		if !errors.As(err, &ou) || ou.Chain != chains.Solana || ou.TxHash != "sig" || ou.IdempotencyKey != "k" {
			t.Fatalf("OutcomeUnknown(%v) = %v", cause, err)
		}
		if errors.Is(err, chains.ErrUnavailable) || errors.Is(err, context.Canceled) {
			t.Fatalf("OutcomeUnknown(%v) = %v still matches the cause", cause, err)
		}
		// One already unknown (of the gas transfer ahead of a withdrawal,
		// say) keeps its own hash and key.
		if again := b.OutcomeUnknown("other", "sig2", "x", err); again != err {
			t.Fatalf("OutcomeUnknown of an OutcomeUnknownError = %v, want it unchanged", again)
		}
	}
}

// TestSettlementOutbox: a settlement is kept until the receiver takes it,
// delivered again while it refuses, and not kept without a receiver.
func TestSettlementOutbox(t *testing.T) {
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "s.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	refuse := true
	var got []chains.Settlement
	o := Options{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return time.Unix(100, 0) },
		OnSettled: func(_ context.Context, s chains.Settlement) error {
			if refuse {
				return chains.ErrNoSettlementReceiver
			}
			got = append(got, s)
			return nil
		}}
	s := o.NewSettlement(chains.Stellar, "k1", "agent", "send", "h1", chains.SettlementConfirmed, 1, "")
	other := o.NewSettlement(chains.Solana, "k2", "agent", "send", "h2", chains.SettlementFailed, 0, "x")
	for _, x := range []chains.Settlement{s, other} {
		if _, err := st.Apply(ctx, o.SettleOps(x)...); err != nil {
			t.Fatal(err)
		}
	}
	o.Deliver(ctx, s) // refused: kept
	if err := o.Redeliver(ctx, chains.Stellar); err != nil || len(got) != 0 {
		t.Fatalf("Redeliver while refused = %v, delivered %v", err, got)
	}
	refuse = false
	for range 2 { // the second pass finds nothing left
		if err := o.Redeliver(ctx, chains.Stellar); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0] != s {
		t.Fatalf("delivered %+v, want once %+v", got, s)
	}
	if recs, _ := st.List(ctx, TableSettlements, persistence.Query{}); len(recs) != 1 || recs[0].Key != "solana/k2/h2" {
		t.Fatalf("left in the outbox: %+v, want only solana's", recs)
	}
	o.OnSettled = nil
	if ops := o.SettleOps(s); ops != nil {
		t.Fatalf("SettleOps without a receiver = %v", ops)
	}
}
