// Package runtime hosts Veil's actors on protoactor-go: it activates an agent
// actor on the first message for its id, passivates it when idle, supervises
// it so that one agent's panic neither loses the caller's answer nor touches
// any other agent, and drains everything on shutdown.
package host

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/internal/deadline"
	"github.com/veilhq/veil/internal/defaults"
	"github.com/veilhq/veil/internal/futures"
)

// Errors the host returns. Match them with errors.Is.
var (
	// ErrActorPanic reports that the agent's handler panicked on this
	// message; the actor was restarted from the store.
	ErrActorPanic = errors.New("runtime: agent actor failed while handling the request")
	// ErrStopping reports a request that arrived after shutdown began.
	ErrStopping = errors.New("runtime: shutting down")
	// ErrTimeout reports that the actor did not answer in time.
	ErrTimeout = errors.New("runtime: agent actor did not answer in time")
	// ErrMemberLost reports that the cluster member hosting the agent left
	// (died) while the request was in flight: it may or may not have been
	// processed, so the client retries (idempotently).
	ErrMemberLost = errors.New("runtime: the member hosting the agent left the cluster")
	// ErrFenced reports a request refused, unprocessed, by a cluster member
	// that may not serve agents now: it sees fewer than a majority of the
	// cluster's members, or it lost its store lease. The client retries,
	// through another member or in a moment.
	ErrFenced = errors.New("runtime: this cluster member is fenced off and serves no agent now")
	// ErrStale reports a request that met a stale activation: the agent's
	// store state moved on under it (another member took the agent over).
	// The activation was passivated; the request may be retried at once.
	ErrStale = errors.New("runtime: the agent's activation on this member was stale")
)

// Agent is the behaviour of one activated agent. Receive runs on the actor's
// goroutine, one message at a time, so an Agent needs no locks for its own
// state. It must persist every state change before it returns.
type Agent interface {
	Receive(ctx context.Context, msg any) (any, error)
}

// Passivator is implemented by agents that want a last word before their
// actor stops or restarts after a panic (flush timers, drop caches). It
// must not block for long.
type Passivator interface {
	Passivate()
}

// Loader activates the agent with this id from the store. An error (for
// example persistence.ErrNotFound wrapped) is returned to every request that
// reaches this activation, and the activation is dropped.
type Loader func(ctx context.Context, id string) (Agent, error)

// HostConfig tunes the agent host. Zero values take the defaults.
type HostConfig struct {
	// PassivateAfter is how long an agent may stay idle before its actor
	// stops. Default 5 minutes.
	PassivateAfter time.Duration
	// SweepEvery is how often every directory passivates the agents idle
	// for PassivateAfter or longer, so an idle agent stops between
	// PassivateAfter and PassivateAfter+SweepEvery after its last message.
	// Default PassivateAfter/8 (at least 1ms).
	SweepEvery time.Duration
	// Clock is the time source of the idle sweep (default the wall
	// clock). Tests inject a fake one and call SweepIdle.
	Clock Clock
	// Shards is the number of directory actors that own the id → actor map.
	// More shards spread activation work over more mailboxes. Default 16.
	Shards int
	// LoadTimeout bounds one activation's load from the store. Default 10s.
	LoadTimeout time.Duration
	// DefaultTimeout bounds a request whose context has no deadline.
	// Default 60s.
	DefaultTimeout time.Duration
	// MaxRestarts within RestartWindow before a failing agent is stopped
	// instead of restarted (the next message activates it afresh).
	// Defaults 10 in 10s.
	MaxRestarts   int
	RestartWindow time.Duration
	// MaxActive caps the active agent actors of this node (0: no cap).
	// Beyond it the least recently used agent is passivated, whatever its
	// idle time. Each directory shard enforces MaxActive/Shards.
	MaxActive int
	// MemoryLimit, when > 0, is the Go heap size (bytes) above which the
	// host sheds load: every shard passivates its least recently used
	// tenth, checked every MemoryCheckEvery (default 1s).
	MemoryLimit      uint64
	MemoryCheckEvery time.Duration
	// Stale, when set, tells an error that means the activation's state is
	// stale (a version conflict on the agent's own records, a lost
	// ownership epoch). Such an answer passivates the activation at once
	// and reaches the caller as ErrStale, retriable, never as the raw
	// conflict.
	Stale func(error) bool
}

