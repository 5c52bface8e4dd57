package host

import (
	"runtime"
	"sync"
	"testing"
)

// waitFor spins until cond holds: the workers' state changes on other
// goroutines, without a signal the test could wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 10_000_000 {
			t.Fatalf("never: %s", what)
		}
		runtime.Gosched()
	}
}

// TestWorkersReuseNeverQueueAndStayBounded: a mailbox scheduled while a
// worker waits runs on it; one scheduled while every worker is busy runs
// at once on a new one (a worker busy with a mailbox that waits on this
// one must not hold it up); at most maxIdle wait afterwards, and stop
// lets them go.
func TestWorkersReuseNeverQueueAndStayBounded(t *testing.T) {
	w := newWorkers(2)
	done := make(chan struct{})
	w.Schedule(func() { close(done) })
	<-done
	waitFor(t, "the first worker waits", func() bool { return w.waiting.Load() == 1 })

	// Reuse: the waiting worker takes the next mailbox.
	ran := make(chan struct{})
	w.Schedule(func() { close(ran) })
	<-ran
	waitFor(t, "the worker waits again", func() bool { return w.waiting.Load() == 1 })

	// Never queued: five mailboxes that each wait for the next one
	// scheduled after them all run, though only one worker waited.
	const n = 5
	var release [n + 1]chan struct{}
	for i := range release {
		release[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		w.Schedule(func() {
			defer wg.Done()
			<-release[i+1] // waits on the mailbox scheduled after it
			close(release[i])
		})
	}
	close(release[n])
	wg.Wait()
	<-release[0]

	// Bounded: of the five workers now free, two wait.
	waitFor(t, "two workers wait", func() bool { return w.waiting.Load() == 2 })
	for i := 0; i < 100; i++ {
		runtime.Gosched()
	}
	if got := w.waiting.Load(); got != 2 {
		t.Fatalf("%d workers wait, want at most 2", got)
	}

	w.stop()
	waitFor(t, "the waiting workers exit", func() bool { return w.waiting.Load() == 0 })
	// A mailbox scheduled after stop still runs.
	late := make(chan struct{})
	w.Schedule(func() { close(late) })
	<-late
}
