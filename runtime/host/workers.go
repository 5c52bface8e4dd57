package host

import (
	"sync"
	"sync/atomic"
)

// workers dispatches the agents' mailboxes: a mailbox with messages runs
// on a goroutine that has run one before, when one is idle, instead of on
// a new goroutine each time (protoactor's default dispatcher). A chat's
// call chain is deep (the planner, the tools, the store), so a new
// goroutine grew its stack by copying two or three times per chat, ~4% of
// a chat's CPU (docs/BENCHMARKS.md); a worker keeps the stack it grew
// while it stays busy. At most maxIdle workers wait for work: the others
// exit, so a burst leaves no crowd of goroutines behind.
type workers struct {
	idle    chan func() // unbuffered: a send succeeds only while a worker waits
	waiting atomic.Int32
	maxIdle int32
	quit    chan struct{}
	stopped sync.Once
}

func newWorkers(maxIdle int) *workers {
	return &workers{idle: make(chan func()), maxIdle: int32(maxIdle), quit: make(chan struct{})}
}

// Schedule runs fn on an idle worker, or on a new one when none waits:
// never queued behind another mailbox, which could be waiting on this one.
func (w *workers) Schedule(fn func()) {
	select {
	case w.idle <- fn:
	default:
		go w.run(fn)
	}
}

// Throughput is the messages a mailbox handles before it yields its
// worker: protoactor's default.
func (w *workers) Throughput() int { return 300 }

func (w *workers) run(fn func()) {
	for {
		fn()
		if w.waiting.Add(1) > w.maxIdle {
			w.waiting.Add(-1)
			return
		}
		select {
		case fn = <-w.idle:
			w.waiting.Add(-1)
		case <-w.quit:
			w.waiting.Add(-1)
			return
		}
	}
}

// stop lets the idle workers exit; a mailbox scheduled after it still
// runs, on a goroutine that then exits. A second stop does nothing.
func (w *workers) stop() { w.stopped.Do(func() { close(w.quit) }) }
