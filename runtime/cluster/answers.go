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

	"github.com/veilhq/veil/internal/futures"
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
// answer (the last maxAnswers, for answerTTL); and a requester that has waited probeAfter asks
// the owner's router about it (a probe: a StringValue naming the request,
// answered with a StringValue state) every probeEvery:
//   - "running": the agent is still at it; wait on.
//   - "done": the owner sends the answer again, to the request's future;
//     wait on (the next probe repeats it if that one is lost too).
//   - "unknown": the owner never took the request (it was lost on the way,
//     or the owner restarted): it fails at once, retriably
//     (host.ErrMemberLost), as when a member dies with it. It is not sent
//     again: bytes held in a broken connection could still deliver it.
//     So the owner that says "unknown" also promises it: it remembers the
//     request as refused until its deadline, and should it arrive after
//     all, it is refused unprocessed. Its caller was told it failed, and a
//     payment without an Idempotency-Key that ran then would be paid again
//     by the client's retry.
//
// The probe goes through the same router as requests, after them in its
// mailbox when both come over one connection, so "unknown" is not said of
// a request still waiting there. A member of an older version has no
// probe: its router ignores one, the probe times out, and the request
// waits as before.

const (
	probeAfter = 2 * time.Second
	probeEvery = 2 * time.Second
	// answerTTL is how long an owner keeps an answer for probes: many
	// probe rounds, under load too.
	answerTTL = 30 * time.Second
	// maxAnswers bounds the answers kept (a ring: the oldest go first),
	// so memory stays at about maxAnswers answers (~1 KiB each) whatever
	// the request rate. Requests still running are kept apart: their
	// number is bounded by the requests in flight.
	maxAnswers = 8192
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
	return probedKey(future.Address, probeName(future.Id, agentID, deadline))
}

// probedKey is the requestKey of the request a probe from addr names.
func probedKey(addr, name string) string { return addr + "|" + name }

// probeName is what a probe carries: the key less the address, which the
// probe's own sender gives.
func probeName(futureID, agentID string, deadline time.Time) string {
	return futureID + "|" + agentID + "|" + strconv.FormatInt(deadline.UnixNano(), 10)
}

// answers is an owner's table of the forwarded requests it took.
type answers struct {
	mu      sync.Mutex
	now     func() time.Time
	running map[string]*actor.PID // key → the request's future
	done    map[string]int        // key → its answer's slot in ring
	ring    []answer
	next    int // the ring's slot to fill next
	// refused holds the requests a probe was told are unknown, until
	// their deadlines: past it the request is not run anyway (serve).
	refused map[string]time.Time
	swept   time.Time // when refused last dropped its expired keys
}

type answer struct {
	key   string
	reply any
	to    *actor.PID // the request's future
	at    time.Time  // when it was answered
}

func newAnswers(now func() time.Time) *answers {
	return &answers{now: now, running: map[string]*actor.PID{}, done: map[string]int{}, ring: make([]answer, maxAnswers), refused: map[string]time.Time{}}
}

// take records that the request key, answered to future, is running. It
// reports false, and records nothing, for a request a probe was told is
// unknown: that request must not run.
func (a *answers) take(key string, future *actor.PID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if until, ok := a.refused[key]; ok {
		if a.now().Before(until) {
			return false
		}
		delete(a.refused, key) // past its deadline: serve answers that
	}
	if _, ok := a.done[key]; !ok {
		a.running[key] = future
	}
	return true
}

// finish records the request's answer, in the place of the oldest one.
func (a *answers) finish(key string, reply any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	to, ok := a.running[key]
	if !ok {
		return
	}
	delete(a.running, key)
	if old := a.ring[a.next]; old.key != "" {
		delete(a.done, old.key)
	}
	a.ring[a.next] = answer{key: key, reply: reply, to: to, at: a.now()}
	a.done[key] = a.next
	a.next = (a.next + 1) % len(a.ring)
}

// state is a probe's answer for key, and the answer to send again when
// done. An answer older than answerTTL, or pushed out of the ring, is
// unknown: the request then fails retriably, as when it was lost. Unknown
// is a promise: take refuses the request from then on, until the
// deadline the key names.
func (a *answers) state(key string) (string, *answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.running[key]; ok {
		return probeRunning, nil
	}
	now := a.now()
	if i, ok := a.done[key]; ok && now.Sub(a.ring[i].at) < answerTTL {
		e := a.ring[i]
		return probeDone, &e
	}
	a.refuse(key, now)
	return probeUnknown, nil
}

// refuse records key as refused until its deadline, and now and then
// drops the keys whose deadlines have passed, so that the table holds
// only the refusals of the last deadline's worth of probes.
func (a *answers) refuse(key string, now time.Time) {
	until := now.Add(answerTTL) // a key without a readable deadline
	if i := strings.LastIndexByte(key, '|'); i >= 0 {
		if ns, err := strconv.ParseInt(key[i+1:], 10, 64); err == nil {
			until = time.Unix(0, ns)
		}
	}
	if !now.Before(until) {
		return // past its deadline: serve refuses it anyway
	}
	a.refused[key] = until
	if now.Sub(a.swept) >= answerTTL {
		a.swept = now
		for k, u := range a.refused {
			if !now.Before(u) {
				delete(a.refused, k)
			}
		}
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
	state, e := m.answers.state(probedKey(sender.Address, name))
	if e != nil {
		// The answer again, to the request's future: the first one was
		// lost, or is slow.
		m.system.Root.Send(e.to, e.reply)
		m.cfg.Log.Info("cluster answer sent again to a probe", slog.String("to", sender.Address), slog.Duration("answered_ago", m.answers.now().Sub(e.at)))
	}
	c.Send(sender, &wrapperspb.StringValue{Value: state})
}

// probe asks the member at addr about the request named name: its state,
// or "" when it gave none in time (an older member, a slow one).
func (m *Member) probe(addr, name string) string {
	fut := m.system.Root.RequestFuture(actor.NewPID(addr, routerName), &wrapperspb.StringValue{Value: name}, probeEvery)
	r, err := futures.Result(fut)
	if err != nil {
		return ""
	}
	v, ok := r.(*wrapperspb.StringValue)
	if !ok {
		return ""
	}
	return v.GetValue()
}

// errNeverTaken is why a request its owner does not know failed: it was
// lost on the way, or the owner restarted (or, long answered, forgot it).
func errNeverTaken(addr string) error {
	return fmt.Errorf("member %s never took the request (lost on the way, or it restarted)", addr)
}
