package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veilhq/veil/persistence"
)

// A group deliberately filled with conflicting and succeeding batches,
// multi-op ones included: the conflicts are each batch's own answer, and
// the group took one transaction.
func TestGroupWithConflictsKeepsOthers(t *testing.T) {
	dsn := freshDB(t)
	release := make(chan struct{})
	var (
		mu     sync.Mutex
		groups []int
		first  = true
	)
	s := openHooked(t, dsn, Options{}, testHooks{
		taken: func(n int) {
			mu.Lock()
			f := first
			first = false
			mu.Unlock()
			if f {
				<-release // hold the committer so that the queue fills
			}
		},
		observe: func(n int, _ time.Duration) {
			mu.Lock()
			groups = append(groups, n)
			mu.Unlock()
		},
	})
	ctx := context.Background()
	// The first Apply is taken alone and holds the committer.
	done := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, persistence.Put("t", "guard", []byte("g"), persistence.Absent()))
		done <- err
	}()
	waitQueue(t, s, 0, func() bool { mu.Lock(); defer mu.Unlock(); return !first })

	const n = 60
	var wg sync.WaitGroup
	errs := make([]error, n)
	vers := make([][]uint64, n)
	for i := range n {
		wg.Go(func() {
			k := fmt.Sprintf("k%02d", i)
			ops := []persistence.Op{
				persistence.Put("t", k, []byte("1"), persistence.Absent()),
				persistence.Put("t", k, []byte("2"), persistence.AtVersion(1)),
			}
			switch i % 3 {
			case 1: // fails on its last op
				ops = append(ops, persistence.Check("t", "guard", persistence.AtVersion(7)))
			case 2: // fails on its first op
				ops = append([]persistence.Op{persistence.Put("t", "guard", nil, persistence.Absent())}, ops...)
			}
			vers[i], errs[i] = s.Apply(ctx, ops...)
		})
	}
	waitQueue(t, s, n, nil)
	close(release)
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		switch {
		case i%3 == 0:
			if errs[i] != nil || fmt.Sprint(vers[i]) != "[1 2]" {
				t.Fatalf("batch %d = %v, %v; want [1 2]", i, vers[i], errs[i])
			}
			wantValue(t, s, "t", k, "2", 2)
		case i%3 == 1:
			var ce *persistence.ConflictError
			if !errors.As(errs[i], &ce) || *ce != (persistence.ConflictError{Table: "t", Key: "guard", Expected: persistence.AtVersion(7), Actual: 1}) {
				t.Fatalf("batch %d = %v, want a conflict on guard", i, errs[i])
			}
			wantMissing(t, s, "t", k)
		default:
			var ce *persistence.ConflictError
			if !errors.As(errs[i], &ce) || *ce != (persistence.ConflictError{Table: "t", Key: "guard", Expected: persistence.Absent(), Actual: 1}) {
				t.Fatalf("batch %d = %v, want a conflict on guard", i, errs[i])
			}
			wantMissing(t, s, "t", k)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(groups) != 2 || groups[1] != n {
		t.Fatalf("groups %v, want [1 %d]", groups, n)
	}
}

