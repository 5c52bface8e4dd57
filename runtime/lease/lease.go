// Package lease elects one owner for a named piece of background work (a
// chain's scanner, the schedule reminder) among the processes that share a
// persistence.Store: in cluster mode every member runs the same services,
// and the store is the only thing they all agree on.
//
// A lease is one record of the "leases" table, keyed by its name, holding
// the holder's id and the time its hold ends. It is taken and renewed only
// by version-conditional writes (persistence.Absent / AtVersion), so two
// holders can never both believe a write of theirs succeeded on the same
// version. The holder renews every TTL/3; it cancels the work's context as
// soon as a renewal fails, or when TTL has passed since the last renewal it
// sent that succeeded (even if the store has not answered: a holder cut off
// from the store stops on its own clock). A contender takes over a lease
// only after it has seen the record unchanged for a whole TTL on its own
// clock, so takeover does not depend on the members' clocks agreeing; the
// other path, a record whose written expiry is more than a TTL in the past,
// lets a process restarted long after a crash start at once, and assumes
// clocks agree to better than a TTL. See docs/cluster.md.
//
// A lease keeps duplicate work rare, not impossible: a holder paused longer
// than a TTL (stopped VM, long GC) runs until its next renewal fails. The
// work itself must stay safe under a duplicate run, as the scanner (agents
// deduplicate payments) and the reminder (each slot has its idempotency
// key) are.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/veilhq/veil/persistence"
)

// Table is the persistence table of the lease records.
const Table = "leases"

// DefaultTTL is how long a lease outlives its holder's last renewal.
const DefaultTTL = 10 * time.Second

// releaseTimeout bounds the final write of a holder that stops, whose own
// context has already ended.
const releaseTimeout = 5 * time.Second

// ErrRunning reports a second Run of the same lease on one Manager: both
// would share the holder id and so both believe they hold it.
var ErrRunning = errors.New("lease: this lease is already run by this holder")

// errExpired is why a holder stops when its renewal did not succeed in time.
var errExpired = errors.New("lease: no successful renewal within the TTL")

// Options configure a Manager. Store and Holder are required.
type Options struct {
	Store persistence.Store
	// Holder identifies this process among all the store's users; it must
	// be unique per process (NewHolderID), since a record naming it is
	// taken as this process's own.
	Holder string
	// TTL is how long a lease lasts after its holder's last renewal
	// (default DefaultTTL). It bounds how long work stops when its holder
	// dies.
	TTL time.Duration
	// Renew is the holder's renewal period (default TTL/3). The first
	// failed renewal already stops the work, so the period is not there
	// for retries: it leaves a slow store the rest of the TTL to answer.
	Renew time.Duration
	// Retry is how often a contender reads the lease (default TTL/3,
	// rounded up).
	Retry time.Duration
	// Exclusive says that no other process can use the store (bbolt
	// locks its file): a record naming another holder was left by a
	// process that died, and is taken at once instead of after a TTL, so
	// a single node restarted after a crash does not wait for its own
	// predecessor's leases.
	Exclusive bool
	// Clock is the time source (default the wall clock).
	Clock Clock
	Log   *slog.Logger
	// OnChange, when set, is called on Run's goroutine when this holder
	// takes a lease (true) and after the work of a lost or released one
	// has returned (false).
	OnChange func(name string, held bool)
	// OnRenew, when set, is called on Run's goroutine each time this
	// holder takes or renews a lease, with the end of its hold on the
	// Clock: when the successful write was sent, plus the TTL. A holder
	// that must stop at that moment even if Run's own expiry has not run
	// yet (its goroutine starved, or the process just resumed from a
	// pause) compares it with its own clock (cluster fencing does).
	OnRenew func(name string, until time.Time)
}

// Manager runs work under leases for one holder.
type Manager struct {
	opts Options

	mu      sync.Mutex
	running map[string]bool
}

// record is the stored value of a lease.
type record struct {
	Holder   string    `json:"holder"`
	Acquired time.Time `json:"acquired"`
	Renewed  time.Time `json:"renewed"`
	// Expires is Renewed+TTL on the holder's clock: for people reading
	// the table, and for the restart path (see the package comment).
	Expires time.Time `json:"expires"`
	// TTL is the holder's, so that members configured differently agree
	// on how long to wait.
	TTL time.Duration `json:"ttl"`
}

