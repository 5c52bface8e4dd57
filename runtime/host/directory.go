package host

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// directory owns the id → actor map of one shard. Because it is the only
// place that spawns and stops agent actors of its ids, an agent is never
// active twice on this node: while an actor passivates, requests for it wait
// here and go to the next activation once the old one has terminated.
//
// Every byte an active agent holds here and in protoactor counts a million
// times (issue 38 item 4): an agent actor is named after its agent, so
// that its PID's id ("agents-3/<agent id>") is the only copy of the agent
// id an activation keeps (the map key, the request the actor loads from
// and the agent's own id are all that string's tail) and no PID → id map
// is needed; the LRU is threaded through the entries; idleness is two
// times and two counts in the entry, swept by one ticker per host instead
// of a receive-timeout timer per actor.
type directory struct {
	host    *Host
	entries map[string]*entry
	// props spawn every agent actor of the directory. One Props per spawn
	// (with a closure naming the id) was ~250 bytes of every active agent,
	// kept by its actor context (issue 38 item 4); the actor learns its id
	// from its first request instead.
	props *actor.Props
	// prefix is the directory's own PID id and "/": an agent actor's PID
	// id is prefix + agent id.
	prefix string
	// head and tail are the ends of the LRU, which orders the active (not
	// stopping) entries, most recently used at the head, for the idle
	// sweep, the MaxActive cap and memory shedding; n is its length.
	head, tail *entry
	n          int
	// queued holds the requests for agents whose actor is stopping, for
	// their next activation (kept here, not in every entry: it is almost
	// always empty).
	queued map[string][]queuedRequest
}

// entry is one activation of an agent. Only the directory's goroutine
// touches it, but for handled and done, which the agent's actor sets
// after each request. An entry is stopping when it is out of the LRU.
type entry struct {
	pid        *actor.PID
	prev, next *entry // in the LRU: prev towards the head
	// used is when the directory last forwarded a request to the actor,
	// done when the actor last finished one (Host.now); sent and handled
	// count those requests: sent != handled means a request is queued or
	// in flight, and the idle sweep leaves the actor alone.
	used    int64
	done    atomic.Int64
	sent    uint32
	handled atomic.Uint32
}

// markHandled is the actor telling the directory it answered a request.
// done is written before handled, and the sweep reads handled first.
func (e *entry) markHandled(now int64) {
	e.done.Store(now)
	e.handled.Add(1)
}

// idleSince reports whether the activation has no request queued or in
// flight and has had none since before cutoff.
func (e *entry) idleSince(cutoff int64) bool {
	return int32(e.sent-e.handled.Load()) <= 0 && e.used <= cutoff && e.done.Load() <= cutoff
}

// sweep asks a directory to passivate its agents idle for PassivateAfter;
// it answers how many it began to stop when asked by a request.
type sweep struct{}

// shed asks a directory to passivate its least recently used tenth.
type shed struct{}

type queuedRequest struct {
	req    *request
	sender *actor.PID
}

// passivate is an agent actor asking its directory to stop it.
type passivate struct {
	pid *actor.PID
}

// passivateID asks a directory to passivate an agent by id (capacity
// management, tests). Unknown or already stopping ids are ignored.
type passivateID struct {
	id string
}

// passivateWhere asks a directory to passivate every agent for which drop
// answers true (cluster rebalancing: agents this member no longer owns).
type passivateWhere struct {
	drop func(id string) bool
}

