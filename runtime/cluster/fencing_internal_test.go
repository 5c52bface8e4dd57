package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/runtime/host"
)

// The watchdog tick that sees a pause fences the member before it records
// the tick: Fenced reads the gap until then and the reason after, so a
// request taken off the wire while the process resumes is refused
// whichever goroutine runs first. (Recording the tick and fencing in two
// steps left a moment in which a request that had waited out the pause,
// and whose sender had already told its caller it failed, ran.)
func TestATickThatSeesAPauseFencesAtOnce(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem()
	h := host.NewHost(system, func(context.Context, string) (host.Agent, error) {
		return nil, errors.New("no agents here")
	}, host.HostConfig{}, log, nil)
	t.Cleanup(func() { _ = h.Stop(context.Background()); system.Shutdown() })
	m := &Member{cfg: Config{Log: log, Host: h}}
	m.fence.init()

	t0 := time.Now()
	m.tick(t0)
	for _, tc := range []struct {
		name   string
		at     time.Time
		paused bool
	}{
		{"a tick on time", t0.Add(tick), false},
		{"a tick just under the gap", t0.Add(tick + pauseGap - time.Millisecond), false},
		{"the first tick after a pause", t0.Add(tick + pauseGap - time.Millisecond + pauseGap + time.Second), true},
	} {
		m.tick(tc.at)
		m.mu.RLock()
		// At the tick's own time: the gap is no longer visible, only the
		// reason can fence.
		why := m.fencedLocked(tc.at)
		m.mu.RUnlock()
		if got := why != ""; got != tc.paused {
			t.Fatalf("%s: fenced %q, want fenced = %v", tc.name, why, tc.paused)
		}
	}
}
