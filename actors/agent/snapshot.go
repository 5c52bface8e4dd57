package agent

import (
	"context"
	"sync"
	"time"
)

// The read path (issue 21): an agent's identity and status reads need no
// turn in its actor's mailbox. Each active actor publishes an immutable
// snapshot of its record when it activates and whenever it stores a new
// one, before it answers the write; Get and GetStatus are then answered
// from the snapshot on the caller's goroutine (Snapshots.Reads). Because a
// write answers only after its snapshot is published, a client reads its
// own writes.
//
// A snapshot lives exactly as long as its activation: the actor drops it
// when it stops (idle passivation, the LRU cap, memory shedding, a stale
// activation, shutdown) and a new activation drops any left by a
// predecessor that panicked before it loads. With no snapshot the read
// goes through the actor, as every read used to. Snapshots are for one
// node: in a cluster, veild leaves them off, so every read reaches the
// owning member's actor and its ownership check (docs/architecture.md).

// Requester delivers a message to an agent actor and returns its answer:
// runtime/host.Host, runtime/cluster.Member, or Snapshots.Reads around one.
type Requester interface {
	Request(ctx context.Context, id string, msg any) (any, error)
}

// Snapshots holds the snapshot of every agent active on this node. Set it
// in Deps (the actors publish) and wrap the host with Reads (the API reads).
type Snapshots struct {
	m sync.Map // agent id → *snapshot
}

// NewSnapshots returns an empty set.
func NewSnapshots() *Snapshots { return &Snapshots{} }

// snapshot is what one activation published. Nothing in it changes after
// publication: a new state is a new snapshot (records are never changed
// in place; saveRecord stores a clone).
type snapshot struct {
	rec  *Record
	deps *Deps
	// pendingSetup: a name registration is still pending; due is when the
	// actor retries it next (resume.go). A read at or after due goes
	// through the actor so that, as before, it starts the retry.
	pendingSetup bool
	due          time.Time
}

// Reads returns a Requester that answers Get and GetStatus from the
// snapshots and sends every other message, and any read it cannot answer
// from a snapshot, to next.
func (s *Snapshots) Reads(next Requester) Requester { return &reads{next: next, snaps: s} }

type reads struct {
	next  Requester
	snaps *Snapshots
}

func (r *reads) Request(ctx context.Context, id string, msg any) (any, error) {
	if v, ok, err := r.snaps.read(ctx, id, msg); ok {
		return v, err
	}
	return r.next.Request(ctx, id, msg)
}

// read answers msg from the agent's snapshot; ok is false when it cannot
// (not a snapshot read, no snapshot, or a setup retry is due).
func (s *Snapshots) read(ctx context.Context, id string, msg any) (v any, ok bool, err error) {
	var account string
	switch m := msg.(type) {
	case *Get:
		account = m.AccountID
	case *GetStatus:
		account = m.AccountID
	default:
		return nil, false, nil
	}
	p, found := s.m.Load(id)
	if !found {
		return nil, false, nil
	}
	snap := p.(*snapshot)
	if snap.pendingSetup && !snap.deps.now().Before(snap.due) {
		return nil, false, nil
	}
	// The account check of Receive (protocol.go), on the same record.
	if account == "" || account != snap.rec.AccountID {
		return nil, true, ErrNotFound
	}
	switch m := msg.(type) {
	case *GetStatus:
		// status reads only the record, the store and the chains, all
		// safe from any goroutine: a view of the actor serves it.
		view := &Actor{deps: snap.deps, id: id, rec: snap.rec}
		st, err := view.status(ctx, m.Chain)
		if err != nil {
			return nil, true, err
		}
		return st, true, nil
	default:
		return snap.rec, true, nil
	}
}

// publish makes the actor's current record the one reads see. It runs on
// the actor's goroutine after every change of a.rec or a.resumeAt, before
// the message that changed it is answered.
func (a *Actor) publish() {
	s := a.deps.Snapshots
	if s == nil || a.rec == nil {
		return
	}
	snap := &snapshot{rec: a.rec, deps: a.deps, due: a.resumeAt}
	for _, st := range a.rec.Registration {
		if st == SetupPending {
			snap.pendingSetup = true
			break
		}
	}
	s.m.Store(a.id, snap)
	a.published = snap
}

// Passivate drops the actor's snapshot as it stops: from then on reads go
// through the actor (which a new activation answers).
func (a *Actor) Passivate() {
	if s := a.deps.Snapshots; s != nil && a.published != nil {
		s.m.CompareAndDelete(a.id, a.published)
		a.published = nil
	}
}

// drop removes whatever snapshot the agent has, before an activation
// loads it (one left by an incarnation that panicked is not trusted).
func (s *Snapshots) drop(id string) {
	if s != nil {
		s.m.Delete(id)
	}
}

// Len reports how many snapshots are published (tests, metrics).
func (s *Snapshots) Len() int {
	n := 0
	s.m.Range(func(any, any) bool { n++; return true })
	return n
}