func (d *directory) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *request:
		e := d.entries[m.id]
		switch {
		case e == nil:
			e, err := d.activate(c, m.id)
			if err != nil {
				c.Respond(&reply{err: err})
				return
			}
			d.send(e, m)
			c.Forward(e.pid)
			d.enforceCap(c)
		case d.stopping(e):
			if d.queued == nil {
				d.queued = make(map[string][]queuedRequest)
			}
			d.queued[m.id] = append(d.queued[m.id], queuedRequest{req: m, sender: c.Sender()})
		default:
			d.unlink(e)
			d.pushFront(e)
			d.send(e, m)
			c.Forward(e.pid)
		}
	case sweep:
		n := d.sweep(c)
		if c.Sender() != nil {
			c.Respond(n)
		}
	case shed:
		for n := (d.n + 9) / 10; n > 0; n-- {
			d.stop(c, d.tail)
		}
	case *passivate:
		// The pointer, not the id: a failed activation's request may
		// arrive after its successor started.
		if id, ok := d.idOf(m.pid); ok {
			if e := d.entries[id]; e != nil && e.pid == m.pid {
				d.stop(c, e)
			}
		}
	case *passivateID:
		if e := d.entries[m.id]; e != nil {
			d.stop(c, e)
		}
	case *passivateWhere:
		for id, e := range d.entries {
			if !d.stopping(e) && m.drop(id) {
				d.stop(c, e)
			}
		}
	case *actor.Terminated:
		id, ok := d.idOf(m.Who)
		if !ok {
			return
		}
		if e := d.entries[id]; e == nil || e.pid != m.Who {
			return
		}
		delete(d.entries, id)
		d.host.active.Add(-1)
		d.host.observer.Passivated(id)
		if queued := d.queued[id]; len(queued) > 0 {
			delete(d.queued, id)
			next, err := d.activate(c, id)
			for _, q := range queued {
				if err != nil {
					c.Send(q.sender, &reply{err: err})
					continue
				}
				d.send(next, q.req)
				c.RequestWithCustomSender(next.pid, q.req, q.sender)
			}
		}
	}
}

// idOf is the agent id of one of the directory's agent actors: the tail of
// its PID's id.
func (d *directory) idOf(pid *actor.PID) (string, bool) {
	if pid == nil || !strings.HasPrefix(pid.Id, d.prefix) || d.prefix == "" {
		return "", false
	}
	return pid.Id[len(d.prefix):], true
}

// send records a request about to go to e's actor. The request's id
// becomes the tail of the actor's PID id, so that what the actor keeps of
// it (its loaded agent's id, the snapshot key) is no second copy.
func (d *directory) send(e *entry, m *request) {
	m.id = e.pid.Id[len(d.prefix):]
	m.e = e
	e.sent++
	e.used = d.host.now()
}

// sweep passivates the agents idle for PassivateAfter or longer. The LRU
// is in the order of the last request forwarded, so the walk from its tail
// ends at the first entry used since the cutoff; the entries it passes
// over are those still busy with (or just done with) an older request.
func (d *directory) sweep(c actor.Context) int {
	cutoff := d.host.now() - int64(d.host.cfg.PassivateAfter)
	n := 0
	for e := d.tail; e != nil; {
		prev := e.prev // before stop takes e out of the LRU
		if e.used > cutoff {
			break
		}
		if e.idleSince(cutoff) {
			d.stop(c, e)
			n++
		}
		e = prev
	}
	return n
}

// enforceCap passivates least recently used agents beyond the shard's cap.
func (d *directory) enforceCap(c actor.Context) {
	limit := d.host.cfg.shardCap()
	for limit > 0 && d.n > limit {
		d.stop(c, d.tail)
	}
}

// stop passivates e's actor unless it is stopping already.
func (d *directory) stop(c actor.Context, e *entry) {
	if e == nil || d.stopping(e) {
		return
	}
	d.unlink(e)
	// Poison, not Stop: requests forwarded before this point are already
	// in the child's mailbox and are answered first.
	c.Poison(e.pid)
}

// stopping reports whether e's actor is stopping: e is out of the LRU.
func (d *directory) stopping(e *entry) bool { return e.prev == nil && d.head != e }

func (d *directory) pushFront(e *entry) {
	e.prev, e.next = nil, d.head
	if d.head != nil {
		d.head.prev = e
	} else {
		d.tail = e
	}
	d.head = e
	d.n++
}

func (d *directory) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		d.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		d.tail = e.prev
	}
	e.prev, e.next = nil, nil
	d.n--
}

