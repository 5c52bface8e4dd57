package intents

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
	"github.com/veilhq/veil/chains/internal/connopts"
	"github.com/veilhq/veil/persistence"
)

// fakeChain answers each sent attempt with the next verdict of its script.
type fakeChain struct {
	verdicts []Outcome
	sent     []string
	resumed  int
}

func newTestLedger(t *testing.T, fc *fakeChain) *Ledger[attempt] {
	t.Helper()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "l.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := &Ledger[attempt]{
		Options: connopts.Options{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now},
		Base:    connopts.NewBase(chains.Solana, "", 0, nil),
		Table:   "t",
		Hash:    func(at attempt) string { return at.Tx },
		Send: func(_ context.Context, at attempt) error {
			fc.sent = append(fc.sent, at.Tx)
			return nil
		},
		Verdict: func(context.Context, *Intent[attempt], attempt, error) (Outcome, error) {
			v := fc.verdicts[0]
			fc.verdicts = fc.verdicts[1:]
			switch v {
			case Stale:
				return v, errors.New("stale")
			case Unknown:
				return v, fmt.Errorf("%w: no answer", chains.ErrUnavailable)
			case Rejected:
				return v, errors.New("rejected")
			}
			return v, nil
		},
		Exhausted: func(string) string { return "stale too often" },
	}
	l.Resume = func(ctx context.Context, key string, it *Intent[attempt], ver uint64) (bool, error) {
		fc.resumed++
		return l.Resend(ctx, key, it, ver, it.Attempts[len(it.Attempts)-1])
	}
	return l
}

func build() func(context.Context, *Intent[attempt]) (attempt, error) {
	n := 0
	return func(context.Context, *Intent[attempt]) (attempt, error) {
		n++
		return attempt{Tx: fmt.Sprint("tx", n)}, nil
	}
}

func TestLedgerRebuildsStaleAttemptsAndSendsOnce(t *testing.T) {
	ctx := context.Background()
	fc := &fakeChain{verdicts: []Outcome{Stale, Landed}}
	l := newTestLedger(t, fc)
	it := &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a"}
	r, err := l.Run(ctx, "k", it, build())
	if err != nil || r.TxHash != "tx2" {
		t.Fatalf("Run = %+v, %v; want tx2", r, err)
	}
	got, _, err := l.Load(ctx, "k")
	if err != nil || got == nil || got.State != Done || len(got.Attempts) != 2 {
		t.Fatalf("stored %+v, %v; want done with 2 attempts", got, err)
	}
	// A retry answers the recorded result without sending.
	r, err = l.Run(ctx, "k", &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a"}, build())
	if err != nil || r.TxHash != "tx2" || len(fc.sent) != 2 {
		t.Fatalf("retry = %+v, %v, sent %v; want tx2 and nothing sent", r, err, fc.sent)
	}
	if _, err := l.Run(ctx, "k", &Intent[attempt]{Op: "send", Fingerprint: "other", Source: "a"}, build()); !errors.Is(err, chains.ErrIdempotencyConflict) {
		t.Fatalf("another request under the key: %v; want ErrIdempotencyConflict", err)
	}
}

func TestLedgerKeepsUnknownAndDropsRejected(t *testing.T) {
	ctx := context.Background()
	fc := &fakeChain{verdicts: []Outcome{Unknown, Rejected}}
	l := newTestLedger(t, fc)
	it := &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a"}
	r, err := l.Run(ctx, "k", it, build())
	if !errors.Is(err, chains.ErrUnavailable) || r.TxHash != "tx1" {
		t.Fatalf("Run = %+v, %v; want tx1 and ErrUnavailable", r, err)
	}
	if got, _, _ := l.Load(ctx, "k"); got == nil || got.State != Pending {
		t.Fatalf("stored %+v; want the pending intent", got)
	}
	// The retry resumes the recorded attempt; its rejection drops the
	// record, so that the key can be used again.
	if _, err := l.Run(ctx, "k", &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a"}, build()); err == nil || fc.resumed != 1 {
		t.Fatalf("retry: %v, resumed %d; want the rejection after one resume", err, fc.resumed)
	}
	if got, _, err := l.Load(ctx, "k"); got != nil || err != nil {
		t.Fatalf("stored %+v, %v; want none", got, err)
	}
}

func TestLedgerGivesUpAfterMaxRebuilds(t *testing.T) {
	fc := &fakeChain{}
	for range maxRebuilds + 1 {
		fc.verdicts = append(fc.verdicts, Stale)
	}
	l := newTestLedger(t, fc)
	_, err := l.Run(context.Background(), "k", &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a"}, build())
	if !errors.Is(err, chains.ErrUnavailable) || len(fc.sent) != maxRebuilds+1 {
		t.Fatalf("Run: %v after %d sends; want ErrUnavailable after %d", err, len(fc.sent), maxRebuilds+1)
	}
}

// A rejected attempt's intent is dropped even when the caller's fence moved
// while it was being sent (the agent's ownership passed to another member):
// the delete only undoes the caller's own write, conditionally on its
// version. Kept, the new owner's restart pass would send the rejected
// attempt again, and it could land after the caller was told it failed.
func TestLedgerDropsRejectedAfterTheFenceMoved(t *testing.T) {
	fc := &fakeChain{verdicts: []Outcome{Rejected}}
	l := newTestLedger(t, fc)
	plain := l.Store
	l.Store = persistence.Fencing(plain)
	ctx := context.Background()
	vs, err := plain.Apply(ctx, persistence.Put("owners", "agent", []byte("member-1"), persistence.Absent()))
	if err != nil {
		t.Fatal(err)
	}
	fenced := persistence.WithFence(ctx, persistence.Fence{Table: "owners", Key: "agent", Version: vs[0]})
	send := l.Send
	l.Send = func(ctx context.Context, at attempt) error {
		// Another member takes the agent over while this one sends.
		if _, err := plain.Apply(context.Background(), persistence.Put("owners", "agent", []byte("member-2"), persistence.Any())); err != nil {
			t.Error(err)
		}
		return send(ctx, at)
	}
	if _, err := l.Run(fenced, "k", &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a"}, build()); err == nil {
		t.Fatal("Run succeeded; want the rejection")
	}
	if got, _, err := l.Load(ctx, "k"); got != nil || err != nil {
		t.Fatalf("stored %+v, %v; want the rejected intent gone", got, err)
	}
}