func (c *HostConfig) defaults() {
	c.PassivateAfter = defaults.Positive(c.PassivateAfter, 5*time.Minute)
	c.Shards = defaults.Positive(c.Shards, 16)
	c.LoadTimeout = defaults.Positive(c.LoadTimeout, 10*time.Second)
	c.DefaultTimeout = defaults.Positive(c.DefaultTimeout, 60*time.Second)
	c.MaxRestarts = defaults.Positive(c.MaxRestarts, 10)
	c.RestartWindow = defaults.Positive(c.RestartWindow, 10*time.Second)
	c.MemoryCheckEvery = defaults.Positive(c.MemoryCheckEvery, time.Second)
	c.SweepEvery = defaults.Positive(c.SweepEvery, max(c.PassivateAfter/8, time.Millisecond))
	if c.Clock == nil {
		c.Clock = SystemClock{}
	}
}

// Clock is the time source of the idle sweep.
type Clock interface {
	Now() time.Time
	NewTicker(d time.Duration) Ticker
}

// Ticker is the part of *time.Ticker the idle sweep uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now is time.Now.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTicker is time.NewTicker.
func (SystemClock) NewTicker(d time.Duration) Ticker { return sysTicker{time.NewTicker(d)} }

type sysTicker struct{ t *time.Ticker }

func (s sysTicker) C() <-chan time.Time { return s.t.C }
func (s sysTicker) Stop()               { s.t.Stop() }

func (c *HostConfig) shardCap() int {
	if c.MaxActive <= 0 {
		return 0
	}
	n := c.MaxActive / c.Shards
	if n < 1 {
		n = 1
	}
	return n
}

// Observer receives lifecycle events, for metrics. Every method may be
// called concurrently from many actors.
type Observer interface {
	Activated(id string, load time.Duration)
	Passivated(id string)
	Panicked(id string)
	// Handled is called after an agent answered a message; kind is the
	// message's type name.
	Handled(id, kind string, d time.Duration)
	// InFlight moves the count of requests queued for or inside agents.
	InFlight(delta int)
}

type nopObserver struct{}

func (nopObserver) Activated(string, time.Duration)       {}
func (nopObserver) Passivated(string)                     {}
func (nopObserver) Panicked(string)                       {}
func (nopObserver) Handled(string, string, time.Duration) {}
func (nopObserver) InFlight(int)                          {}

// Host owns the agent actors of one actor system.
type Host struct {
	system   *actor.ActorSystem
	cfg      HostConfig
	load     Loader
	log      *slog.Logger
	observer Observer
	shards   []*actor.PID
	active   atomic.Int64
	stopping atomic.Bool
	inflight sync.WaitGroup
	// epoch is when the host started; activity times are nanoseconds
	// since it (monotonic with the wall clock).
	epoch time.Time

	// bgStop ends the idle sweep and the memory monitor; bg waits for them.
	bgStop chan struct{}
	bg     sync.WaitGroup

	// workers run the agents' mailboxes (workers.go).
	workers *workers
}

// maxIdleWorkers bounds the mailbox workers that wait for work: more than
// the mailboxes that run at once under a steady load of a few hundred
// clients, few enough that their stacks (tens of KB each at most, and the
// GC shrinks an idle one's) stay small next to the agents' heap.
const maxIdleWorkers = 256

// NewHost starts the directory actors on system. obs may be nil.
func NewHost(system *actor.ActorSystem, load Loader, cfg HostConfig, log *slog.Logger, obs Observer) *Host {
	cfg.defaults()
	if obs == nil {
		obs = nopObserver{}
	}
	h := &Host{system: system, cfg: cfg, load: load, log: log, observer: obs, epoch: cfg.Clock.Now(), bgStop: make(chan struct{}),
		workers: newWorkers(maxIdleWorkers)}
	// A failing agent is restarted in place (its new incarnation reloads
	// from the store); after too many failures in the window it is stopped.
	supervisor := actor.NewOneForOneStrategy(cfg.MaxRestarts, cfg.RestartWindow, func(any) actor.Directive {
		return actor.RestartDirective
	})
	for i := 0; i < cfg.Shards; i++ {
		d := &directory{host: h, entries: make(map[string]*entry)}
		props := actor.PropsFromProducer(func() actor.Actor { return d }, actor.WithSupervisor(supervisor))
		pid, err := system.Root.SpawnNamed(props, fmt.Sprintf("agents-%d", i))
		if err != nil {
			// Names are ours and unique per system; a clash is a programming error.
			panic(fmt.Sprintf("runtime: spawn directory %d: %v", i, err))
		}
		h.shards = append(h.shards, pid)
	}
	// One ticker for the whole host passivates idle agents: a receive
	// timeout per actor (a runtime timer and protoactor's context extras,
	// ~320 bytes of every active agent) is not needed for that (issue 38
	// item 4).
	h.bg.Add(1)
	go h.sweepIdle()
	if cfg.MemoryLimit > 0 {
		h.bg.Add(1)
		go h.monitorMemory()
	}
	return h
}

// now is the time since the host started, in nanoseconds.
func (h *Host) now() int64 { return int64(h.cfg.Clock.Now().Sub(h.epoch)) }

