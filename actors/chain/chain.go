// Package chain runs one actor per chain that owns the chain's connector.
// Every write of the chain (payments, withdrawals, name registrations,
// faucet requests) goes through the actor, which serialises the writes of
// each source address in a lane of its own (a child actor per address,
// stopped when idle), so that an address's nonces are assigned one at a time
// while other addresses proceed in parallel and reads (balances, scans, name
// lookups) run concurrently, unserialised. When the connector keeps a ledger
// of what it submitted (the EVM connector), the actor recovers it at start
// (rebroadcasting persisted, unconfirmed transactions instead of signing new
// ones) and maintains it periodically (confirmations, fee bumps of stuck
// transactions, nonce gaps).
//
// A *Ref is a chains.Connector: callers use it exactly like the connector it
// wraps.
package chain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/deadline"
	"github.com/veilhq/veil/internal/defaults"
	"github.com/veilhq/veil/internal/futures"
	"github.com/veilhq/veil/persistence"
)

// Maintainer is implemented by connectors that track the transactions they
// submitted. Maintain with restart=true rebroadcasts what a previous process
// persisted but may not have sent; the actor calls it once at start (until it
// succeeds) and then, with restart=false, every Options.MaintainEvery.
type Maintainer interface {
	Maintain(ctx context.Context, restart bool) error
}

// Observer receives one event per connector call, for metrics. It is called
// concurrently.
type Observer interface {
	Call(chain chains.ID, op string, took time.Duration, err error)
	Maintained(chain chains.ID, took time.Duration, err error)
}

// Options tune a chain actor. Zero values take the defaults.
type Options struct {
	// MaintainEvery is the period of maintenance passes (default 1s).
	MaintainEvery time.Duration
	// MaxReads bounds concurrent reads; more wait (default 64).
	MaxReads int
	// DefaultTimeout bounds a call whose context has no deadline (default 2m).
	DefaultTimeout time.Duration
	// Log defaults to slog.Default().
	Log *slog.Logger
	// Observer may be nil.
	Observer Observer
	// Store, when set, records the chain's genesis on first contact (a
	// connector that is a GenesisReader) and the actor refuses to work on
	// a chain whose genesis changed (health.go). Nil: no genesis guard.
	Store persistence.Store
	// HealthEvery is the period of the genesis check of a serving chain
	// (default 15s); RetryMin and RetryMax bound the backoff of a degraded
	// chain's connection attempts (default 500ms and 30s).
	HealthEvery, RetryMin, RetryMax time.Duration
}

func (o *Options) defaults() {
	o.MaintainEvery = defaults.Positive(o.MaintainEvery, time.Second)
	o.MaxReads = defaults.Positive(o.MaxReads, 64)
	o.DefaultTimeout = defaults.Positive(o.DefaultTimeout, 2*time.Minute)
	o.HealthEvery = defaults.Positive(o.HealthEvery, 15*time.Second)
	o.RetryMin = defaults.Positive(o.RetryMin, 500*time.Millisecond)
	o.RetryMax = max(defaults.Positive(o.RetryMax, 30*time.Second), o.RetryMin)
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// ErrStopped reports a call after Stop. It matches chains.ErrUnavailable.
var ErrStopped = fmt.Errorf("%w: chain actor stopped", chains.ErrUnavailable)

// Ref addresses a running chain actor. It implements chains.Connector.
type Ref struct {
	system *actor.ActorSystem
	pid    *actor.PID
	id     chains.ID
	// live holds the connector; nil while the chain is degraded (its node
	// did not answer at start, StartPending).
	live    atomic.Pointer[held]
	health  health
	opts    Options
	stopped atomic.Bool
	cancel  context.CancelFunc
	bg      sync.WaitGroup
	bgctx   context.Context
}

type held struct{ c chains.Connector }

var _ chains.Connector = (*Ref)(nil)

// Start spawns the chain actor of conn on system. It checks the chain's
// genesis (Options.Store) and, when conn is a Maintainer, runs the
// restart pass (bounded by ctx; on failure it is retried by the periodic
// maintenance before any other pass).
func Start(ctx context.Context, system *actor.ActorSystem, conn chains.Connector, opts Options) (*Ref, error) {
	r, err := spawn(system, conn.Chain(), opts)
	if err != nil {
		return nil, err
	}
	r.attach(ctx, conn)
	r.watch(nil)
	return r, nil
}

// spawn starts the actor of chain id, with no connector yet.
func spawn(system *actor.ActorSystem, id chains.ID, opts Options) (*Ref, error) {
	opts.defaults()
	bgctx, cancel := context.WithCancel(context.Background())
	r := &Ref{system: system, id: id, opts: opts, cancel: cancel, bgctx: bgctx}
	a := &chainActor{ref: r, lanes: map[string]*lane{}, reads: make(chan struct{}, opts.MaxReads), recovered: true, bg: bgctx}
	props := actor.PropsFromProducer(func() actor.Actor { return a })
	pid, err := system.Root.SpawnNamed(props, "chain-"+string(id))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("chain: spawn %s actor: %w", id, err)
	}
	r.pid = pid
	return r, nil
}

