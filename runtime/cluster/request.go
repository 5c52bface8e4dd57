package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/internal/futures"
	"github.com/veilhq/veil/runtime/host"
)

// Request sends message to the agent with this id wherever it lives and
// waits for its answer, bounded by ctx. A request is delivered at most once:
// it is sent again only when it provably was not processed. If the agent's
// member dies with the request in flight, the answer is host.ErrMemberLost
// (the client retries; chat's Idempotency-Key makes that safe).
func (m *Member) Request(ctx context.Context, id string, message any) (v any, err error) {
	start := time.Now()
	remote := false
	defer func() {
		if m.cfg.Observe != nil {
			m.cfg.Observe(remote, time.Since(start), err)
		}
	}()
	if m.stopping.Load() {
		return nil, host.ErrStopping
	}
	for attempt := 0; ; attempt++ {
		if err := m.fencedErr(); err != nil {
			return nil, fmt.Errorf("agent %s: %w", id, err)
		}
		m.mu.RLock()
		self := m.self
		to := owner(m.members, id, self)
		changed := m.changed
		m.mu.RUnlock()
		if to == self {
			return m.cfg.Host.Request(ctx, id, message)
		}
		remote = true
		v, err, again := m.forward(ctx, to, id, message)
		if !again {
			return v, err
		}
		last := err // why it was not taken, for the caller if it never is
		// Not delivered: wait for the topology to move on (or a little,
		// in case this member's view is the stale one), then route again.
		wait := time.Duration(attempt+1) * 50 * time.Millisecond
		if wait > time.Second {
			wait = time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("cluster: agent %s: its member %s did not take the request (last: %v): %w", id, to, last, ctx.Err())
		}
		t.Stop()
	}
}

// forward sends one request to the member at addr. again reports that it
// was certainly not processed and may be sent again; err then says why.
func (m *Member) forward(ctx context.Context, addr, id string, message any) (v any, err error, again bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(m.cfg.DefaultTimeout)
	}
	req, err := m.cfg.Codec.EncodeRequest(id, message, deadline, m.selfID())
	if err != nil {
		return nil, err, false
	}
	c := &call{lost: make(chan struct{})}
	m.mu.Lock()
	if m.inflight[addr] == nil {
		m.inflight[addr] = map[*call]struct{}{}
	}
	m.inflight[addr][c] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.inflight[addr], c)
		m.mu.Unlock()
	}()

	// The future outlives the deadline a little so that the host's own
	// timeout answer, not ours, reaches the caller.
	fut := m.system.Root.RequestFuture(actor.NewPID(addr, routerName), req, time.Until(deadline)+time.Second)
	// The name the owner knows this request by, for probes (answers.go):
	// the deadline as the owner reads it from the envelope.
	_, sent, _ := m.cfg.Codec.ReadRequest(req)
	name := probeName(fut.PID().Id, id, sent)
	type result struct {
		v   any
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := futures.Result(fut)
		done <- result{r, err}
	}()
	probeT := time.NewTimer(probeAfter)
	defer probeT.Stop()
	probed := make(chan string, 1)
	for {
		select {
		case r := <-done:
			return m.answered(id, addr, r.v, r.err)
		case <-c.lost:
			return nil, fmt.Errorf("agent %s: member %s left the cluster with the request in flight: %w", id, addr, host.ErrMemberLost), false
		case <-ctx.Done():
			return nil, ctx.Err(), false
		case <-probeT.C:
			go func() { probed <- m.probe(addr, name) }()
		case state := <-probed:
			if state == probeUnknown {
				return nil, fmt.Errorf("agent %s: %w: %w", id, errNeverTaken(addr), host.ErrMemberLost), false
			}
			// running, done (its answer is on its way again), or no
			// answer to the probe (an older member, a slow one): wait on.
			probeT.Reset(probeEvery)
		}
	}
}

// answered reads the answer (v, err) of a request forwarded to addr.
func (m *Member) answered(id, addr string, v any, err error) (any, error, bool) {
	switch {
	case errors.Is(err, actor.ErrDeadLetter):
		return nil, fmt.Errorf("no router at %s (dead letter)", addr), true
	case errors.Is(err, actor.ErrTimeout):
		return nil, fmt.Errorf("agent %s on member %s: %w", id, addr, host.ErrTimeout), false
	case err != nil:
		return nil, fmt.Errorf("agent %s on member %s: %w", id, addr, err), false
	}
	code, ok := m.cfg.Codec.ReplyCode(v)
	if !ok {
		// Remoting answers an unknown target with a dead letter.
		if _, dl := v.(*actor.DeadLetterResponse); dl {
			return nil, fmt.Errorf("no router at %s (dead letter)", addr), true
		}
		return nil, fmt.Errorf("agent %s on member %s answered %T", id, addr, v), false
	}
	if code == codeNotOwner || code == codeFenced {
		// Refused unprocessed: route again once the views agree (or
		// the fenced member has left them).
		_, why := m.cfg.Codec.DecodeReply(v)
		return nil, why, true
	}
	out, err := m.cfg.Codec.DecodeReply(v)
	return out, err, false
}

