package lease

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/postgres"
)

// The holders run on fake clocks advanced in steps of one renewal period,
// so every expiry and takeover below happens at a known step; polling with
// a deadline only waits for the holders' goroutines to come to rest.
const (
	ttl       = 9 * time.Second
	step      = ttl / 3 // Renew and Retry
	leaseName = "scanner/ethereum"
	settleFor = 20 * time.Second // a hang guard, not a timing assertion
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// backend opens the store each of two holders uses: one shared bbolt
// store (one process may open the file), or two PostgreSQL connections
// to one database, as two cluster members would.
type backend struct {
	name   string
	stores func(t *testing.T) (a, b persistence.Store)
}

var backends = []backend{
	{"bolt", func(t *testing.T) (persistence.Store, persistence.Store) {
		s, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, s
	}},
	{"postgres", func(t *testing.T) (persistence.Store, persistence.Store) {
		dsn := freshDB(t)
		open := func() persistence.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := postgres.Open(ctx, dsn, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(), open()
	}},
}

// world counts the work running across holders.
type world struct {
	active   atomic.Int32
	overlaps atomic.Int32 // times a work started while another ran
}

type holder struct {
	t       *testing.T
	w       *world
	id      string
	clock   *fakeClock
	store   *gatedStore
	mgr     *Manager
	held    atomic.Bool
	running atomic.Int32
	starts  atomic.Int32
	until   atomic.Int64 // the last hold's end OnRenew reported (unix ns)
	cancel  context.CancelFunc
	ret     chan error
}

func newHolder(t *testing.T, w *world, id string, s persistence.Store) *holder {
	t.Helper()
	h := &holder{t: t, w: w, id: id, clock: newFakeClock(epoch), store: &gatedStore{Store: s}, ret: make(chan error, 1)}
	mgr, err := New(Options{Store: h.store, Holder: id, TTL: ttl, Clock: h.clock,
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnChange: func(name string, held bool) { h.held.Store(held) },
		OnRenew:  func(name string, until time.Time) { h.until.Store(until.UnixNano()) }})
	if err != nil {
		t.Fatal(err)
	}
	h.mgr = mgr
	return h
}

func (h *holder) work(ctx context.Context) {
	h.running.Add(1)
	h.starts.Add(1)
	if h.w.active.Add(1) > 1 {
		h.w.overlaps.Add(1)
	}
	<-ctx.Done()
	h.w.active.Add(-1)
	h.running.Add(-1)
}

// start runs the lease and waits for h to settle; the test's cleanup
// stops it before the stores close.
func (h *holder) start() {
	h.launch()
	h.settle()
}

func (h *holder) launch() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.ret <- h.mgr.Run(ctx, leaseName, h.work) }()
	h.t.Cleanup(func() { h.stop() })
}

// stop ends Run and returns its error (nil if already stopped).
func (h *holder) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.ret:
		return err
	case <-time.After(settleFor):
		h.t.Fatalf("%s: Run did not return after its context ended", h.id)
		return nil
	}
}

// settle waits until h is at rest: holding with its work running and its
// renewal and expiry timers set, or not holding and waiting to retry.
func (h *holder) settle() {
	h.t.Helper()
	h.waitFor("rest", func() bool {
		if h.held.Load() {
			return h.running.Load() == 1 && h.clock.Waiters() == 2
		}
		return h.running.Load() == 0 && h.clock.Waiters() == 1
	})
}

func (h *holder) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(settleFor)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not %s (held %v, running %d, timers %d)", h.id, what, h.held.Load(), h.running.Load(), h.clock.Waiters())
		}
		time.Sleep(time.Millisecond)
	}
}

// step advances h's clock by one period and waits for h to settle.
func (h *holder) step() {
	h.t.Helper()
	h.clock.Advance(step)
	h.settle()
}

func stepAll(hs ...*holder) {
	for _, h := range hs {
		h.step()
	}
}