// attach makes conn the chain's connector: the genesis check, the
// restart pass of a Maintainer, and its periodic maintenance.
func (r *Ref) attach(ctx context.Context, conn chains.Connector) {
	r.live.Store(&held{conn})
	r.setDown(nil)
	genesisErr := r.verifyGenesis(ctx)
	m, ok := conn.(Maintainer)
	if !ok {
		return
	}
	recovered := false
	if genesisErr == nil {
		// The restart pass rebroadcasts what a previous process signed:
		// only to the chain it was signed for.
		start := time.Now()
		err := m.Maintain(ctx, true)
		r.observeMaint(time.Since(start), err)
		if err != nil {
			r.opts.Log.Warn("chain actor: recovery pass failed; retrying in the background", "chain", r.id, "err", err)
		} else {
			recovered = true
		}
	}
	r.system.Root.Send(r.pid, attached{recovered: recovered})
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		t := time.NewTicker(r.opts.MaintainEvery)
		defer t.Stop()
		for {
			select {
			case <-r.bgctx.Done():
				return
			case <-t.C:
				r.system.Root.Send(r.pid, tick{})
			}
		}
	}()
}

// Stop stops the actor after the calls already queued, waits for running
// maintenance and reads, and makes every later call fail with ErrStopped.
// It does not close the connector.
func (r *Ref) Stop() {
	if r.stopped.Swap(true) {
		return
	}
	r.cancel()
	_ = r.system.Root.PoisonFuture(r.pid).Wait()
	r.bg.Wait()
}

// Connector is the wrapped connector (for its chain-specific extras; its
// writes must still go through the Ref).
// While the chain is degraded it is a stand-in whose every operation
// answers the chain's *chains.DownError (and that has none of the
// connectors' extras).
func (r *Ref) Connector() chains.Connector { return r.conn() }

// conn is the live connector, or the stand-in while there is none.
func (r *Ref) conn() chains.Connector {
	if h := r.live.Load(); h != nil {
		return h.c
	}
	return standIn{r}
}

func (r *Ref) observeMaint(d time.Duration, err error) {
	if r.opts.Observer != nil {
		r.opts.Observer.Maintained(r.id, d, err)
	}
}

// call is what a Ref sends its actor: fn runs in the lane named lane, or
// concurrently when lane is "".
type call struct {
	ctx  context.Context
	op   string
	lane string
	fn   func(ctx context.Context) (any, error)
	// state is queued, running or abandoned: a write whose caller gave up
	// while it was still queued is never started (nothing was signed);
	// one already running is waited for (see do).
	state atomic.Int32
	// done receives a lane call's answer too (buffered), for a caller
	// whose future expired while it ran.
	done chan *result
}

const (
	callQueued int32 = iota
	callRunning
	callAbandoned
)

type result struct {
	v   any
	err error
}

