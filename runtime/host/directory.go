package host

import (
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// directory owns the id → actor map of one shard. Because it is the only
// place that spawns and stops agent actors of its ids, an agent is never
// active twice on this node: while an actor passivates, requests for it wait
// here and go to the next activation once the old one has terminated.
type directory struct {
	host    *Host
	entries map[string]*entry
	// props spawn every agent actor of the directory. One Props per spawn
	// (with a closure naming the id) was ~250 bytes of every active agent,
	// kept by its actor context (issue 38 item 4); the actor learns its id
	// from its first request instead.
	props *actor.Props
	byPID map[string]string // child PID id → agent id
	// lru orders the active (not stopping) entries, most recently used at
	// the front, for the MaxActive cap and memory shedding.
	lru list.List
}

type entry struct {
	id       string
	pid      *actor.PID
	stopping bool
	queued   []queuedRequest
	elem     *list.Element
}

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
			e = d.activate(c, m.id)
			c.Forward(e.pid)
			d.enforceCap(c)
		case e.stopping:
			e.queued = append(e.queued, queuedRequest{req: m, sender: c.Sender()})
		default:
			d.lru.MoveToFront(e.elem)
			c.Forward(e.pid)
		}
	case shed:
		n := (d.lru.Len() + 9) / 10
		for i := 0; i < n; i++ {
			d.stop(c, d.lru.Back().Value.(*entry).id)
		}
	case *passivate:
		if id, ok := d.byPID[m.pid.Id]; ok {
			d.stop(c, id)
		}
	case *passivateID:
		d.stop(c, m.id)
	case *passivateWhere:
		for id := range d.entries {
			if m.drop(id) {
				d.stop(c, id)
			}
		}
	case *actor.Terminated:
		id, ok := d.byPID[m.Who.Id]
		if !ok {
			return
		}
		delete(d.byPID, m.Who.Id)
		e := d.entries[id]
		delete(d.entries, id)
		d.host.active.Add(-1)
		d.host.observer.Passivated(id)
		if e != nil && len(e.queued) > 0 {
			next := d.activate(c, id)
			for _, q := range e.queued {
				c.RequestWithCustomSender(next.pid, q.req, q.sender)
			}
		}
	}
}

// enforceCap passivates least recently used agents beyond the shard's cap.
func (d *directory) enforceCap(c actor.Context) {
	limit := d.host.cfg.shardCap()
	for limit > 0 && d.lru.Len() > limit {
		d.stop(c, d.lru.Back().Value.(*entry).id)
	}
}

func (d *directory) stop(c actor.Context, id string) {
	if e := d.entries[id]; e != nil && !e.stopping {
		e.stopping = true
		d.lru.Remove(e.elem)
		// Poison, not Stop: requests forwarded before this point are
		// already in the child's mailbox and are answered first.
		c.Poison(e.pid)
	}
}

func (d *directory) activate(c actor.Context, id string) *entry {
	if d.byPID == nil {
		d.byPID = make(map[string]string)
	}
	h := d.host
	if d.props == nil {
		// The lock-free mailbox is a linked queue that starts with one
		// node; the default one starts with a 10-slot ring, ~220 bytes of
		// every active agent, though an agent's mailbox is almost always
		// empty (issue 38 item 4).
		d.props = actor.PropsFromProducer(func() actor.Actor { return &agentActor{host: h} },
			actor.WithMailbox(actor.UnboundedLockfree()))
	}
	pid := c.SpawnPrefix(d.props, "a")
	e := &entry{id: id, pid: pid}
	e.elem = d.lru.PushFront(e)
	d.entries[id] = e
	d.byPID[pid.Id] = id
	h.active.Add(1)
	return e
}

// agentActor is the actor shell around one Agent: it loads the agent on
// its first request (every activation starts with one; a restarted
// incarnation on the next), answers every request, and turns a panic into
// an answer before letting the supervisor restart it.
type agentActor struct {
	host      *Host
	id        string // "" until the first request
	agent     Agent
	loadErr   error
	askedStop bool
}

func (a *agentActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		c.SetReceiveTimeout(a.host.cfg.PassivateAfter)
	case *request:
		if a.id == "" {
			a.load(m.id)
		}
		if a.loadErr != nil {
			c.Respond(&reply{err: a.loadErr})
			// A failed activation holds nothing worth keeping.
			a.askStop(c)
			return
		}
		a.handle(c, m)
	case *actor.ReceiveTimeout:
		a.askStop(c)
	case *actor.Stopping, *actor.Restarting:
		// A restart (after a panic) withdraws what this incarnation
		// published too: the next one loads afresh on its next request.
		if p, ok := a.agent.(Passivator); ok {
			p.Passivate()
		}
	}
}

// load activates the agent id from the store.
func (a *agentActor) load(id string) {
	a.id = id
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), a.host.cfg.LoadTimeout)
	a.agent, a.loadErr = a.host.load(ctx, id)
	cancel()
	if a.loadErr == nil {
		a.host.observer.Activated(id, time.Since(start))
	}
}

func (a *agentActor) handle(c actor.Context, m *request) {
	defer func() {
		if r := recover(); r != nil {
			a.host.observer.Panicked(a.id)
			a.host.log.Error("agent actor panicked; restarting it from the store",
				slog.String("agent", a.id), slog.Any("panic", r))
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
	c.Respond(&reply{value: v, err: err})
	a.host.observer.Handled(a.id, kindOf(m.msg), time.Since(start))
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
