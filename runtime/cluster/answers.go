package cluster

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Answers that protoactor loses (issue 37, the heal benchmark's 30 s
// outliers). A forwarded request and its answer each cross one remote
// endpoint, and protoactor drops what an endpoint holds when it ends — and
// it ends an address's current endpoint on any EndpointTerminatedEvent
// for that address, a stale one's too: right after a member restarts at
// its address, the others' endpoints to that address churn, and an answer
// on its way back can be dropped with no signal to either side. The
// requester then waited for its whole deadline although the agent had
// answered within milliseconds.
//
// So the owner remembers, per request, that it is running and then its
// answer, for answerTTL; and a requester that has waited probeAfter asks
// the owner's router about it (a probe: a StringValue naming the request,
// answered with a StringValue state) every probeEvery:
//   - "running": the agent is still at it; wait on.
//   - "done": the owner sends the answer again, to the request's future;
//     wait on (the next probe repeats it if that one is lost too).
//   - "unknown": the owner never took the request (it was lost on the way,
//     or the owner restarted): it fails at once, retriably
//     (host.ErrMemberLost), as when a member dies with it. It is not sent
//     again: bytes held in a broken connection could still deliver it.
//
// The probe goes through the same router as requests, after them in its
// mailbox when both come over one connection, so "unknown" is not said of
// a request still waiting there. A member of an older version has no
// probe: its router ignores one, the probe times out, and the request
// waits as before.

const (
	probeAfter = 2 * time.Second
	probeEvery = 2 * time.Second
	// answerTTL is how long an owner keeps an answer for probes: longer
	// than a probe round trip under load, short enough to stay small.
	answerTTL = 2 * time.Minute
	// maxAnswers bounds the table; the oldest go first.
	maxAnswers = 100_000
)

// Probe states.
const (
	probeRunning = "running"
	probeDone    = "done"
	probeUnknown = "unknown"
)

// requestKey names a forwarded request on its owner: the requester's
// future (address and id, unique within its process), the agent and the
// deadline, to the nanosecond, which a new process at the same address
// reusing a future id does not repeat.
func requestKey(future *actor.PID, agentID string, deadline time.Time) string {
	return future.Address + "|" + probeName(future.Id, agentID, deadline)
}

// probeName is what a probe carries: the key less the address, which the
// probe's own sender gives.
func probeName(futureID, agentID string, deadline time.Time) string {
	return futureID + "|" + agentID + "|" + strconv.FormatInt(deadline.UnixNano(), 10)
}

// answers is an owner's table of the forwarded requests it took.
type answers struct {
	mu    sync.Mutex
	now   func() time.Time
	byKey map[string]*answer
	order []string // keys in the order taken, for expiry
}

type answer struct {
	reply any        // nil while running
	to    *actor.PID // the request's future
	done  time.Time
}

func newAnswers(now func() time.Time) *answers {
	return &answers{now: now, byKey: map[string]*answer{}}
}

// take records that the request key, answered to future, is running.
func (a *answers) take(key string, future *actor.PID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire()
	if _, ok := a.byKey[key]; ok {
		return
	}
	a.byKey[key] = &answer{to: future}
	a.order = append(a.order, key)
}

// done records the request's answer.
func (a *answers) done(key string, reply any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.byKey[key]; ok {
		e.reply, e.done = reply, a.now()
	}
}

// state is a probe's answer for key, and the answer to send again when done.
func (a *answers) state(key string) (string, *answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.byKey[key]
	switch {
	case !ok:
		return probeUnknown, nil
	case e.reply == nil:
		return probeRunning, nil
	default:
		return probeDone, e
	}
}

// expire drops answers older than answerTTL, and the oldest entries over
// maxAnswers. Entries still running are kept unless over the bound.
func (a *answers) expire() {
	now := a.now()
	drop := 0
	for drop < len(a.order) {
		e := a.byKey[a.order[drop]]
		over := len(a.order)-drop > maxAnswers
		if e != nil && !over && (e.reply == nil || now.Sub(e.done) < answerTTL) {
			break
		}
		delete(a.byKey, a.order[drop])
		drop++
	}
	if drop > 0 {
		a.order = append(a.order[:0:0], a.order[drop:]...)
	}
}

// isProbe reports whether envelope is a probe, and its name.
func isProbe(envelope any) (string, bool) {
	v, ok := envelope.(*wrapperspb.StringValue)
	if !ok || !strings.Contains(v.GetValue(), "|") {
		return "", false
	}
	return v.GetValue(), true
}

// answerProbe is the router's answer to a probe from sender.
func (m *Member) answerProbe(c actor.Context, sender *actor.PID, name string) {
	state, e := m.answers.state(sender.Address + "|" + name)
	if e != nil {
		// The answer again, to the request's future: the first one was
		// lost, or is slow.
		m.system.Root.Send(e.to, e.reply)
		m.cfg.Log.Info("cluster answer sent again to a probe", slog.String("to", sender.Address), slog.Duration("answered_ago", time.Since(e.done)))
	}
	c.Send(sender, &wrapperspb.StringValue{Value: state})
}

// probe asks the member at addr about the request named name: its state,
// or "" when it gave none in time (an older member, a slow one).
func (m *Member) probe(addr, name string) string {
	fut := m.system.Root.RequestFuture(actor.NewPID(addr, routerName), &wrapperspb.StringValue{Value: name}, probeEvery)
	r, err := fut.Result()
	if err != nil {
		return ""
	}
	v, ok := r.(*wrapperspb.StringValue)
	if !ok {
		return ""
	}
	return v.GetValue()
}

// errNeverTaken is why a request its owner says it never took failed.
func errNeverTaken(addr string) error {
	return fmt.Errorf("member %s never took the request (lost on the way, or it restarted)", addr)
}
