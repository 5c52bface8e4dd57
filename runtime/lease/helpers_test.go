package lease

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/postgres/pgtest"
)

// fakeClock is a Clock that moves only when the test advances it, and
// counts the timers waiting on it so that a test can tell when a holder
// has come to rest.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Advance moves the clock by d and fires, in order, every timer due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	var keep []*fakeTimer
	for _, t := range c.timers {
		if t.at.After(c.now) {
			keep = append(keep, t)
			continue
		}
		t.ch <- t.at
	}
	c.timers = keep
}

// Waiters is the number of timers not yet fired or stopped.
func (c *fakeClock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// gatedStore passes calls through to a store until the test closes the
// gate; then every call waits (until its context ends), as with a member
// cut off from the database.
type gatedStore struct {
	persistence.Store
	mu     sync.Mutex
	closed chan struct{} // nil while open
}

func (g *gatedStore) cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

func (g *gatedStore) wait(ctx context.Context) error {
	g.mu.Lock()
	c := g.closed
	g.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gatedStore) Get(ctx context.Context, table, key string) (persistence.Record, error) {
	if err := g.wait(ctx); err != nil {
		return persistence.Record{}, err
	}
	return g.Store.Get(ctx, table, key)
}

func (g *gatedStore) Apply(ctx context.Context, ops ...persistence.Op) ([]uint64, error) {
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	return g.Store.Apply(ctx, ops...)
}

// PostgreSQL cases get a database of their own (pgtest).
func freshDB(t testing.TB) string {
	t.Helper()
	return pgtest.FreshDB(t)
}