// sweepIdle asks every directory, every SweepEvery, to passivate its idle
// agents.
func (h *Host) sweepIdle() {
	defer h.bg.Done()
	t := h.cfg.Clock.NewTicker(h.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-h.bgStop:
			return
		case <-t.C():
		}
		for _, pid := range h.shards {
			h.system.Root.Send(pid, sweep{})
		}
	}
}

// SweepIdle passivates, now, every agent idle for PassivateAfter or longer
// (as the periodic sweep does) and reports how many it began to stop. It
// returns once every directory has swept.
func (h *Host) SweepIdle() int {
	futs := make([]*actor.Future, len(h.shards))
	for i, pid := range h.shards {
		futs[i] = h.system.Root.RequestFuture(pid, sweep{}, h.cfg.DefaultTimeout)
	}
	n := 0
	for _, f := range futs {
		if v, err := futures.Result(f); err == nil {
			k, _ := v.(int)
			n += k
		}
	}
	return n
}

// Active reports how many agent actors are activated now.
func (h *Host) Active() int { return int(h.active.Load()) }

// request is what travels from Request through a directory to an agent.
type request struct {
	id  string
	msg any
	ctx context.Context
	// e is the directory's entry of the activation the request went to
	// (set by the directory): the actor marks it handled.
	e *entry
}

// reply is what an agent actor answers.
type reply struct {
	value any
	err   error
}

// Request sends msg to the agent with this id, activating it if needed, and
// waits for its answer, bounded by ctx.
func (h *Host) Request(ctx context.Context, id string, msg any) (any, error) {
	if h.stopping.Load() {
		return nil, ErrStopping
	}
	h.inflight.Add(1)
	defer h.inflight.Done()
	h.observer.InFlight(1)
	defer h.observer.InFlight(-1)
	// Re-check: Stop may have begun between the first check and Add.
	if h.stopping.Load() {
		return nil, ErrStopping
	}
	timeout, err := deadline.Timeout(ctx, h.cfg.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	fut := h.system.Root.RequestFuture(h.shardOf(id), &request{id: id, msg: msg, ctx: ctx}, timeout)
	res, err := futures.Result(fut)
	if err != nil {
		if errors.Is(err, actor.ErrTimeout) {
			if _, ok := ctx.Deadline(); ok {
				// The future's timeout is the deadline's remaining time: it
				// can fire a hair before the context's own timer.
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, ErrTimeout
		}
		return nil, fmt.Errorf("runtime: request agent %s: %w", id, err)
	}
	r, ok := res.(*reply)
	if !ok {
		return nil, fmt.Errorf("runtime: agent %s answered %T", id, res)
	}
	if r.err != nil && !errors.Is(r.err, ErrStale) && h.cfg.Stale != nil && h.cfg.Stale(r.err) {
		// The next request activates the agent afresh from the store (or
		// finds that another member owns it now).
		h.Passivate(id)
		h.log.Warn("stale agent activation passivated", slog.String("agent", id), slog.String("err", r.err.Error()))
		return nil, fmt.Errorf("agent %s: %w: %w", id, ErrStale, r.err)
	}
	if errors.Is(r.err, ErrStale) {
		h.Passivate(id)
	}
	return r.value, r.err
}

// Passivate asks the agent's actor to stop after the requests already
// queued for it; the next request activates it again from the store.
func (h *Host) Passivate(id string) {
	h.system.Root.Send(h.shardOf(id), &passivateID{id: id})
}

// PassivateWhere passivates every active agent for which drop answers true,
// as Passivate does for one. drop runs on the directories' goroutines and
// must be safe for concurrent use.
func (h *Host) PassivateWhere(drop func(id string) bool) {
	for _, pid := range h.shards {
		h.system.Root.Send(pid, &passivateWhere{drop: drop})
	}
}

func (h *Host) shardOf(id string) *actor.PID {
	f := fnv.New32a()
	_, _ = f.Write([]byte(id))
	return h.shards[f.Sum32()%uint32(len(h.shards))]
}

// Stop refuses new requests, waits for in-flight ones (bounded by ctx), then
// stops every agent actor and the directories.
func (h *Host) Stop(ctx context.Context) error {
	if !h.stopping.Swap(true) {
		close(h.bgStop)
		h.bg.Wait()
	}
	done := make(chan struct{})
	go func() { h.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("runtime: requests still in flight at shutdown: %w", ctx.Err())
	}
	for _, pid := range h.shards {
		// Poison lets each directory finish its queue; stopping a directory
		// stops its children after their own queues.
		if perr := h.system.Root.PoisonFuture(pid).Wait(); perr != nil && err == nil {
			err = fmt.Errorf("runtime: stop directory: %w", perr)
		}
	}
	h.workers.stop()
	return err
}