// New validates opts and fills in the defaults.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil {
		return nil, errors.New("lease: Options.Store is required")
	}
	if opts.Holder == "" {
		return nil, errors.New("lease: Options.Holder is required")
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Renew <= 0 {
		opts.Renew = opts.TTL / 3
	}
	if opts.Renew >= opts.TTL {
		return nil, fmt.Errorf("lease: renewal period %s must be shorter than the TTL %s", opts.Renew, opts.TTL)
	}
	if opts.Retry <= 0 {
		// Rounded up, so that three reads span a whole TTL: TTL/3
		// rounded down would need a fourth to see the record unchanged
		// for a TTL.
		opts.Retry = (opts.TTL + 2) / 3
	}
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Manager{opts: opts, running: map[string]bool{}}, nil
}

// Holder is this manager's holder id.
func (m *Manager) Holder() string { return m.opts.Holder }

// NewHolderID returns an id unique to this process: hostname and pid say
// which process holds a lease when someone reads the table, the random
// part keeps a restarted process with a recycled pid from taking its
// predecessor's record for its own.
func NewHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail on supported platforms
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Run calls fn each time this holder takes the lease called name, with a
// context that ends when the lease is lost (a renewal failed, or none
// succeeded within the TTL) or when ctx ends. Run waits for fn to return
// before it tries to take the lease again, so fn never runs twice at once
// in this process. fn must return promptly once its context ends: the
// lease no longer protects it then.
//
// Run returns ctx.Err() when ctx ends, or nil when fn returns while its
// context was still live; either way a lease it holds is released (deleted)
// so another holder need not wait for it to expire.
func (m *Manager) Run(ctx context.Context, name string, fn func(ctx context.Context)) error {
	if name == "" {
		return fmt.Errorf("lease: empty name: %w", persistence.ErrInvalid)
	}
	m.mu.Lock()
	if m.running[name] {
		m.mu.Unlock()
		return fmt.Errorf("lease %q: %w", name, ErrRunning)
	}
	m.running[name] = true
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.running, name)
		m.mu.Unlock()
	}()

	var seen observed
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if h, ok := m.tryAcquire(ctx, name, &seen); ok {
			if stop, err := m.hold(ctx, name, h, fn); stop {
				return err
			}
			// Lost: read the record again at once; it names the new
			// holder, or still us if the lost renewal was only slow.
			continue
		}
		t := m.opts.Clock.NewTimer(m.opts.Retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// observed is a contender's view of the record: the record it last saw
// and when (on its own clock) it first saw it. The value is compared too,
// not only the version: a released (deleted) lease taken again starts
// again at version 1.
type observed struct {
	version uint64
	value   string
	at      time.Time
}

// holding is the state of a held lease.
type holding struct {
	version  uint64
	acquired time.Time
	// sent is when the write that gave version was sent: the hold lasts
	// until sent+TTL on this clock, which is no later than the moment any
	// contender can have seen version unchanged for a TTL.
	sent time.Time
}

// tryAcquire takes the lease if it is absent, ours, or abandoned.
func (m *Manager) tryAcquire(ctx context.Context, name string, seen *observed) (holding, bool) {
	rec, err := m.opts.Store.Get(ctx, Table, name)
	now := m.opts.Clock.Now()
	expect := persistence.Absent()
	switch {
	case errors.Is(err, persistence.ErrNotFound):
	case err != nil:
		if ctx.Err() == nil {
			m.opts.Log.Warn("lease: read failed; retrying", slog.String("lease", name), slog.Any("err", err))
		}
		return holding{}, false
	default:
		var cur record
		if err := json.Unmarshal(rec.Value, &cur); err != nil {
			// Unreadable: wait it out like a record of an unknown holder.
			cur = record{Holder: "?"}
		}
		if rec.Version != seen.version || string(rec.Value) != seen.value {
			seen.version, seen.value, seen.at = rec.Version, string(rec.Value), now
		}
		ttl := cur.TTL
		if ttl <= 0 {
			ttl = m.opts.TTL
		}
		abandoned := m.opts.Exclusive || !now.Before(seen.at.Add(ttl)) ||
			(!cur.Expires.IsZero() && !now.Before(cur.Expires.Add(ttl)))
		if cur.Holder != m.opts.Holder && !abandoned {
			return holding{}, false
		}
		expect = persistence.AtVersion(rec.Version)
		if cur.Holder != m.opts.Holder {
			m.opts.Log.Info("lease: taking over an expired lease", slog.String("lease", name), slog.String("from", cur.Holder))
		}
	}
	v, err := m.write(ctx, name, now, now, expect)
	if err != nil {
		if !errors.Is(err, persistence.ErrConflict) && ctx.Err() == nil {
			m.opts.Log.Warn("lease: acquire failed; retrying", slog.String("lease", name), slog.Any("err", err))
		}
		return holding{}, false
	}
	return holding{version: v, acquired: now, sent: now}, true
}

// write puts this holder's record, renewed at now.
func (m *Manager) write(ctx context.Context, name string, acquired, now time.Time, expect persistence.Expect) (uint64, error) {
	b, err := json.Marshal(record{Holder: m.opts.Holder, Acquired: acquired, Renewed: now, Expires: now.Add(m.opts.TTL), TTL: m.opts.TTL})
	if err != nil {
		return 0, fmt.Errorf("lease %q: encode: %w", name, err)
	}
	vs, err := m.opts.Store.Apply(ctx, persistence.Put(Table, name, b, expect))
	if err != nil {
		return 0, fmt.Errorf("lease %q: write: %w", name, err)
	}
	return vs[0], nil
}

type renewal struct {
	version uint64
	err     error
}

// hold runs fn while the lease lasts. stop says whether Run returns (with
// err); otherwise the lease was lost and Run contends again.
func (m *Manager) hold(ctx context.Context, name string, h holding, fn func(context.Context)) (stop bool, err error) {
	clock := m.opts.Clock
	log := m.opts.Log.With(slog.String("lease", name))
	if m.opts.OnChange != nil {
		m.opts.OnChange(name, true)
	}
	log.Info("lease: acquired; starting its work", slog.String("holder", m.opts.Holder))
	if m.opts.OnRenew != nil {
		m.opts.OnRenew(name, h.sent.Add(m.opts.TTL))
	}

	fnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(fnCtx)
	}()

	expT := clock.NewTimer(h.sent.Add(m.opts.TTL).Sub(clock.Now()))
	renewT := clock.NewTimer(m.opts.Renew)
	renewC := renewT.C()
	var pending chan renewal // the renewal in flight; nil when none
	var sending time.Time
	var cause error
	fnReturned := false
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-done:
			fnReturned = true
			break loop
		case <-renewC:
			renewC = nil
			sending = clock.Now()
			pending = make(chan renewal, 1)
			// Off this goroutine: a store that hangs must not keep the
			// expiry below from cancelling fn.
			go func(ch chan<- renewal, v uint64, at time.Time) {
				nv, err := m.write(ctx, name, h.acquired, at, persistence.AtVersion(v))
				ch <- renewal{nv, err}
			}(pending, h.version, sending)
		case r := <-pending:
			pending = nil
			if r.err != nil {
				cause = r.err
				break loop
			}
			h.version, h.sent = r.version, sending
			if m.opts.OnRenew != nil {
				m.opts.OnRenew(name, h.sent.Add(m.opts.TTL))
			}
			expT.Stop()
			expT = clock.NewTimer(h.sent.Add(m.opts.TTL).Sub(clock.Now()))
			renewT = clock.NewTimer(m.opts.Renew)
			renewC = renewT.C()
		case <-expT.C():
			cause = errExpired
			break loop
		}
	}
	expT.Stop()
	renewT.Stop()
	cancel()
	<-done

	if cause != nil {
		// The work has stopped; the record may still be ours (a slow or
		// failed store), and Run will find that out by reading it.
		log.Warn("lease: lost; its work stopped", slog.Any("err", cause))
		if m.opts.OnChange != nil {
			m.opts.OnChange(name, false)
		}
		return false, nil
	}

	// Stopping (ctx ended or fn returned): give the lease back so that
	// another holder takes it now rather than after a TTL.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer rcancel()
	held := true
	if pending != nil {
		select {
		case r := <-pending:
			if r.err == nil {
				h.version = r.version
			} else if errors.Is(r.err, persistence.ErrConflict) {
				held = false
			}
		case <-rctx.Done():
		}
	}
	if held {
		if _, err := m.opts.Store.Apply(rctx, persistence.Delete(Table, name, persistence.AtVersion(h.version))); err != nil && !errors.Is(err, persistence.ErrConflict) {
			log.Warn("lease: release failed; it expires on its own", slog.Any("err", err))
		}
	}
	if m.opts.OnChange != nil {
		m.opts.OnChange(name, false)
	}
	log.Info("lease: released")
	if fnReturned && ctx.Err() == nil {
		return true, nil
	}
	return true, ctx.Err()
}
