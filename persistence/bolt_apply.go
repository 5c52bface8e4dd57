package persistence

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The applier writes the groups the committer logged into bbolt, behind
// it, as many at a time as have accumulated (up to applyMaxBytes), and
// starts at most one transaction per BoltOptions.ApplyDelay: the bbolt
// commit, with its scattered page writes and its fsyncs, leaves the path
// every write waits on, and its cost is shared by more groups the busier
// the store and the longer the delay. Its transaction also records the
// last sequence number it applied (bolt_log.go), so a replay starts after
// it.

// The applier's limits; variables only so that tests can shrink them
// (export_test.go) while no store is open.
var (
	// applyMaxBytes bounds one bbolt transaction's effects: bbolt holds a
	// write transaction's dirty pages in memory.
	applyMaxBytes = 32 << 20
	// pendingMaxBytes and pendingMaxGroups bound what waits for the
	// applier; past them the committer waits for it (backpressure), which
	// bounds the overlay's memory and the replay after a crash.
	pendingMaxBytes  = 64 << 20
	pendingMaxGroups = 8192
	// applyRetry is the pause before the applier tries a failed bbolt
	// transaction again.
	applyRetry = 100 * time.Millisecond
	// applyHurryBytes: once this much waits, the applier does not wait
	// out its ApplyDelay (a burst of large writes).
	applyHurryBytes int64 = 8 << 20
)

// Failpoints of the applier (see BoltOptions.Failpoint).
const (
	// FailApplyBeforeCommit: logged groups are written into the applier's
	// bbolt transaction, which has not committed. A crash here must lose
	// nothing: the log still holds them.
	FailApplyBeforeCommit = "apply.before-commit"
	// FailApplyAfterCommit: bbolt holds the groups durably and the overlay
	// still has them. A crash here replays nothing twice: bbolt's recorded
	// position is past them.
	FailApplyAfterCommit = "apply.after-commit"
)

type applier struct {
	wake  chan struct{} // capacity 1
	hurry chan struct{} // capacity 1: look again whether to wait (urgent)
	// delay is the least time between the starts of two transactions
	// (BoltOptions.ApplyDelay); 0: none.
	delay time.Duration
	// hurryBytes: this much pending data is urgent (applyHurryBytes,
	// read once when the store opens, so that a test restoring it after
	// a failure does not race the applier of a store it left open).
	hurryBytes int64
	// hurryTo is the highest sequence number a caller waits for bbolt to
	// hold (WaitApplied): until applied reaches it, no delay.
	hurryTo atomic.Uint64
	quit    chan struct{}
	exit    chan struct{}

	applied atomic.Uint64 // last sequence number bbolt holds durably

	mu  sync.Mutex
	err error // the last failure, nil once a transaction succeeds
}

func (s *Bolt) startApplier(applied uint64) {
	a := &applier{
		wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1),
		quit: make(chan struct{}), exit: make(chan struct{}),
		delay: s.opts.ApplyDelay, hurryBytes: min(applyHurryBytes, int64(pendingMaxBytes)),
	}
	a.applied.Store(applied)
	s.apply = a
	go s.runApplier()
}

// kick tells the applier there is work.
func (a *applier) kick() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// rush wakes the applier from its delay, to look again whether what
// waits is urgent.
func (a *applier) rush() {
	select {
	case a.hurry <- struct{}{}:
	default:
	}
}

// urgent reports whether what waits must be applied without waiting out
// the delay: a caller waits for bbolt to hold it (WaitApplied), the
// committer is about to wait for room (backpressure), or it is a burst
// past applyHurryBytes. It is a state, not a message, so that it holds
// for every pass until it is over: a WaitApplied may need several.
func (s *Bolt) urgent() bool {
	p, a := s.pending, s.apply
	return a.hurryTo.Load() > a.applied.Load() ||
		p.size.Load() >= a.hurryBytes ||
		p.count.Load() >= int64(pendingMaxGroups)
}

// pause waits d, or less when rushed; it reports whether Close asked the
// applier to quit meanwhile.
func (a *applier) pause(d time.Duration) (quit bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-a.hurry:
	case <-a.quit:
		return true
	}
	return false
}

func (a *applier) failure() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *applier) setFailure(err error) {
	a.mu.Lock()
	a.err = err
	a.mu.Unlock()
}

