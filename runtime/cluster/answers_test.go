package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestAnswersTable: a request is unknown until taken, running until
// answered (however long), then done with its answer for answerTTL while
// it is among the last maxAnswers answers, and unknown after. A request
// a probe found unknown is refused when it arrives, until its deadline.
func TestAnswersTable(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	a := newAnswers(func() time.Time { return now })
	future := actor.NewPID("127.0.0.1:1", "future$1")
	deadline := now.Add(time.Minute)
	key := requestKey(future, "agent", deadline)
	if key != "127.0.0.1:1|"+probeName("future$1", "agent", deadline) {
		t.Fatalf("key %q does not extend the probe's name with the address", key)
	}

	late := requestKey(future, "late", deadline)
	if s, _ := a.state(late); s != probeUnknown {
		t.Fatalf("before take: %s", s)
	}
	if a.take(late, future) {
		t.Fatal("a request taken after a probe was told it is unknown")
	}
	if s, _ := a.state(late); s != probeUnknown {
		t.Fatalf("a refused request: %s", s)
	}
	if !a.take(key, future) {
		t.Fatal("a request no probe asked about was refused")
	}
	if s, _ := a.state(key); s != probeRunning {
		t.Fatalf("taken: %s", s)
	}
	a.finish(key, "the answer")
	s, e := a.state(key)
	if s != probeDone || e == nil || e.reply != "the answer" || e.to != future {
		t.Fatalf("answered: %s %+v", s, e)
	}
	if s, _ := a.state(requestKey(future, "agent", deadline.Add(time.Nanosecond))); s != probeUnknown {
		t.Fatalf("another deadline (a new process reusing the future id) sees %s", s)
	}

	slow := requestKey(future, "slow", deadline)
	a.take(slow, future)
	// A refusal lasts until the request's deadline, and is dropped after.
	soon := requestKey(future, "soon", now.Add(time.Second))
	a.state(soon)
	if len(a.refused) != 3 { // late, the other deadline's, soon
		t.Fatalf("%d refusals kept, want 3", len(a.refused))
	}
	now = now.Add(time.Second)
	if !a.take(soon, future) {
		t.Fatal("a refusal held past its request's deadline")
	}
	a.finish(soon, "late")
	now = now.Add(answerTTL - time.Second)
	if s, _ := a.state(key); s != probeUnknown {
		t.Fatalf("after answerTTL: %s, want forgotten", s)
	}
	if s, _ := a.state(slow); s != probeRunning {
		t.Fatalf("a request running past answerTTL: %s", s)
	}

	// The ring: maxAnswers more answers push the first out; the running
	// one stays.
	first := requestKey(future, "first", deadline)
	a.take(first, future)
	a.finish(first, "1")
	for i := 0; i < maxAnswers; i++ {
		k := fmt.Sprintf("k%d", i)
		a.take(k, future)
		a.finish(k, i)
	}
	if s, _ := a.state(first); s != probeUnknown {
		t.Fatalf("an answer pushed out of the ring: %s", s)
	}
	if s, _ := a.state(fmt.Sprintf("k%d", maxAnswers-1)); s != probeDone {
		t.Fatalf("the newest answer: %s", s)
	}
	if s, _ := a.state(slow); s != probeRunning {
		t.Fatalf("the running request after the ring turned: %s", s)
	}
	if len(a.done) != maxAnswers || len(a.running) != 1 {
		t.Fatalf("%d answers and %d running kept, want %d and 1", len(a.done), len(a.running), maxAnswers)
	}
	// The probes above found expired keys only: past every deadline, the
	// refusals are swept.
	now = deadline.Add(answerTTL)
	a.state(requestKey(future, "new", now.Add(time.Minute)))
	if len(a.refused) != 1 {
		t.Fatalf("%d refusals kept after their deadlines, want only the new one", len(a.refused))
	}
}
