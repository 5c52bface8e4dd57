package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestAnswersTable: a request is unknown until taken, running until
// answered, done with its answer for answerTTL, then forgotten; a running
// one is kept however old, and the table holds at most maxAnswers.
func TestAnswersTable(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	a := newAnswers(func() time.Time { return now })
	future := actor.NewPID("127.0.0.1:1", "future$1")
	deadline := now.Add(time.Minute)
	key := requestKey(future, "agent", deadline)
	if key != "127.0.0.1:1|"+probeName("future$1", "agent", deadline) {
		t.Fatalf("key %q does not extend the probe's name with the address", key)
	}
	if s, _ := a.state(key); s != probeUnknown {
		t.Fatalf("before take: %s", s)
	}
	a.take(key, future)
	if s, _ := a.state(key); s != probeRunning {
		t.Fatalf("taken: %s", s)
	}
	a.done(key, "the answer")
	s, e := a.state(key)
	if s != probeDone || e == nil || e.reply != "the answer" || e.to != future {
		t.Fatalf("answered: %s %+v", s, e)
	}
	other := requestKey(future, "agent", deadline.Add(time.Nanosecond))
	if s, _ := a.state(other); s != probeUnknown {
		t.Fatalf("another deadline (a new process reusing the future id) sees %s", s)
	}

	running := requestKey(future, "slow", deadline)
	a.take(running, future)
	now = now.Add(answerTTL)
	a.take(requestKey(future, "later", deadline), future) // expires on the way
	if s, _ := a.state(key); s != probeUnknown {
		t.Fatalf("after answerTTL: %s, want forgotten", s)
	}
	// The running one was taken before the expired answer's neighbour and
	// is kept: only answers expire by age.
	if s, _ := a.state(running); s != probeRunning {
		t.Fatalf("a running request after answerTTL: %s", s)
	}

	for i := 0; i < maxAnswers+10; i++ {
		a.take(fmt.Sprintf("k%d", i), future)
	}
	if n := len(a.byKey); n > maxAnswers+1 {
		t.Fatalf("%d entries, want at most %d", n, maxAnswers+1)
	}
	if s, _ := a.state(running); s != probeUnknown {
		t.Fatalf("the oldest entry over the bound: %s, want dropped", s)
	}
}