func (s *Bolt) runApplier() {
	// A CPU profile tells the applier's samples by this label
	// (go tool pprof -tagfocus stage=apply): a serial stage's CPU per
	// write is what caps the store however many cores serve it.
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("stage", "apply")))
	a := s.apply
	defer close(a.exit)
	quitting := false
	var began time.Time // the last transaction's start
	for {
		if !quitting {
			select {
			case <-a.wake:
			case <-a.quit:
				quitting = true
			}
		}
		for {
			// At most one transaction per delay: what arrives meanwhile
			// joins the next one. After a quiet spell the first group
			// goes at once.
			for !quitting && !s.urgent() {
				wait := a.delay - time.Since(began)
				if wait <= 0 {
					break
				}
				quitting = a.pause(wait)
			}
			if s.hooks.applyTaken != nil && !s.hooks.applyTaken() {
				return // a test's crash: nothing more is applied
			}
			groups := s.pending.take(applyMaxBytes)
			if len(groups) == 0 {
				break
			}
			began = time.Now()
			if err := s.applyGroups(groups); err != nil {
				a.setFailure(err)
				s.pending.wakeWaiters() // a committer waiting for room fails now
				if quitting {
					return // Close reports it; the log keeps the groups
				}
				select {
				case <-time.After(applyRetry):
				case <-a.quit:
					quitting = true
				}
				continue
			}
			a.setFailure(nil)
		}
		if quitting {
			return
		}
	}
}

// applyGroups writes groups into bbolt in one transaction, then drops
// them from the overlay.
func (s *Bolt) applyGroups(groups []loggedGroup) error {
	last := groups[len(groups)-1].seq
	start := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, g := range groups {
			if err := applyLogOps(tx, g.ops); err != nil {
				return err
			}
		}
		if err := writeLogMeta(tx, logMeta{id: s.logID, applied: last}); err != nil {
			return err
		}
		return Hit(s.opts.Failpoint, FailApplyBeforeCommit)
	})
	if err == nil {
		err = Hit(s.opts.Failpoint, FailApplyAfterCommit)
	}
	if err != nil {
		return fmt.Errorf("persistence: apply the log to %s: %w", s.path, err)
	}
	s.apply.applied.Store(last)
	// Observed before the drop, which wakes the waiters: whoever waited
	// for these groups (WaitApplied, WaitDrained) finds their
	// transaction counted already.
	if s.opts.ObserveApply != nil {
		s.opts.ObserveApply(len(groups), time.Since(start))
	}
	s.pending.drop(groups)
	return nil
}

// waitForRoom holds the committer while the applier is too far behind,
// which bounds the pending writes.
func (s *Bolt) waitForRoom() error {
	p := s.pending
	room := func() bool {
		return p.size.Load() < int64(pendingMaxBytes) && p.count.Load() < int64(pendingMaxGroups)
	}
	// Only the committer adds, so room seen here stays until it adds.
	if room() {
		return nil
	}
	s.apply.rush()
	return s.waitPending(room)
}

// WaitApplied returns once bbolt holds every write acknowledged before
// the call: before a copy of the file (WriteTo), or before a benchmark
// reads WriteStats, which counts what the applier wrote.
func (s *Bolt) WaitApplied() error {
	p := s.pending
	if p == nil {
		return nil
	}
	p.mu.RLock()
	var target uint64
	if n := len(p.groups); n > 0 {
		target = p.groups[n-1].seq
	}
	p.mu.RUnlock()
	if target == 0 {
		return nil
	}
	for {
		old := s.apply.hurryTo.Load()
		if old >= target || s.apply.hurryTo.CompareAndSwap(old, target) {
			break
		}
	}
	s.apply.kick()
	s.apply.rush()
	return s.waitPending(func() bool { return len(p.groups) == 0 || p.groups[0].seq > target })
}

// waitPending waits, holding pending's lock while it looks, until done
// holds; the applier signals each drop. It fails when the applier is
// failing: what it waits for may never come, and waiting would hang.
func (s *Bolt) waitPending(done func() bool) error {
	p := s.pending
	p.mu.Lock()
	defer p.mu.Unlock()
	for !done() {
		if err := s.apply.failure(); err != nil {
			return fmt.Errorf("the data file is not taking writes: %w", err)
		}
		p.room.Wait()
	}
	return nil
}

// stopApplier applies everything pending and stops the applier. It
// reports whether the log is fully applied.
func (s *Bolt) stopApplier() error {
	close(s.apply.quit)
	<-s.apply.exit
	if s.pending.count.Load() > 0 {
		err := s.apply.failure()
		if err == nil {
			err = errors.New("persistence: writes left unapplied")
		}
		return err
	}
	return nil
}