// receive is the router actor: it takes requests from other members and
// runs each on its own goroutine, so one slow agent never holds up another.
func (m *Member) receive(c actor.Context) {
	req := c.Message()
	if name, ok := isProbe(req); ok {
		if sender := c.Sender(); sender != nil {
			m.answerProbe(c, sender, name)
		}
		return
	}
	id, deadline, ok := m.cfg.Codec.ReadRequest(req)
	if !ok {
		return
	}
	sender := c.Sender()
	if sender == nil {
		return
	}
	if lose := m.lose.Load(); lose != nil && (*lose)("request", id, req, sender) {
		return
	}
	key := requestKey(sender, id, deadline)
	taken := m.answers.take(key, sender)
	// Fencing is decided when the request is taken off the wire: one that
	// waited in a buffer while this process was paused is refused even if
	// the watchdog has not run yet.
	fenced := m.Fenced()
	if !taken {
		// Held up on its way past its requester's probe, which this
		// member answered "unknown": the requester failed it then, and
		// its caller may have been told so (answers.go).
		fenced = "its requester's probe was told it never arrived, and failed it"
	}
	if fenced == "" {
		fenced = m.senderGone(sender.Address, m.cfg.Codec.RequestSender(req))
	}
	go func() {
		reply := m.serve(req, fenced)
		m.answers.finish(key, reply)
		if lose := m.lose.Load(); lose != nil && (*lose)("answer", id, reply, sender) {
			return
		}
		m.system.Root.Send(sender, reply)
	}()
}

// selfID is this member's id in the topology, as the provider names it
// (automanaged: the actor system's id; k8s: a label of its own), or ""
// before this member has seen itself in one.
func (m *Member) selfID() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.addrIDs[m.self]
}

// senderGone says why a request from the member at addr, whose process
// the envelope names memberID ("" from an earlier version), must not run,
// or "" when its sender is in this member's topology.
func (m *Member) senderGone(addr, memberID string) string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !slices.Contains(m.members, addr) {
		// From a member this one has dropped: sent before the topology
		// change, and held up since (a partition holds the bytes and
		// delivers them when it heals). Its sender failed it when it
		// dropped this member in turn, and its caller may have been told
		// so: it must not run now.
		return fmt.Sprintf("the sender %s is not in its topology", addr)
	}
	if memberID != "" && !m.ids[memberID] {
		// From a process its topology does not hold, at an address it
		// does: one restarted there since. The old one failed its
		// requests when it went (or never answered anyone), and what it
		// sent arrives now only as bytes its connection held.
		return fmt.Sprintf("the sender %s (member %s) is not in its topology: another process has its address", addr, memberID)
	}
	return ""
}

// serve runs one forwarded request on the local host, unless this member
// was fenced when it arrived (why).
func (m *Member) serve(req any, why string) any {
	id, deadline, _ := m.cfg.Codec.ReadRequest(req)
	if m.stopping.Load() {
		return m.cfg.Codec.EncodeReply(nil, host.ErrStopping)
	}
	if why != "" {
		// Refused unprocessed: the sender routes it again, or its caller
		// has already been told it failed (a request that waited out a
		// pause here must not run after that).
		return m.cfg.Codec.Refusal(codeFenced, fmt.Sprintf("member %s is fenced: %s", m.Self(), why))
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		// Its caller has its answer (a timeout) already.
		return m.cfg.Codec.EncodeReply(nil, fmt.Errorf("agent %s: the request's deadline passed before it could run: %w", id, context.DeadlineExceeded))
	}
	if o, self := m.Owner(id), m.Self(); o != self {
		// Refused unprocessed: the sender routes again once the views agree,
		// and the agent is never active on two members meanwhile.
		return m.cfg.Codec.Refusal(codeNotOwner, fmt.Sprintf("member %s does not own agent %s (its owner is %s)", self, id, o))
	}
	message, err := m.cfg.Codec.DecodeRequest(req)
	if err != nil {
		m.cfg.Log.Error("undecodable request from another member", slog.String("agent", id), slog.Any("err", err))
		return m.cfg.Codec.EncodeReply(nil, err)
	}
	ctx := context.Background()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	v, err := m.cfg.Host.Request(ctx, id, message)
	return m.cfg.Codec.EncodeReply(v, err)
}

// registerErrors adds the runtime's errors to the codec, after the agent's
// own kinds (which are more specific).
func registerErrors(c Codec) {
	for _, s := range []struct {
		code string
		err  error
	}{
		{"host.panic", host.ErrActorPanic},
		{"host.stopping", host.ErrStopping},
		{"host.timeout", host.ErrTimeout},
		{"host.member-lost", host.ErrMemberLost},
		{"host.fenced", host.ErrFenced},
		{"host.stale", host.ErrStale},
		{"context.deadline", context.DeadlineExceeded},
		{"context.canceled", context.Canceled},
		{codeNotOwner + ".local", errNotOwner},
	} {
		if !c.Known(s.code) { // several members may share one codec (tests)
			c.RegisterSentinel(s.code, s.err)
		}
	}
}