type tick struct{}
type attached struct{ recovered bool }
type maintained struct{ err error }
type laneIdle struct{ key string }

func (r *Ref) do(ctx context.Context, op, laneKey string, fn func(context.Context) (any, error)) (any, error) {
	if r.stopped.Load() {
		return nil, ErrStopped
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if laneKey != "" {
		// A write checks, in its lane, that the chain is still the one
		// recorded before it signs anything (health.go).
		write := fn
		fn = func(ctx context.Context) (any, error) {
			if err := r.verifyGenesis(ctx); err != nil {
				return nil, err
			}
			return write(ctx)
		}
	}
	timeout, err := deadline.Timeout(ctx, r.opts.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	m := &call{ctx: ctx, op: op, lane: laneKey, fn: fn, done: make(chan *result, 1)}
	f := r.system.Root.RequestFuture(r.pid, m, timeout)
	res, err := futures.Result(f)
	if err != nil && laneKey != "" && !m.state.CompareAndSwap(callQueued, callAbandoned) {
		// The write started before its caller gave up: it may have signed
		// and recorded a transaction, so its own answer (the hash, an
		// unknown outcome) is what the caller gets, not its context's
		// error. The connector bounds the call once ctx has ended.
		res, err = <-m.done, nil
	}
	if err != nil {
		if _, has := ctx.Deadline(); has && errors.Is(err, actor.ErrTimeout) {
			// The future's time-out is ctx's deadline: its error is
			// the caller's context's, whichever timer fired first.
			<-ctx.Done()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if r.stopped.Load() {
			return nil, ErrStopped
		}
		return nil, fmt.Errorf("%w: %s actor: %v", chains.ErrUnavailable, r.id, err)
	}
	out, ok := res.(*result)
	if !ok {
		return nil, fmt.Errorf("chain: %s actor answered %T", r.id, res)
	}
	return out.v, out.err
}

// run executes one call, turning a panic into an error and reporting it.
func (r *Ref) run(m *call) (res *result) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			r.opts.Log.Error("chain actor: call panicked", "chain", r.id, "op", m.op, "panic", p)
			res = &result{err: fmt.Errorf("chain: %s %s: internal error", r.id, m.op)}
		}
		if r.opts.Observer != nil {
			r.opts.Observer.Call(r.id, m.op, time.Since(start), res.err)
		}
	}()
	v, err := m.fn(m.ctx)
	return &result{v: v, err: err}
}

// chainActor is the parent: it routes writes to lanes and runs reads.
type chainActor struct {
	ref         *Ref
	lanes       map[string]*lane
	reads       chan struct{}
	recovered   bool
	maintaining bool
	bg          context.Context
}

type lane struct {
	pid      *actor.PID
	inflight int
}

func (a *chainActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *call:
		if m.lane == "" {
			sender := c.Sender()
			system := c.ActorSystem()
			go func() {
				a.reads <- struct{}{}
				defer func() { <-a.reads }()
				system.Root.Send(sender, a.ref.run(m))
			}()
			return
		}
		l := a.lanes[m.lane]
		if l == nil {
			key := m.lane
			pid := c.Spawn(actor.PropsFromProducer(func() actor.Actor { return &laneActor{ref: a.ref, key: key} }))
			l = &lane{pid: pid}
			a.lanes[m.lane] = l
		}
		l.inflight++
		c.Forward(l.pid)
	case laneIdle:
		l := a.lanes[m.key]
		if l == nil {
			return
		}
		if l.inflight--; l.inflight == 0 {
			// Nothing is queued for this lane (every forwarded call has
			// answered): stop it; the next call starts a fresh one.
			c.Poison(l.pid)
			delete(a.lanes, m.key)
		}
	case attached:
		a.recovered = m.recovered
	case tick:
		if a.maintaining || a.ref.Err() != nil {
			// Nothing is maintained on a chain that is down (a reset one
			// must not get old transactions rebroadcast to it).
			return
		}
		mt, ok := a.ref.conn().(Maintainer)
		if !ok {
			return
		}
		a.maintaining = true
		restart := !a.recovered
		self := c.Self()
		system := c.ActorSystem()
		a.ref.bg.Add(1)
		go func() {
			defer a.ref.bg.Done()
			ctx, cancel := context.WithTimeout(a.bg, 5*time.Minute)
			defer cancel()
			// Maintenance signs too (fee bumps) and rebroadcasts: only on
			// the chain recorded.
			err := a.ref.verifyGenesis(ctx)
			if err == nil {
				start := time.Now()
				err = mt.Maintain(ctx, restart)
				a.ref.observeMaint(time.Since(start), err)
			}
			if err != nil && a.bg.Err() == nil {
				a.ref.opts.Log.Warn("chain actor: maintenance", "chain", a.ref.id, "restart", restart, "err", err)
			}
			system.Root.Send(self, maintained{err: err})
		}()
	case maintained:
		a.maintaining = false
		if m.err == nil {
			a.recovered = true
		}
	}
}

