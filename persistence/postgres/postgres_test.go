package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openStore(t, freshDB(t), Options{})
	})
}

func TestConformanceNoGroupCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openStore(t, freshDB(t), Options{NoGroupCommit: true})
	})
}

// A small group cap makes the suite's concurrent tests span several groups.
func TestConformanceSmallGroups(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openStore(t, freshDB(t), Options{MaxGroup: 3})
	})
}

func mustApply(t testing.TB, s persistence.Store, ops ...persistence.Op) []uint64 {
	t.Helper()
	vs, err := s.Apply(context.Background(), ops...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return vs
}

func wantValue(t testing.TB, s persistence.Store, table, key, value string, version uint64) {
	t.Helper()
	rec, err := s.Get(context.Background(), table, key)
	if err != nil {
		t.Fatalf("Get(%s/%q): %v", table, key, err)
	}
	if string(rec.Value) != value || rec.Version != version {
		t.Fatalf("Get(%s/%q) = {%q, v%d}, want {%q, v%d}", table, key, rec.Value, rec.Version, value, version)
	}
}

func wantMissing(t testing.TB, s persistence.Store, table, key string) {
	t.Helper()
	if rec, err := s.Get(context.Background(), table, key); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("Get(%s/%q) = %+v, %v; want ErrNotFound", table, key, rec, err)
	}
}

func TestTwoStoresStaleActivation(t *testing.T) {
	dsn := freshDB(t)
	stores := []*Store{openStore(t, dsn, Options{}), openStore(t, dsn, Options{})}
	ctx := context.Background()

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bgErr := make(chan error, 8)
	for si, s := range stores {
		for w := range 4 {
			bg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("%d/%d/%d", si, w, i)
					if _, err := s.Apply(ctx, persistence.Put("bg", key, []byte(key), persistence.Absent())); err != nil {
						bgErr <- err
						return
					}
				}
			})
		}
	}

	mustApply(t, stores[0], persistence.Put("agents", "a1", []byte("created"), persistence.Absent()))
	const rounds = 40
	for round := range rounds {
		ver := uint64(round + 1)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, s := range stores {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Apply(ctx,
					persistence.Put("agents", "a1", []byte(fmt.Sprintf("r%d/m%d", round, i)), persistence.AtVersion(ver)),
					persistence.Put("side", fmt.Sprintf("r%d/m%d", round, i), []byte("x"), persistence.Absent()),
					persistence.Put("created", fmt.Sprintf("r%d", round), []byte(fmt.Sprint(i)), persistence.Absent()),
				)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("round %d: both members' writes were accepted", round)
				}
				winner = i
				continue
			}
			var ce *persistence.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("round %d member %d: %v, want a conflict", round, i, err)
			}
			// The loser read version ver like the winner. Its UPDATE of the
			// agent record either ran after the winner's commit or waited
			// for it and re-checked the row: either way it fails first.
			want1 := persistence.ConflictError{Table: "agents", Key: "a1", Expected: persistence.AtVersion(ver), Actual: ver + 1}
			if *ce != want1 {
				t.Fatalf("round %d member %d: conflict %+v, want %+v", round, i, *ce, want1)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no member's write was accepted: %v", round, errs)
		}
		loser := 1 - winner
		wantValue(t, stores[loser], "agents", "a1", fmt.Sprintf("r%d/m%d", round, winner), ver+1)
		wantValue(t, stores[loser], "side", fmt.Sprintf("r%d/m%d", round, winner), "x", 1)
		wantMissing(t, stores[winner], "side", fmt.Sprintf("r%d/m%d", round, loser))
		wantValue(t, stores[winner], "created", fmt.Sprintf("r%d", round), fmt.Sprint(winner), 1)
	}
	close(stop)
	bg.Wait()
	close(bgErr)
	for err := range bgErr {
		t.Fatalf("background writer: %v", err)
	}
}

// Two members create the same keys at once: one creation each wins, the
// other member's batch conflicts with Actual 1.
func TestTwoStoresCreateRace(t *testing.T) {
	dsn := freshDB(t)
	stores := []*Store{openStore(t, dsn, Options{}), openStore(t, dsn, Options{})}
	const keys = 100
	var wg sync.WaitGroup
	errs := make([][keys]error, 2)
	start := make(chan struct{})
	for i, s := range stores {
		for k := range keys {
			wg.Go(func() {
				<-start
				_, errs[i][k] = s.Apply(context.Background(), persistence.Put("names", fmt.Sprint(k), []byte(fmt.Sprint(i)), persistence.Absent()))
			})
		}
	}
	close(start)
	wg.Wait()
	for k := range keys {
		a, b := errs[0][k], errs[1][k]
		if (a == nil) == (b == nil) {
			t.Fatalf("key %d: errors %v and %v, want exactly one nil", k, a, b)
		}
		winner, lerr := 0, b
		if a != nil {
			winner, lerr = 1, a
		}
		var ce *persistence.ConflictError
		if !errors.As(lerr, &ce) || ce.Actual != 1 {
			t.Fatalf("key %d: loser got %v, want a conflict with actual version 1", k, lerr)
		}
		wantValue(t, stores[0], "names", fmt.Sprint(k), fmt.Sprint(winner), 1)
	}
}

// Check with Absent locks the absent key until the batch commits, so two
// members cannot both act on "y is absent" and "x is absent" while each
// creates the other's key (write skew). Both orders of the classic
// interleaving end with at most one batch applied.
func TestTwoStoresNoWriteSkew(t *testing.T) {
	// A short deadlock_timeout: the two transactions may deadlock on each
	// other's key locks, and PostgreSQL only looks after the timeout.
	dsn := freshDB(t, "deadlock_timeout", "50ms")
	a, b := openStore(t, dsn, Options{}), openStore(t, dsn, Options{})
	const rounds = 12
	for round := range rounds {
		x, y := fmt.Sprintf("x%d", round), fmt.Sprintf("y%d", round)
		var wg sync.WaitGroup
		var errA, errB error
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, errA = a.Apply(context.Background(), persistence.Check("oncall", x, persistence.Absent()), persistence.Put("oncall", y, []byte("a"), persistence.Absent()))
		})
		wg.Go(func() {
			<-start
			_, errB = b.Apply(context.Background(), persistence.Check("oncall", y, persistence.Absent()), persistence.Put("oncall", x, []byte("b"), persistence.Absent()))
		})
		close(start)
		wg.Wait()
		for _, err := range []error{errA, errB} {
			if err != nil && !errors.Is(err, persistence.ErrConflict) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if errA == nil && errB == nil {
			t.Fatalf("round %d: both batches applied: write skew", round)
		}
		if errA != nil && errB != nil {
			// Legal (each may have seen the other's key), but then
			// nothing was written.
			wantMissing(t, a, "oncall", x)
			wantMissing(t, a, "oncall", y)
		}
	}
}

// The savepoint path, which groups otherwise take only after a conflict,
// on every group.
func TestConformanceAlwaysSavepoints(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openHooked(t, freshDB(t), Options{}, testHooks{savepoints: true})
	})
}
