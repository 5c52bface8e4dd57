package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/storetest"
)

func openTemp(t *testing.T, opts persistence.BoltOptions) *persistence.Bolt {
	t.Helper()
	s, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBoltConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openTemp(t, persistence.BoltOptions{})
	})
}

func TestBoltConformanceNoGroupCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openTemp(t, persistence.BoltOptions{NoGroupCommit: true})
	})
}

// The log synced with plain fdatasync (the baseline of its AIO sync)
// keeps every promise too.
func TestBoltConformancePlainSync(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openTemp(t, persistence.BoltOptions{PlainSync: true})
	})
}

// Only the log's AIO sync leaves the committer's P free while the disk
// works (veild adds a P otherwise: cmd/veild/procs.go).
func TestCommitSyncHoldsP(t *testing.T) {
	for _, c := range []struct {
		name string
		opts persistence.BoltOptions
		want bool
	}{
		{"the log, by AIO", persistence.BoltOptions{}, false},
		{"the log, by fdatasync", persistence.BoltOptions{PlainSync: true}, true},
		{"no log: bbolt's own commit", persistence.BoltOptions{NoLog: true}, true},
		{"no group commit", persistence.BoltOptions{NoGroupCommit: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openTemp(t, c.opts)
			defer s.Close()
			if _, err := s.Apply(context.Background(), persistence.Put("t", "k", []byte("v"), persistence.Absent())); err != nil {
				t.Fatal(err)
			}
			if got := s.CommitSyncHoldsP(); got != c.want {
				t.Fatalf("CommitSyncHoldsP() = %v, want %v", got, c.want)
			}
		})
	}
}

// A small group cap makes the conformance suite's concurrent tests span
// several groups.
func TestBoltConformanceSmallGroups(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openTemp(t, persistence.BoltOptions{MaxGroup: 3})
	})
}

func TestBoltReopenKeepsRecordsAndVersions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "veil.db")
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Apply(ctx, persistence.Put("t", "k", []byte(fmt.Sprint(i)), persistence.Any())); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Apply(ctx, persistence.Put("u", "x", []byte("y"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Get(ctx, "t", "k")
	if err != nil || string(rec.Value) != "2" || rec.Version != 3 {
		t.Fatalf("after reopen: %+v, %v; want value 2 at version 3", rec, err)
	}
	if _, err := s.Apply(ctx, persistence.Put("t", "k", nil, persistence.AtVersion(3))); err != nil {
		t.Fatalf("CAS on the reopened version: %v", err)
	}
	if s.Path() != path {
		t.Errorf("Path() = %q, want %q", s.Path(), path)
	}
}

// Every Apply that succeeded before Close must be on disk after a reopen.
func TestBoltCloseDuringWritesLosesNothingAcknowledged(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "veil.db")
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const writers = 16
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	firstAck := make(chan struct{})
	var once sync.Once
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("%02d/%06d", w, i)
				_, err := s.Apply(ctx, persistence.Put("t", key, []byte(key), persistence.Absent()))
				if errors.Is(err, persistence.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Apply: %v", err)
					return
				}
				mu.Lock()
				acked = append(acked, key)
				mu.Unlock()
				once.Do(func() { close(firstAck) })
			}
		})
	}
	<-firstAck
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	s, err = persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, key := range acked {
		if rec, err := s.Get(ctx, "t", key); err != nil || string(rec.Value) != key {
			t.Fatalf("acknowledged %s: %+v, %v", key, rec, err)
		}
	}
	recs, err := s.List(ctx, "t", persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(acked) {
		t.Fatalf("%d records on disk, %d acknowledged", len(recs), len(acked))
	}
}

func TestBoltObserveCountsEveryBatch(t *testing.T) {
	var (
		mu      sync.Mutex
		batches int
		commits int
	)
	s := openTemp(t, persistence.BoltOptions{Observe: func(n int, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if n < 1 || d <= 0 {
			t.Errorf("Observe(%d, %v)", n, d)
		}
		batches += n
		commits++
	}})
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Conflicting batches count too: they were in the commit.
			if _, err := s.Apply(context.Background(), persistence.Put("t", fmt.Sprint(i%8), nil, persistence.Absent())); err != nil && !errors.Is(err, persistence.ErrConflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if batches != n || commits < 1 || commits > n {
		t.Fatalf("Observe saw %d batches in %d commits, want %d batches", batches, commits, n)
	}
	t.Logf("%d batches in %d commits", batches, commits)
}

// heldStore keeps every write in the write-ahead log until it is closed,
// so that the conformance suite's reads all go through the pending
// overlay merged with bbolt.
type heldStore struct {
	*persistence.Bolt
	release func()
}

func (s heldStore) Close() error {
	s.release()
	return s.Bolt.Close()
}

func TestBoltConformanceLogNotApplied(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		s, release, err := persistence.OpenBoltHeld(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return heldStore{s, release}
	})
}

func TestBoltConformanceNoLog(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openTemp(t, persistence.BoltOptions{NoLog: true})
	})
}

// A Check leaves its record as it is for the later ops of its batch
// (Apply's contract: each op sees the state the earlier ones left). The
// planner once recorded a checked key as absent for the rest of the
// batch, so a Check then a Put at the checked version conflicted, and a
// Check then a Put expecting absence overwrote the record at version 1.
func TestCheckLeavesTheRecordForLaterOps(t *testing.T) {
	stores := map[string]func(t *testing.T) persistence.Store{
		"log":      func(t *testing.T) persistence.Store { return openTemp(t, persistence.BoltOptions{}) },
		"no log":   func(t *testing.T) persistence.Store { return openTemp(t, persistence.BoltOptions{NoLog: true}) },
		"no group": func(t *testing.T) persistence.Store { return openTemp(t, persistence.BoltOptions{NoGroupCommit: true}) },
		"log not applied": func(t *testing.T) persistence.Store {
			s, release, err := persistence.OpenBoltHeld(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return heldStore{s, release}
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			defer s.Close()
			m := model{}
			applyBoth(t, s, m, persistence.Put("t", "k", []byte("1"), persistence.Absent()))
			applyBoth(t, s, m, persistence.Put("t", "k", []byte("2"), persistence.AtVersion(1)))
			applyBoth(t, s, m, persistence.Check("t", "k", persistence.AtVersion(2)), persistence.Put("t", "k", []byte("3"), persistence.AtVersion(2)))
			if err := applyBoth(t, s, m, persistence.Check("t", "k", persistence.Any()), persistence.Put("t", "k", []byte("lost"), persistence.Absent())); err == nil {
				t.Fatal("a Put expecting absence of an existing record succeeded")
			}
			applyBoth(t, s, m, persistence.Check("t", "k", persistence.AtVersion(3)), persistence.Delete("t", "k", persistence.AtVersion(3)), persistence.Check("t", "k", persistence.Absent()))
			checkAll(t, s, m, []string{"t"}, []string{"k"})
		})
	}
}

// The store's serial stages carry a profiler label, so a CPU profile of
// a loaded veild tells their share (go tool pprof -tagfocus stage=commit,
// stage=apply; docs/BENCHMARKS.md).
func TestSerialStagesAreLabelled(t *testing.T) {
	s := openTemp(t, persistence.BoltOptions{})
	defer s.Close()
	if _, err := s.Apply(context.Background(), persistence.Put("t", "k", []byte("v"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"commit", "apply"} {
		if want := `"stage":"` + stage + `"`; !strings.Contains(b.String(), want) {
			t.Errorf("no goroutine labelled %s:\n%s", want, b.String())
		}
	}
}