// laneActor runs the writes of one source address, one at a time.
type laneActor struct {
	ref *Ref
	key string
}

func (l *laneActor) Receive(c actor.Context) {
	if m, ok := c.Message().(*call); ok {
		var res *result
		if m.state.CompareAndSwap(callQueued, callRunning) {
			res = l.ref.run(m)
		} else {
			// Its caller gave up before it started: nothing is signed.
			res = &result{err: m.ctx.Err()}
		}
		m.done <- res
		c.Respond(res)
		c.Send(c.Parent(), laneIdle{key: l.key})
	}
}

func laneOf(address string) string { return "addr:" + strings.ToLower(strings.TrimSpace(address)) }

// Chain is the chain's identifier.
func (r *Ref) Chain() chains.ID { return r.id }

// TxLink is the connector's link (no I/O, no actor round trip).
func (r *Ref) TxLink(txHash string) string { return r.conn().TxLink(txHash) }

// Assets lists the connector's assets (none while it is down or not yet
// connected).
func (r *Ref) Assets() []chains.Asset { return r.conn().Assets() }

// Balance reads concurrently with everything else.
func (r *Ref) Balance(ctx context.Context, address string) (chains.Balance, error) {
	v, err := r.do(ctx, "balance", "", func(ctx context.Context) (any, error) {
		if err := r.freshGenesis(ctx); err != nil {
			var de *chains.DownError
			if errors.As(err, &de) {
				return nil, err
			}
		}
		return r.conn().Balance(ctx, address)
	})
	return as[chains.Balance](v, err)
}

// SendStealth runs in the lane of fromAddress.
func (r *Ref) SendStealth(ctx context.Context, from chains.KeyRef, fromAddress string, req chains.SendRequest) (chains.TxResult, error) {
	v, err := r.do(ctx, "send_stealth", laneOf(fromAddress), func(ctx context.Context) (any, error) {
		return r.conn().SendStealth(ctx, from, fromAddress, req)
	})
	return as[chains.TxResult](v, err)
}

// scanResult carries Scan's two values.
type scanResult struct {
	anns   []chains.Announcement
	cursor string
}

// Scan reads concurrently with everything else.
func (r *Ref) Scan(ctx context.Context, cursor string, limit int) ([]chains.Announcement, string, error) {
	v, err := r.do(ctx, "scan", "", func(ctx context.Context) (any, error) {
		anns, next, err := r.conn().Scan(ctx, cursor, limit)
		return scanResult{anns, next}, err
	})
	s, _ := v.(scanResult)
	if s.cursor == "" && err != nil {
		s.cursor = cursor
	}
	return s.anns, s.cursor, err
}

// Withdraw runs in the lane of the stealth address req.From.
func (r *Ref) Withdraw(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest) (chains.TxResult, error) {
	v, err := r.do(ctx, "withdraw", laneOf(req.From), func(ctx context.Context) (any, error) {
		return r.conn().Withdraw(ctx, from, req)
	})
	return as[chains.TxResult](v, err)
}

