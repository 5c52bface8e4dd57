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
	var ou *chains.OutcomeUnknownError
	if !errors.Is(err, chains.ErrOutcomeUnknown) || errors.Is(err, chains.ErrUnavailable) || !errors.As(err, &ou) || ou.TxHash != "tx1" || ou.IdempotencyKey != "k" || r.TxHash != "tx1" {
		t.Fatalf("Run = %+v, %v; want tx1 and ErrOutcomeUnknown with its hash", r, err)
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

// settled collects what a ledger reports (connopts.Options.OnSettled).
type settled struct{ got []chains.Settlement }

func (s *settled) on(_ context.Context, x chains.Settlement) error {
	s.got = append(s.got, x)
	return nil
}

func (s *settled) want(t *testing.T, status chains.SettlementStatus, tx string) {
	t.Helper()
	if len(s.got) != 1 || s.got[0].Status != status || s.got[0].TxHash != tx || s.got[0].IdempotencyKey != "k" || s.got[0].Chain != chains.Solana {
		t.Fatalf("settlements %+v; want one %s of %s under k", s.got, status, tx)
	}
}

// TestLedgerSettlements: a recorded intent's outcome is reported once,
// whichever path learns it: the call, the periodic pass after a lost
// answer, or the periodic pass that finds every attempt dead for DeadAfter
// (on the ledger's clock, moved by hand).
func TestLedgerSettlements(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		verdicts []Outcome
		dead     bool // Resume finds every attempt dead
		status   chains.SettlementStatus
	}{
		{"landed in the call", []Outcome{Landed}, false, chains.SettlementConfirmed},
		{"answer lost, then landed", []Outcome{Unknown, Landed}, false, chains.SettlementConfirmed},
		{"answer lost, then refused", []Outcome{Unknown, Rejected}, false, chains.SettlementFailed},
		{"answer lost, attempts dead", []Outcome{Unknown}, true, chains.SettlementFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeChain{verdicts: tc.verdicts}
			l := newTestLedger(t, fc)
			var s settled
			l.OnSettled = s.on
			now := time.Unix(1000, 0)
			l.Now = func() time.Time { return now }
			if tc.dead {
				l.Resume = func(context.Context, string, *Intent[attempt], uint64) (bool, error) { return false, nil }
			}
			_, err := l.Run(ctx, "k", &Intent[attempt]{Op: "send", Fingerprint: "fp", Source: "a", KeyRef: chains.KeyRef{AgentID: "ag"}}, build())
			if tc.verdicts[0] == Unknown {
				if !errors.Is(err, chains.ErrOutcomeUnknown) || len(s.got) != 0 {
					t.Fatalf("Run = %v, settled %+v; want ErrOutcomeUnknown and nothing settled", err, s.got)
				}
				if err := l.Settle(ctx, false); err != nil && !tc.dead {
					t.Fatalf("periodic pass: %v", err)
				}
				if tc.dead {
					if len(s.got) != 0 {
						t.Fatalf("one dead sighting settled %+v", s.got)
					}
					now = now.Add(DeadAfter)
					if err := l.Settle(ctx, false); err != nil {
						t.Fatal(err)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			}
			s.want(t, tc.status, "tx1")
			if s.got[0].AgentID != "ag" || s.got[0].Op != "send" {
				t.Fatalf("settlement %+v does not name the agent and op", s.got[0])
			}
			// Later passes report nothing again, and leave nothing kept.
			for _, restart := range []bool{false, true} {
				if err := l.Settle(ctx, restart); err != nil {
					t.Fatal(err)
				}
			}
			if len(s.got) != 1 {
				t.Fatalf("settlements after more passes %+v", s.got)
			}
			if recs, _ := l.Store.List(ctx, connopts.TableSettlements, persistence.Query{}); len(recs) != 0 {
				t.Fatalf("outbox keeps %+v", recs)
			}
			if recs, _ := l.Store.List(ctx, l.PendingTable(), persistence.Query{}); len(recs) != 0 {
				t.Fatalf("pending index keeps %+v", recs)
			}
		})
	}
}
