package persistence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// gated is a store whose committer stops before every group's transaction
// until the test releases it, so that tests can line batches up in the queue
// without sleeping.
type gated struct {
	*Bolt
	path    string
	sizes   chan int      // size of each group the committer took
	release chan struct{} // one token lets one group commit
	queued  chan struct{} // one per Apply that joined the queue
}

// openGated opens a store whose committer waits for a token per group;
// txErr, when set, is the error each group's transaction fails with (the
// FailBeforeCommit failpoint; nil lets it commit).
func openGated(t *testing.T, opts BoltOptions, txErr func() error) *gated {
	t.Helper()
	g := &gated{
		path:    filepath.Join(t.TempDir(), "veil.db"),
		sizes:   make(chan int, 1024),
		release: make(chan struct{}),
		queued:  make(chan struct{}, 1024),
	}
	if txErr != nil {
		opts.Failpoint = func(name string) error {
			if name == FailBeforeCommit {
				return txErr()
			}
			return nil
		}
	}
	s, err := openBolt(g.path, opts, testHooks{
		enqueued: func() { g.queued <- struct{}{} },
		taken: func(n int) {
			g.sizes <- n
			<-g.release
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Bolt = s
	t.Cleanup(func() {
		close(g.release) // let any blocked group through
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return g
}

type result struct {
	versions []uint64
	err      error
}

// start runs Apply in a goroutine and returns once the batch is queued.
func (g *gated) start(ctx context.Context, ops ...Op) <-chan result {
	out := make(chan result, 1)
	go func() {
		vs, err := g.Apply(ctx, ops...)
		out <- result{vs, err}
	}()
	<-g.queued
	return out
}

// hold queues a first batch and waits until the committer has taken it and
// stopped, so that everything queued next lands in the following group.
func (g *gated) hold(t *testing.T) <-chan result {
	t.Helper()
	r := g.start(context.Background(), Put("hold", "k", nil, Any()))
	if n := <-g.sizes; n != 1 {
		t.Fatalf("first group has %d batches, want 1", n)
	}
	return r
}

func (g *gated) next() { g.release <- struct{}{} }

func ok(t *testing.T, r result) []uint64 {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Apply: %v", r.err)
	}
	return r.versions
}

func TestGroupCommitTakesEveryQueuedBatch(t *testing.T) {
	tests := []struct {
		maxGroup int
		batches  int
		groups   []int
	}{
		{0, 10, []int{10}},
		{4, 10, []int{4, 4, 2}},
		{1, 3, []int{1, 1, 1}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("max%d", tc.maxGroup), func(t *testing.T) {
			g := openGated(t, BoltOptions{MaxGroup: tc.maxGroup}, nil)
			first := g.hold(t)
			var rs []<-chan result
			for i := range tc.batches {
				rs = append(rs, g.start(context.Background(), Put("t", fmt.Sprint(i), nil, Absent())))
			}
			g.next()
			ok(t, <-first)
			for i, want := range tc.groups {
				if n := <-g.sizes; n != want {
					t.Fatalf("group %d has %d batches, want %d", i, n, want)
				}
				g.next()
			}
			for _, r := range rs {
				if vs := ok(t, <-r); vs[0] != 1 {
					t.Fatalf("version %d, want 1", vs[0])
				}
			}
		})
	}
}

// Batches of one group see each other in queue order, and a conflict in one
// leaves the others alone.
func TestGroupCommitBatchesAreIndependent(t *testing.T) {
	ctx := context.Background()
	g := openGated(t, BoltOptions{}, nil)
	first := g.hold(t)
	a := g.start(ctx, Put("t", "x", []byte("1"), Absent()))
	b := g.start(ctx, Put("t", "x", []byte("2"), Absent()), Put("t", "b", nil, Any()))
	c := g.start(ctx, Put("t", "y", []byte("y"), Absent()))
	d := g.start(ctx, Put("t", "x", []byte("3"), AtVersion(1)))
	g.next()
	ok(t, <-first)
	if n := <-g.sizes; n != 4 {
		t.Fatalf("group of %d, want 4", n)
	}
	g.next()
	if vs := ok(t, <-a); vs[0] != 1 {
		t.Errorf("a: version %d, want 1", vs[0])
	}
	rb := <-b
	var ce *ConflictError
	if !errors.As(rb.err, &ce) || ce.Key != "x" || ce.Actual != 1 || rb.versions != nil {
		t.Errorf("b: %v, %v; want a conflict on x at version 1", rb.versions, rb.err)
	}
	ok(t, <-c)
	if vs := ok(t, <-d); vs[0] != 2 {
		t.Errorf("d: version %d, want 2", vs[0])
	}
	rec, err := g.Get(ctx, "t", "x")
	if err != nil || string(rec.Value) != "3" || rec.Version != 2 {
		t.Errorf("x = %+v, %v", rec, err)
	}
	if _, err := g.Get(ctx, "t", "b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("b's second op was applied: %v", err)
	}
}

func TestApplyCancelledWhileQueuedIsWithdrawn(t *testing.T) {
	g := openGated(t, BoltOptions{}, nil)
	first := g.hold(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := g.start(ctx, Put("t", "k", nil, Any()))
	cancel()
	if res := <-r; !errors.Is(res.err, context.Canceled) {
		t.Fatalf("Apply = %v, want context.Canceled", res.err)
	}
	later := g.start(context.Background(), Put("t", "later", nil, Any()))
	g.next()
	ok(t, <-first)
	if n := <-g.sizes; n != 1 {
		t.Fatalf("the withdrawn batch was committed: next group has %d batches", n)
	}
	g.next()
	ok(t, <-later)
	if _, err := g.Get(context.Background(), "t", "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("withdrawn batch was applied: %v", err)
	}
}

func TestApplyCancelledAfterTakenWaitsForOutcome(t *testing.T) {
	g := openGated(t, BoltOptions{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	r := g.start(ctx, Put("t", "k", []byte("v"), Any()))
	<-g.sizes // taken, transaction not started
	cancel()
	g.next()
	if vs := ok(t, <-r); vs[0] != 1 {
		t.Fatalf("version %d, want 1", vs[0])
	}
	if _, err := g.Get(context.Background(), "t", "k"); err != nil {
		t.Fatalf("the reported write is missing: %v", err)
	}
}

func TestFailedCommitReachesEveryBatch(t *testing.T) {
	ctx := context.Background()
	injected := errors.New("disk on fire")
	fail := make(chan bool, 16)
	g := openGated(t, BoltOptions{}, func() error {
		if <-fail {
			return injected
		}
		return nil
	})
	fail <- false
	first := g.hold(t)
	var rs []<-chan result
	for i := range 3 {
		rs = append(rs, g.start(ctx, Put("t", fmt.Sprint(i), nil, Absent())))
	}
	// A conflicting batch in a failed group gets the commit error too: its
	// conflict was judged against a state that never existed.
	rs = append(rs, g.start(ctx, Check("t", "none", AtVersion(1))))
	g.next()
	ok(t, <-first)
	<-g.sizes
	fail <- true
	g.next()
	for i, r := range rs {
		res := <-r
		if !errors.Is(res.err, injected) || res.versions != nil {
			t.Errorf("batch %d: %v, %v; want the commit error", i, res.versions, res.err)
		}
	}
	recs, err := g.List(ctx, "t", Query{})
	if err != nil || len(recs) != 0 {
		t.Fatalf("failed group left %d records (%v)", len(recs), err)
	}
	// The store still works.
	fail <- false
	later := g.start(ctx, Put("t", "0", nil, Absent()))
	<-g.sizes
	g.next()
	ok(t, <-later)
}

func TestCloseFinishesQueuedBatches(t *testing.T) {
	ctx := context.Background()
	g := openGated(t, BoltOptions{}, nil)
	first := g.hold(t)
	a := g.start(ctx, Put("t", "a", nil, Any()))
	b := g.start(ctx, Put("t", "b", nil, Any()))
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	g.next()
	ok(t, <-first)
	<-g.sizes
	g.next()
	ok(t, <-a)
	ok(t, <-b)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := g.Apply(ctx, Put("t", "c", nil, Any())); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close = %v, want ErrClosed", err)
	}
	s, err := OpenBolt(g.path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range []string{"a", "b"} {
		if _, err := s.Get(ctx, "t", k); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}

func TestObserveGetsGroupSize(t *testing.T) {
	sizes := make(chan int, 16)
	g := openGated(t, BoltOptions{Observe: func(n int, d time.Duration) { sizes <- n }}, nil)
	first := g.hold(t)
	var rs []<-chan result
	for i := range 5 {
		rs = append(rs, g.start(context.Background(), Put("t", fmt.Sprint(i), nil, Any())))
	}
	g.next()
	ok(t, <-first)
	<-g.sizes
	g.next()
	for _, r := range rs {
		ok(t, <-r)
	}
	if a, b := <-sizes, <-sizes; a != 1 || b != 5 {
		t.Fatalf("Observe saw groups of %d and %d, want 1 and 5", a, b)
	}
}
