// Package groupcommit is the queue both stores (bbolt and PostgreSQL) put
// their Apply calls on. An fsync or a WAL flush costs milliseconds, so one
// transaction per Apply caps a store at a few hundred writes a second
// however many writers wait. Instead, Apply queues its batch and a single
// committer goroutine takes every batch queued so far (up to a count and a
// byte bound) and hands the group to the store, which commits it in one
// transaction and answers each request. How a group is committed, and how
// each batch keeps its own all-or-nothing outcome inside it, is the
// store's (persistence/bolt_commit.go, persistence/postgres/commit.go).
//
// The queue also owns the store's gate (persistence/internal/gate): every
// call enters it, and Close stops admitting calls, waits for the admitted
// ones (their batches commit normally) and only then stops the committer,
// so nothing is ever left in the queue.
package groupcommit

import (
	"context"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/veilhq/veil/persistence/internal/gate"
)

// Request is one Apply call: the store's batch, and its answer once the
// group that holds it has committed.
type Request[B any] struct {
	Batch B
	// Size is the bytes of values in Batch, for the queue's byte bound.
	Size int
	// Versions and Err are the answer; the store sets them and calls Done.
	Versions []uint64
	Err      error

	// taken is set by the committer, under Queue.mu, when it removes the
	// request from the queue; from then on the caller must wait for done.
	taken bool
	done  chan struct{}
}

// NewRequest returns a request for batch, whose values take size bytes.
func NewRequest[B any](batch B, size int) *Request[B] {
	return &Request[B]{Batch: batch, Size: size, done: make(chan struct{})}
}

// Done answers the caller with Versions and Err. The store calls it once
// per request of a group, after the group's outcome is known.
func (r *Request[B]) Done() { close(r.done) }

// Answer answers every request of a committed (or failed) group, then
// tells each observer that is set the group's size and how long its
// commit took: the callers are never kept waiting for a metric.
func Answer[B any](group []*Request[B], commit time.Duration, observers ...func(batches int, commit time.Duration)) {
	for _, r := range group {
		r.Done()
	}
	for _, o := range observers {
		if o != nil {
			o(len(group), commit)
		}
	}
}

// Queue holds the requests not yet taken and runs the committer.
type Queue[B any] struct {
	gate gate.Gate // admits calls until Close

	direct             bool // no committer: each request commits alone (Config.Direct)
	maxGroup, maxBytes int
	commit             func(group []*Request[B])
	// enqueued, when set, is called after each request joins the queue
	// (tests steer the committer with it).
	enqueued func()

	mu    sync.Mutex
	queue []*Request[B]

	wake chan struct{} // capacity 1: "the queue may be non-empty"
	quit chan struct{}
	exit chan struct{}
}

// Config is what Start needs of the store.
type Config[B any] struct {
	// Direct runs no committer: Apply commits each request alone, on its
	// caller's goroutine (a store's NoGroupCommit, which measures what
	// group commit buys).
	Direct bool
	// MaxGroup and MaxBytes bound a group: at most MaxGroup requests and
	// MaxBytes of values (0: no byte bound; a group holds at least one
	// request whatever its size).
	MaxGroup, MaxBytes int
	// Commit commits a group and must answer every request of it (Answer).
	Commit func(group []*Request[B])
	// Enqueued, when set, is called after each request joins the queue.
	Enqueued func()
}

// Start returns an open queue and, unless c.Direct, runs its committer.
func Start[B any](c Config[B]) *Queue[B] {
	q := &Queue[B]{
		direct: c.Direct, maxGroup: c.MaxGroup, maxBytes: c.MaxBytes, commit: c.Commit, enqueued: c.Enqueued,
		wake: make(chan struct{}, 1),
		quit: make(chan struct{}),
		exit: make(chan struct{}),
	}
	if q.direct {
		close(q.exit)
	} else {
		go q.run()
	}
	return q
}

// Enter admits a call: it returns ctx's error when ctx has ended, and
// gate.ErrClosed once Close has begun. Every admitted call must call Leave.
func (q *Queue[B]) Enter(ctx context.Context) error { return q.gate.Enter(ctx) }

// Leave ends a call Enter admitted.
func (q *Queue[B]) Leave() { q.gate.Leave() }

// Close rejects new calls, waits for the admitted ones (their batches
// commit normally) and stops the committer. It reports false when the
// queue was already closed; the store then has nothing more to release.
func (q *Queue[B]) Close() bool {
	if !q.gate.Close() {
		return false
	}
	close(q.quit)
	<-q.exit
	return true
}

// Len is the number of requests waiting to be taken.
func (q *Queue[B]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// Apply admits the call (Enter), queues r and returns its answer. A
// request whose ctx ends while it is still queued is withdrawn and Apply
// returns ctx.Err(); once the committer has taken it, Apply waits for the
// real outcome, because the write may already be durable.
func (q *Queue[B]) Apply(ctx context.Context, r *Request[B]) ([]uint64, error) {
	if err := q.Enter(ctx); err != nil {
		return nil, err
	}
	defer q.Leave()
	if q.direct {
		q.commit([]*Request[B]{r})
		return r.Versions, r.Err
	}
	q.enqueue(r)
	if q.enqueued != nil {
		q.enqueued()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if q.withdraw(r) {
			return nil, ctx.Err()
		}
		<-r.done
	}
	return r.Versions, r.Err
}

func (q *Queue[B]) run() {
	// A CPU profile tells the committer's samples by this label
	// (go tool pprof -tagfocus stage=commit): the one serial stage of
	// every write.
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("stage", "commit")))
	defer close(q.exit)
	for {
		select {
		case <-q.wake:
		case <-q.quit:
			return
		}
		for {
			group := q.take()
			if len(group) == 0 {
				break
			}
			q.commit(group)
		}
	}
}

// take removes requests from the head of the queue, up to maxGroup
// requests and maxBytes of values.
func (q *Queue[B]) take() []*Request[B] {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, bytes := 0, 0
	for n < len(q.queue) && n < q.maxGroup {
		if q.maxBytes > 0 && n > 0 && bytes+q.queue[n].Size > q.maxBytes {
			break
		}
		bytes += q.queue[n].Size
		n++
	}
	group := make([]*Request[B], n)
	copy(group, q.queue)
	for _, r := range group {
		r.taken = true
	}
	// Shift rather than reslice so the backing array does not pin answered
	// requests, and stays reusable.
	rest := copy(q.queue, q.queue[n:])
	clear(q.queue[rest:])
	q.queue = q.queue[:rest]
	return group
}

func (q *Queue[B]) enqueue(r *Request[B]) {
	q.mu.Lock()
	q.queue = append(q.queue, r)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// withdraw removes r from the queue if the committer has not taken it yet,
// and reports whether it did.
func (q *Queue[B]) withdraw(r *Request[B]) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.taken {
		return false
	}
	for i, x := range q.queue {
		if x == r {
			n := copy(q.queue[i:], q.queue[i+1:])
			q.queue[i+n] = nil
			q.queue = q.queue[:i+n]
			break
		}
	}
	return true
}
