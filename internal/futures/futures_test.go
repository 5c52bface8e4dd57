package futures_test

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/internal/futures"
)

// futures.Result answers what Future.Result would: the answer of an
// answered future, the time-out of one that timed out.
func TestResult(t *testing.T) {
	system := actor.NewActorSystem()
	release := make(chan struct{})
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case string:
			if m == "slow" {
				<-release
			}
			c.Respond(m + "!")
		}
	}))
	defer system.Root.Stop(pid)

	v, err := futures.Result(system.Root.RequestFuture(pid, "fast", time.Minute))
	if err != nil || v != "fast!" {
		t.Fatalf("answered future: %v, %v; want fast!", v, err)
	}
	// A future that timed out answers the time-out and no value, even
	// when the answer comes afterwards (it goes to dead letters then).
	// The race the package avoids, an answer written while the time-out
	// resolves the future, cannot be timed from a test; the package
	// comment gives the argument.
	f := system.Root.RequestFuture(pid, "slow", time.Millisecond)
	if err := f.Wait(); !errors.Is(err, actor.ErrTimeout) {
		t.Fatalf("Wait = %v, want %v", err, actor.ErrTimeout)
	}
	close(release)
	v, err = futures.Result(f)
	if !errors.Is(err, actor.ErrTimeout) || v != nil {
		t.Fatalf("timed-out future: %v, %v; want nil, %v", v, err, actor.ErrTimeout)
	}
	// The actor goes on answering after the late answer.
	if v, err := futures.Result(system.Root.RequestFuture(pid, "after", time.Minute)); err != nil || v != "after!" {
		t.Fatalf("next future: %v, %v", v, err)
	}
}