// waitQueue waits until s's committer queue holds n requests and cond (if
// set) holds.
func waitQueue(t *testing.T, s *Store, n int, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := s.c.Len()
		if l == n && (cond == nil || cond()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d requests, want %d", l, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Contexts cancelled while their batches sit in the queue or in a group
// being committed: a batch withdrawn from the queue (Apply returned
// ctx.Err()) wrote nothing; a batch already taken reports its real outcome;
// no batch is ever half applied. Each writer keeps a compare-and-set chain
// on its own counter, so one batch that wrote while reporting ctx.Err()
// would break the chain.
func TestCancelMidGroupLeavesNoPartialBatch(t *testing.T) {
	dsn := freshDB(t)
	var (
		mu      sync.Mutex
		cancels = map[*context.CancelFunc]struct{}{}
		groupNo int
	)
	s := openHooked(t, dsn, Options{MaxGroup: 8}, testHooks{
		taken: func(int) {
			mu.Lock()
			defer mu.Unlock()
			groupNo++
			if groupNo%2 == 0 {
				return
			}
			// Cancel every caller that is waiting now: those in this group
			// (already taken) and those still queued.
			for c := range cancels {
				(*c)()
				delete(cancels, c)
			}
		},
	})
	const writers, perWriter = 16, 40
	var wg sync.WaitGroup
	type result struct {
		key string
		ok  bool
	}
	results := make([][]result, writers)
	counters := make([]uint64, writers)
	for w := range writers {
		wg.Go(func() {
			counter := fmt.Sprintf("w%02d", w)
			var ver uint64 // 0: not created yet
			for i := range perWriter {
				key := fmt.Sprintf("w%02d/%03d", w, i)
				expect := persistence.AtVersion(ver)
				if ver == 0 {
					expect = persistence.Absent()
				}
				ctx, cancel := context.WithCancel(context.Background())
				mu.Lock()
				cancels[&cancel] = struct{}{}
				mu.Unlock()
				vs, err := s.Apply(ctx,
					persistence.Put("a", key, []byte(key), persistence.Absent()),
					persistence.Put("counter", counter, []byte(fmt.Sprint(i)), expect),
					persistence.Put("b", key, []byte(key), persistence.Absent()),
				)
				mu.Lock()
				delete(cancels, &cancel)
				mu.Unlock()
				cancel()
				switch {
				case err == nil:
					ver = vs[1]
					results[w] = append(results[w], result{key, true})
				case errors.Is(err, context.Canceled):
					results[w] = append(results[w], result{key, false})
				default:
					t.Errorf("writer %d batch %d: %v", w, i, err)
					return
				}
			}
			counters[w] = ver
		})
	}
	wg.Wait()
	committed, withdrawn := 0, 0
	for w := range writers {
		var n uint64
		for _, r := range results[w] {
			if r.ok {
				committed++
				n++
				wantValue(t, s, "a", r.key, r.key, 1)
				wantValue(t, s, "b", r.key, r.key, 1)
			} else {
				withdrawn++
				wantMissing(t, s, "a", r.key)
				wantMissing(t, s, "b", r.key)
			}
		}
		if n > 0 {
			rec, err := s.Get(context.Background(), "counter", fmt.Sprintf("w%02d", w))
			if err != nil || rec.Version != n || rec.Version != counters[w] {
				t.Fatalf("writer %d: counter %+v, %v; want version %d", w, rec, err, n)
			}
		}
	}
	t.Logf("%d batches committed, %d withdrawn by their cancelled context", committed, withdrawn)
	if withdrawn == 0 {
		t.Log("no batch was withdrawn: the cancellations only hit taken groups")
	}
}

// The crash-ish case: the database connection of the committer is killed
// (pg_terminate_backend, what a crashed member or a network cut looks like
// from the server) again and again while writers commit two-record
// batches. Every acknowledged batch is there; every batch, acknowledged or
// not, is all there or not at all.
func TestBackendKilledMidGroup(t *testing.T) {
	const app = "veil_kill_test"
	dsn := freshDB(t, "application_name", app)
	s := openStore(t, dsn, Options{})
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, baseDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var dbName string
	if err := s.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&dbName); err != nil {
		t.Fatal(err)
	}

	const writers = 16
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked, failed []string
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%02d/%06d", w, i)
				_, err := s.Apply(ctx,
					persistence.Put("a", key, []byte(key), persistence.Absent()),
					persistence.Put("b", key, []byte(key), persistence.Absent()),
				)
				mu.Lock()
				if err == nil {
					acked = append(acked, key)
				} else {
					failed = append(failed, key)
				}
				mu.Unlock()
				if errors.Is(err, persistence.ErrConflict) {
					t.Errorf("%s: %v", key, err)
					return
				}
			}
		})
	}
	kills := 0
	for range 15 {
		time.Sleep(30 * time.Millisecond)
		var n int
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()`, dbName, app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		kills += n
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Verify over a fresh store: the old pool may still be reconnecting.
	v := openStore(t, dsn, Options{})
	for _, key := range acked {
		wantValue(t, v, "a", key, key, 1)
		wantValue(t, v, "b", key, key, 1)
	}
	for _, table := range []string{"a", "b"} {
		recs, err := v.List(ctx, table, persistence.Query{})
		if err != nil {
			t.Fatal(err)
		}
		other := map[string]string{"a": "b", "b": "a"}[table]
		for _, r := range recs {
			if _, err := v.Get(ctx, other, r.Key); err != nil {
				t.Fatalf("%s/%s committed without %s/%s: %v", table, r.Key, other, r.Key, err)
			}
		}
	}
	if len(acked) == 0 {
		t.Fatal("no batch was acknowledged")
	}
	t.Logf("%d backends killed; %d batches acknowledged, %d failed with an (ambiguous) error", kills, len(acked), len(failed))
}

func TestRefusesAsyncCommit(t *testing.T) {
	dsn := freshDB(t, "synchronous_commit", "off")
	s, err := Open(context.Background(), dsn, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open with synchronous_commit=off succeeded")
	}
	if !strings.Contains(err.Error(), "synchronous_commit") {
		t.Fatalf("Open = %v, want an error naming synchronous_commit", err)
	}
}

// A version no BIGINT can hold is a conflict, as against bbolt, not an
// error of the database.
func TestHugeExpectedVersionIsAConflict(t *testing.T) {
	s := openStore(t, freshDB(t), Options{})
	mustApply(t, s, persistence.Put("t", "k", []byte("v"), persistence.Absent()))
	for _, v := range []uint64{math.MaxInt64 + 1, math.MaxUint64} {
		_, err := s.Apply(context.Background(), persistence.Put("t", "k", nil, persistence.AtVersion(v)))
		var ce *persistence.ConflictError
		if !errors.As(err, &ce) || ce.Actual != 1 {
			t.Fatalf("AtVersion(%d) = %v, want a conflict with actual 1", v, err)
		}
	}
}

// A group larger than MaxGroupBytes is split; a single batch over it still
// commits, alone.
func TestGroupBytesCap(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	s := openHooked(t, freshDB(t), Options{MaxGroupBytes: 1 << 20}, testHooks{observe: func(n int, _ time.Duration) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	}})
	big := make([]byte, 3<<20)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			mustApply(t, s, persistence.Put("t", fmt.Sprint(i), big, persistence.Any()))
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range sizes {
		if n != 1 {
			t.Fatalf("group sizes %v: batches over the byte cap must commit alone", sizes)
		}
	}
}
