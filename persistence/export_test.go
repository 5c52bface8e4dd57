package persistence

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// applierControl steers the applier of a store a test opened, through
// the applyTaken hook the applier calls before every pass (a pass takes
// the oldest pending groups, up to applyMaxBytes, and applies them in one
// bbolt transaction).
type applierControl struct {
	// at, when set, is where the applier announces it is about to pass
	// (stepped mode); it then waits for pass. nil: it waits for free.
	at   chan struct{}
	pass chan struct{}
	free chan struct{} // closed: the applier runs unhindered
	stop chan struct{} // closed: the applier stops, applying nothing (Abandon)
	once sync.Once
	// between runs once where beginView calls its hook.
	between atomic.Pointer[func()]
}

func (c *applierControl) hook() bool {
	select {
	case <-c.stop:
		return false
	default:
	}
	select {
	case <-c.stop:
		return false
	case <-c.free:
	case c.at <- struct{}{}:
		select {
		case <-c.stop:
			return false
		case <-c.free:
		case <-c.pass:
		}
	}
	select {
	case <-c.stop:
		return false
	default:
		return true
	}
}

func (c *applierControl) release() { c.once.Do(func() { close(c.free) }) }

// viewBegun runs the function set by BetweenViewBeginAndLock, once.
func (c *applierControl) viewBegun() {
	if f := c.between.Swap(nil); f != nil {
		(*f)()
	}
}

// BetweenViewBeginAndLock has the store's next read of bbolt and the
// pending writes together (a List, the committer's checks) run f after
// its bbolt transaction began and before it looks at the pending writes.
func (st *ApplyStepper) BetweenViewBeginAndLock(f func()) { st.c.between.Store(&f) }

// controls maps the stores opened by the helpers below to their control.
var controls sync.Map // *Bolt -> *applierControl

func openControlled(path string, opts BoltOptions, c *applierControl) (*Bolt, error) {
	c.pass, c.stop = make(chan struct{}), make(chan struct{})
	if c.free == nil {
		c.free = make(chan struct{})
	}
	s, err := openBolt(path, opts, testHooks{applyTaken: c.hook, viewBegun: c.viewBegun})
	if err == nil {
		controls.Store(s, c)
	}
	return s, err
}

// OpenBoltControlled opens a store like OpenBolt whose applier runs
// freely, and which Abandon can crash.
func OpenBoltControlled(path string, opts BoltOptions) (*Bolt, error) {
	free := make(chan struct{})
	close(free)
	return openControlled(path, opts, &applierControl{free: free})
}

// OpenBoltHeld opens a store whose applier writes nothing into bbolt
// until release is called: every write stays in the write-ahead log and
// the pending overlay, so that every read goes through the merge of the
// two (bolt_pending.go). Call release before Close, which applies them,
// or Abandon the store.
func OpenBoltHeld(path string, opts BoltOptions) (s *Bolt, release func(), err error) {
	c := &applierControl{}
	s, err = openControlled(path, opts, c)
	return s, c.release, err
}

// ApplyStepper runs the applier of a store one pass at a time.
type ApplyStepper struct {
	s      *Bolt
	c      *applierControl
	parked bool // the applier waits in its hook for the next pass
}

// OpenBoltStepped opens a store whose applier only applies when Step
// says so. Call Free before Close, or Abandon the store.
func OpenBoltStepped(path string, opts BoltOptions) (*Bolt, *ApplyStepper, error) {
	c := &applierControl{at: make(chan struct{})}
	if opts.ApplyDelay == 0 {
		opts.ApplyDelay = -1 // the test decides when the applier passes
	}
	s, err := openControlled(path, opts, c)
	return s, &ApplyStepper{s: s, c: c}, err
}

// Step lets the applier make one pass, when a group is pending, and
// returns once the pass is over, with the number of groups it applied.
// Only the applier drops groups, so a pending group means that the
// committer has woken it and that it comes to its hook; after a pass
// that applied groups it comes back to it.
func (st *ApplyStepper) Step() int {
	before := st.s.PendingGroups()
	if before == 0 {
		return 0
	}
	if !st.parked {
		<-st.c.at
	}
	st.c.pass <- struct{}{}
	<-st.c.at
	st.parked = true
	return before - st.s.PendingGroups()
}

// Free lets the applier run unhindered from now on.
func (st *ApplyStepper) Free() { st.c.release() }

// PendingGroups is the number of logged groups bbolt does not hold yet.
func (s *Bolt) PendingGroups() int {
	if s.pending == nil {
		return 0
	}
	return int(s.pending.count.Load())
}

// Abandon ends the store as a crash of the process would, the page cache
// surviving: calls already admitted are answered (their writes are
// logged), then the applier stops without applying what is pending, the
// log is closed as it is (Close(false)) and so is bbolt. The next open
// replays the log. Only for stores opened by the helpers above.
func (s *Bolt) Abandon() error {
	v, ok := controls.Load(s)
	if !ok {
		return errors.New("Abandon: the store was not opened by a test helper")
	}
	c := v.(*applierControl)
	if !s.c.Close() {
		return nil
	}
	controls.Delete(s)
	var err error
	if s.log != nil {
		close(c.stop)
		close(s.apply.quit) // an idle applier wakes, comes to its hook and stops
		<-s.apply.exit
		err = s.log.Close(false)
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

// SetApplyLimits shrinks the applier's limits (bolt_apply.go) until
// restore; only while no store is open. 0 keeps a limit.
func SetApplyLimits(applyBytes, pendingGroups int) (restore func()) {
	ab, pg := applyMaxBytes, pendingMaxGroups
	if applyBytes > 0 {
		applyMaxBytes = applyBytes
	}
	if pendingGroups > 0 {
		pendingMaxGroups = pendingGroups
	}
	return func() { applyMaxBytes, pendingMaxGroups = ab, pg }
}

// SetApplyHurryBytes sets how much pending data makes the applier skip
// its delay (bolt_apply.go) until restore; a store reads it when it opens.
func SetApplyHurryBytes(n int64) (restore func()) {
	old := applyHurryBytes
	applyHurryBytes = n
	return func() { applyHurryBytes = old }
}

// WaitDrained waits, without hurrying the applier (WaitApplied does),
// until no logged group is pending, or until ctx ends.
func (s *Bolt) WaitDrained(ctx context.Context) error {
	p := s.pending
	stop := context.AfterFunc(ctx, p.wakeWaiters)
	defer stop()
	return s.waitPending(func() bool { return len(p.groups) == 0 || ctx.Err() != nil })
}

// LogMetaBucket and LogTxKey name where bbolt records the log's position
// and the transaction that last wrote it (bolt_log.go).
const LogMetaBucket = logMetaBucket

var LogTxKey = logTxKey