func holderOf(t *testing.T, s persistence.Store) string {
	t.Helper()
	rec, err := s.Get(context.Background(), Table, leaseName)
	if errors.Is(err, persistence.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(rec.Value, &r); err != nil {
		t.Fatal(err)
	}
	return r.Holder
}

func putRecord(t *testing.T, s persistence.Store, r record) {
	t.Helper()
	b, _ := json.Marshal(r)
	if _, err := s.Apply(context.Background(), persistence.Put(Table, leaseName, b, persistence.Absent())); err != nil {
		t.Fatal(err)
	}
}

func TestLease(t *testing.T) {
	scenarios := []struct {
		name string
		run  func(t *testing.T, w *world, sa, sb persistence.Store)
	}{
		{"two holders compete: one runs, the other takes over when it is released", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a, b := newHolder(t, w, "a", sa), newHolder(t, w, "b", sb)
			a.start()
			b.start()
			if !a.held.Load() || b.held.Load() {
				t.Fatalf("held: a %v, b %v; want a only", a.held.Load(), b.held.Load())
			}
			for range 10 {
				stepAll(a, b)
			}
			if a.starts.Load() != 1 || b.starts.Load() != 0 || w.overlaps.Load() != 0 {
				t.Fatalf("after 10 renewals: a started %d, b started %d, overlaps %d; want 1, 0, 0", a.starts.Load(), b.starts.Load(), w.overlaps.Load())
			}
			if err := a.stop(); !errors.Is(err, context.Canceled) {
				t.Fatalf("a's Run = %v, want context.Canceled", err)
			}
			if got := holderOf(t, sb); got != "" {
				t.Fatalf("after a stopped the lease names %q, want it released", got)
			}
			b.step()
			if !b.held.Load() || b.starts.Load() != 1 || w.overlaps.Load() != 0 {
				t.Fatalf("b held %v, started %d, overlaps %d after a released", b.held.Load(), b.starts.Load(), w.overlaps.Load())
			}
		}},
		{"OnRenew reports each hold's end: when its write was sent, plus the TTL", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a := newHolder(t, w, "a", sa)
			a.start()
			if got, want := time.Unix(0, a.until.Load()), epoch.Add(ttl); !got.Equal(want) {
				t.Fatalf("after taking the lease: until %v, want %v", got, want)
			}
			a.step()
			if got, want := time.Unix(0, a.until.Load()), epoch.Add(step+ttl); !got.Equal(want) {
				t.Fatalf("after a renewal: until %v, want %v", got, want)
			}
		}},
		{"two holders start at once: exactly one wins", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a, b := newHolder(t, w, "a", sa), newHolder(t, w, "b", sb)
			a.launch()
			b.launch()
			a.settle()
			b.settle()
			for range 3 {
				stepAll(a, b)
			}
			if a.held.Load() == b.held.Load() || a.starts.Load()+b.starts.Load() != 1 || w.overlaps.Load() != 0 {
				t.Fatalf("held a %v b %v, started a %d b %d, overlaps %d", a.held.Load(), b.held.Load(), a.starts.Load(), b.starts.Load(), w.overlaps.Load())
			}
		}},
		{"the holder stops renewing: its work ends at expiry, then the other takes over", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a, b := newHolder(t, w, "a", sa), newHolder(t, w, "b", sb)
			a.start()
			b.start()
			stepAll(a, b)
			stepAll(a, b) // a's last renewal is at +6s: it holds until +15s
			a.store.cut()
			// +9s, +12s: a's renewal hangs; b has seen the record for 3s, 6s.
			for i := range 2 {
				a.clock.Advance(step)
				if i == 0 {
					a.waitFor("renewing (only the expiry timer left)", func() bool { return a.clock.Waiters() == 1 })
				}
				b.step()
				if a.running.Load() != 1 || b.held.Load() {
					t.Fatalf("step %d: a running %d, b held %v; want a still in its TTL", i, a.running.Load(), b.held.Load())
				}
			}
			// +15s: a's hold runs out on its own clock, with no answer from
			// the store; b has seen the record unchanged for a TTL.
			a.clock.Advance(step)
			a.waitFor("stopped at expiry", func() bool { return !a.held.Load() && a.running.Load() == 0 })
			b.step()
			if !b.held.Load() || b.starts.Load() != 1 {
				t.Fatalf("b held %v, started %d after a's lease expired", b.held.Load(), b.starts.Load())
			}
			if w.overlaps.Load() != 0 {
				t.Fatalf("%d overlaps: a's work outlived its lease", w.overlaps.Load())
			}
			if got := holderOf(t, sb); got != "b" {
				t.Fatalf("lease names %q, want b", got)
			}
		}},
		{"a renewal that loses the race cancels the work", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a, b := newHolder(t, w, "a", sa), newHolder(t, w, "b", sb)
			a.start()
			b.start()
			stepAll(a, b)
			stepAll(a, b)
			// a pauses (its clock stops, as in a stopped VM): b sees the
			// record unchanged for a TTL and takes over at its third step,
			// not before.
			for i := 1; i <= 3; i++ {
				b.step()
				if held := b.held.Load(); held != (i == 3) {
					t.Fatalf("b step %d: held %v", i, held)
				}
			}
			// Both run now: a cannot know until its next renewal, which is
			// what the first failed write must end.
			a.step()
			if a.held.Load() || a.running.Load() != 0 || a.starts.Load() != 1 {
				t.Fatalf("a held %v, running %d, started %d after losing the race", a.held.Load(), a.running.Load(), a.starts.Load())
			}
			if !b.held.Load() || b.running.Load() != 1 || holderOf(t, sa) != "b" {
				t.Fatalf("b held %v, running %d, record %q", b.held.Load(), b.running.Load(), holderOf(t, sa))
			}
			// a keeps contending and does not take the lease back.
			for range 5 {
				stepAll(a, b)
			}
			if a.held.Load() || a.starts.Load() != 1 || !b.held.Load() || b.starts.Load() != 1 {
				t.Fatalf("a held %v started %d, b held %v started %d", a.held.Load(), a.starts.Load(), b.held.Load(), b.starts.Load())
			}
		}},
		{"a lease released and taken again is not mistaken for the one seen before", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a, b := newHolder(t, w, "a", sa), newHolder(t, w, "b", sb)
			a.start()
			b.start()
			for range 3 {
				stepAll(a, b) // b last saw a's record at version 4
			}
			if err := a.stop(); !errors.Is(err, context.Canceled) {
				t.Fatalf("a's Run = %v", err)
			}
			// c takes the released lease and renews it to version 4
			// again while b does not look; b then looks once, a TTL after
			// it saw a's version 4: another record, not an abandoned one.
			c := newHolder(t, w, "c", sa)
			c.clock.Advance(3 * step)
			c.start()
			for range 3 {
				c.step()
			}
			b.clock.Advance(3 * step)
			b.settle()
			if b.held.Load() || !c.held.Load() || w.overlaps.Load() != 0 {
				t.Fatalf("b held %v, c held %v, overlaps %d: b took c's live lease", b.held.Load(), c.held.Load(), w.overlaps.Load())
			}
		}},
		{"a lease left by a crashed process is taken after one TTL", func(t *testing.T, w *world, sa, sb persistence.Store) {
			putRecord(t, sa, record{Holder: "crashed", Renewed: epoch, Expires: epoch.Add(ttl), TTL: ttl})
			b := newHolder(t, w, "b", sb)
			b.start()
			for i := 1; i <= 3; i++ {
				if b.held.Load() {
					t.Fatalf("b took a live-looking lease after %d steps", i-1)
				}
				b.step()
			}
			if !b.held.Load() {
				t.Fatal("b did not take the lease after a TTL")
			}
		}},
		{"a lease that expired long ago is taken at once", func(t *testing.T, w *world, sa, sb persistence.Store) {
			putRecord(t, sa, record{Holder: "crashed", Renewed: epoch.Add(-time.Hour), Expires: epoch.Add(-time.Hour + ttl), TTL: ttl})
			b := newHolder(t, w, "b", sb)
			b.start()
			if !b.held.Load() {
				t.Fatal("b did not take an hour-old lease at once")
			}
		}},
		{"on an exclusive store a crashed predecessor's lease is taken at once", func(t *testing.T, w *world, sa, sb persistence.Store) {
			putRecord(t, sa, record{Holder: "crashed", Renewed: epoch, Expires: epoch.Add(ttl), TTL: ttl})
			b := newHolder(t, w, "b", sb)
			b.mgr.opts.Exclusive = true
			b.start()
			if !b.held.Load() {
				t.Fatal("b did not take its dead predecessor's lease at once")
			}
		}},
		{"work that returns releases the lease and ends Run", func(t *testing.T, w *world, sa, sb persistence.Store) {
			a := newHolder(t, w, "a", sa)
			err := a.mgr.Run(context.Background(), leaseName, func(context.Context) {})
			if err != nil {
				t.Fatalf("Run = %v, want nil", err)
			}
			if got := holderOf(t, sa); got != "" {
				t.Fatalf("lease names %q after its work returned", got)
			}
		}},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) {
					sa, sb := be.stores(t)
					sc.run(t, &world{}, sa, sb)
				})
			}
		})
	}
}

func TestRunTwiceOnOneManager(t *testing.T) {
	s, _ := backends[0].stores(t)
	h := newHolder(t, &world{}, "a", s)
	h.start()
	err := h.mgr.Run(context.Background(), leaseName, func(context.Context) {})
	if !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
}

func TestNewHolderIDIsUnique(t *testing.T) {
	if a, b := NewHolderID(), NewHolderID(); a == b {
		t.Fatalf("two ids %q", a)
	}
}