func (d *directory) activate(c actor.Context, id string) (*entry, error) {
	h := d.host
	if d.props == nil {
		// The lock-free mailbox is a linked queue that starts with one
		// node; the default one starts with a 10-slot ring, ~220 bytes of
		// every active agent, though an agent's mailbox is almost always
		// empty (issue 38 item 4).
		d.props = actor.PropsFromProducer(func() actor.Actor { return &agentActor{host: h} },
			actor.WithMailbox(actor.UnboundedLockfree()), actor.WithDispatcher(h.workers))
		d.prefix = c.Self().Id + "/"
	}
	// The name is free: the previous activation of id, if any, has
	// terminated (and left the process registry before it told us).
	pid, err := c.SpawnNamed(d.props, id)
	if err != nil {
		return nil, fmt.Errorf("runtime: activate agent %s: %w", id, err)
	}
	e := &entry{pid: pid, used: h.now()}
	d.pushFront(e)
	d.entries[pid.Id[len(d.prefix):]] = e
	h.active.Add(1)
	return e, nil
}

// agentActor is the actor shell around one Agent: it loads the agent on
// its first request (every activation starts with one; a restarted
// incarnation on the next), answers every request, and turns a panic into
// an answer before letting the supervisor restart it.
//
// It keeps neither its id (every request names it) nor a load error apart
// (a failed load is a loadFailure agent): 32 bytes, not 64, of every
// active agent.
type agentActor struct {
	host      *Host
	agent     Agent // nil until the first request
	askedStop bool
}

// loadFailure is the agent of an activation whose load failed: it answers
// the load's error to every request.
type loadFailure struct{ err error }

func (f loadFailure) Receive(context.Context, any) (any, error) { return nil, f.err }

func (a *agentActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *request:
		if a.agent == nil {
			a.load(m.id)
		}
		if f, ok := a.agent.(loadFailure); ok {
			// Marked before the answer, so that a caller who has it
			// finds the agent idle (the same below).
			m.e.markHandled(a.host.now())
			c.Respond(&reply{err: f.err})
			// A failed activation holds nothing worth keeping.
			a.askStop(c)
			return
		}
		a.handle(c, m)
	case *actor.Stopping, *actor.Restarting:
		// A restart (after a panic) withdraws what this incarnation
		// published too: the next one loads afresh on its next request.
		if p, ok := a.agent.(Passivator); ok {
			p.Passivate()
		}
		// Let go of the agent (its record, its state): protoactor may keep
		// a stopped actor reachable for a while (the directory's set of
		// children keeps removed PIDs in its array's unused tail until new
		// children overwrite them, and a PID caches its process), and a
		// passivated agent's memory must be free when it stops, for the
		// memory limit's shedding and for the next activation's
		// measurement (issue 38 item 4).
		a.agent = nil
	}
}

// load activates the agent id from the store.
func (a *agentActor) load(id string) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), a.host.cfg.LoadTimeout)
	ag, err := a.host.load(ctx, id)
	cancel()
	switch {
	case err != nil:
		a.agent = loadFailure{err}
	case ag == nil:
		a.agent = loadFailure{fmt.Errorf("runtime: agent %s: the loader returned no agent", id)}
	default:
		a.agent = ag
		a.host.observer.Activated(id, time.Since(start))
	}
}

func (a *agentActor) handle(c actor.Context, m *request) {
	marked := false
	defer func() {
		if r := recover(); r != nil {
			// No longer in flight: a restarted incarnation keeps the entry.
			if !marked {
				m.e.markHandled(a.host.now())
			}
			a.host.observer.Panicked(m.id)
			a.host.log.Error("agent actor panicked; restarting it from the store",
				slog.String("agent", m.id), slog.Any("panic", r))
			c.Respond(&reply{err: ErrActorPanic})
			// Re-panic so that the supervisor restarts this actor: the new
			// incarnation reloads its state instead of trusting whatever the
			// panic left half-changed in memory.
			panic(r)
		}
	}()
	ctx := m.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	start := time.Now()
	v, err := a.agent.Receive(ctx, m.msg)
	m.e.markHandled(a.host.now())
	marked = true
	c.Respond(&reply{value: v, err: err})
	a.host.observer.Handled(m.id, kindOf(m.msg), time.Since(start))
}

func (a *agentActor) askStop(c actor.Context) {
	if a.askedStop {
		return
	}
	a.askedStop = true
	c.Send(c.Parent(), &passivate{pid: c.Self()})
}

// kindOf names a message's type without its package, for metrics.
func kindOf(msg any) string {
	s := fmt.Sprintf("%T", msg)
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
