// Package fakeclock is the clock tests hand to code that takes a
// `func() time.Time`: one implementation instead of a copy per test
// package. It has two kinds, one per way the tests move time:
//
//   - Clock is a time that stands still until the test sets or advances
//     it: for code whose answers depend on the exact instant (schedules,
//     rate limits, expiries).
//   - Offset is real time plus an offset the test moves forward: for code
//     that also waits on real deadlines (a devnet, an HTTP server), so that
//     time must keep passing, but the test still needs to jump ahead (past
//     an approval's expiry, a backoff).
//
// Both are safe for concurrent use, since the code under test reads the
// clock from its own goroutines while the test moves it. Neither changes the
// time's location: a test that needs UTC passes a UTC time (the code under
// test converts where it stores, as with the real clock).
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a settable time: Now returns the last time the test set, moved
// by every Advance since. Create it with New; its method values (c.Now)
// are what the code under test takes as its clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t (kept as given: location and
// monotonic reading too).
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t, backwards too.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Offset is real time plus an offset the test moves: Now is time.Now()
// shifted by the sum of every Advance. Its zero value is real time, ready
// to use. It must not be copied after first use.
type Offset struct {
	mu  sync.Mutex
	off time.Duration
}

// Now is the real time plus the offset.
func (o *Offset) Now() time.Time {
	o.mu.Lock()
	off := o.off
	o.mu.Unlock()
	return time.Now().Add(off)
}

// Advance moves the offset by d.
func (o *Offset) Advance(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.off += d
}