// WithdrawWithGas runs in the lane of req.From: Withdraw with the gas the
// address lacks paid from payer (chains.GasFunder). On a chain whose
// connector needs no gas funding it is Withdraw.
func (r *Ref) WithdrawWithGas(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest, payer chains.GasPayer) (chains.TxResult, error) {
	gf, ok := r.conn().(chains.GasFunder)
	if !ok {
		return r.Withdraw(ctx, from, req)
	}
	v, err := r.do(ctx, "withdraw", laneOf(req.From), func(ctx context.Context) (any, error) {
		return gf.WithdrawWithGas(ctx, from, req, payer)
	})
	return as[chains.TxResult](v, err)
}

// PreparesDestinations says whether the connector prepares invoice
// destinations (chains.DestinationPreparer, a sponsor configured).
func (r *Ref) PreparesDestinations() bool {
	dp, ok := r.conn().(chains.DestinationPreparer)
	return ok && dp.PreparesDestinations()
}

// PrepareDestination runs in the sponsor's lane (every activation is a
// transaction of the one sponsor account): chains.DestinationPreparer's
// PrepareDestination, or chains.ErrUnavailable on a chain without it.
func (r *Ref) PrepareDestination(ctx context.Context, key chains.KeyRef, address, asset, idempotencyKey string) (chains.TxResult, error) {
	dp, ok := r.conn().(chains.DestinationPreparer)
	if !ok {
		return chains.TxResult{}, fmt.Errorf("%w: %s prepares no destinations", chains.ErrUnavailable, r.id)
	}
	v, err := r.do(ctx, "prepare_destination", "sponsor", func(ctx context.Context) (any, error) {
		return dp.PrepareDestination(ctx, key, address, asset, idempotencyKey)
	})
	return as[chains.TxResult](v, err)
}

// ReclaimDestination runs in the sponsor's lane, like the activation:
// chains.DestinationReclaimer's ReclaimDestination, or
// chains.ErrUnavailable on a chain without it.
func (r *Ref) ReclaimDestination(ctx context.Context, key chains.KeyRef, address, idempotencyKey string) (chains.TxResult, error) {
	dr, ok := r.conn().(chains.DestinationReclaimer)
	if !ok {
		return chains.TxResult{}, fmt.Errorf("%w: %s reclaims no destinations", chains.ErrUnavailable, r.id)
	}
	v, err := r.do(ctx, "reclaim_destination", "sponsor", func(ctx context.Context) (any, error) {
		return dr.ReclaimDestination(ctx, key, address, idempotencyKey)
	})
	return as[chains.TxResult](v, err)
}

// RegisterName runs in the lane of ownerAddress.
func (r *Ref) RegisterName(ctx context.Context, owner chains.KeyRef, ownerAddress, name, metaAddress string) (chains.TxResult, error) {
	v, err := r.do(ctx, "register_name", laneOf(ownerAddress), func(ctx context.Context) (any, error) {
		return r.conn().RegisterName(ctx, owner, ownerAddress, name, metaAddress)
	})
	return as[chains.TxResult](v, err)
}

// ResolveName reads concurrently with everything else.
func (r *Ref) ResolveName(ctx context.Context, name string) (string, error) {
	v, err := r.do(ctx, "resolve_name", "", func(ctx context.Context) (any, error) { return r.conn().ResolveName(ctx, name) })
	return as[string](v, err)
}

// Fund runs in the faucet's lane (the faucet is one sender).
func (r *Ref) Fund(ctx context.Context, address string) (chains.TxResult, error) {
	v, err := r.do(ctx, "fund", "faucet", func(ctx context.Context) (any, error) { return r.conn().Fund(ctx, address) })
	return as[chains.TxResult](v, err)
}

func as[T any](v any, err error) (T, error) {
	t, _ := v.(T)
	if err != nil {
		return t, err
	}
	if v == nil {
		var zero T
		return zero, errors.New("chain: empty answer")
	}
	return t, nil
}
