package storetest

// Concurrency, cancellation and Close.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/veilhq/veil/persistence"
)

// applyTogether runs write(0) … write(n-1) in n goroutines released at
// the same moment, so that their Applies overlap as much as the store lets
// them, and returns each one's error by index.
func applyTogether(n int, write func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = write(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func testConcurrentCreate(t *testing.T, s persistence.Store) {
	errs := applyTogether(50, func(i int) error {
		_, err := s.Apply(context.Background(),
			persistence.Put("t", "contested", []byte(fmt.Sprint(i)), persistence.Absent()),
			persistence.Put("t", fmt.Sprintf("side/%02d", i), []byte("x"), persistence.Absent()),
		)
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both created the key", winner, i)
			}
			winner = i
		default:
			wantConflict(t, err, "t", "contested", persistence.Absent(), 1)
		}
	}
	if winner < 0 {
		t.Fatal("no writer created the key")
	}
	wantRecord(t, s, "t", "contested", fmt.Sprint(winner), 1)
	// Losers' batches left nothing behind.
	recs, err := s.List(context.Background(), "t", persistence.Query{Prefix: "side/"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("side/%02d", winner)}; !slices.Equal(keysOf(recs), want) {
		t.Fatalf("side records %q, want %q", keysOf(recs), want)
	}
}

func testConcurrentCAS(t *testing.T, s persistence.Store) {
	const workers, perWorker = 8, 25
	ctx := context.Background()
	put(t, s, "t", "counter", "0")
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for done := 0; done < perWorker; {
				rec, err := s.Get(ctx, "t", "counter")
				if err != nil {
					errc <- err
					return
				}
				n, err := strconv.Atoi(string(rec.Value))
				if err != nil {
					errc <- fmt.Errorf("counter holds %q: %w", rec.Value, err)
					return
				}
				_, err = s.Apply(ctx, persistence.Put("t", "counter", []byte(fmt.Sprint(n+1)), persistence.AtVersion(rec.Version)))
				switch {
				case err == nil:
					done++
				case errors.Is(err, persistence.ErrConflict):
					// Lost the race: read again.
				default:
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	wantRecord(t, s, "t", "counter", fmt.Sprint(workers*perWorker), workers*perWorker+1)
}

// testConcurrentMixed runs failing and succeeding batches at the same time:
// an implementation that shares commits must not let one batch's conflict
// spill into another's.
func testConcurrentMixed(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	put(t, s, "t", "guard", "g")
	errs := applyTogether(40, func(i int) error {
		expect := persistence.AtVersion(1)
		if i%2 == 1 {
			expect = persistence.AtVersion(99)
		}
		_, err := s.Apply(ctx,
			persistence.Put("t", fmt.Sprintf("w/%02d", i), []byte("x"), persistence.Absent()),
			persistence.Check("t", "guard", expect),
		)
		return err
	})
	for i, err := range errs {
		key := fmt.Sprintf("w/%02d", i)
		if i%2 == 1 {
			wantConflict(t, err, "t", "guard", persistence.AtVersion(99), 1)
			wantAbsent(t, s, "t", key)
		} else {
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
			wantRecord(t, s, "t", key, "x", 1)
		}
	}
}

func testContextCancelled(t *testing.T, s persistence.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Apply(ctx, persistence.Put("t", "k", []byte("v"), persistence.Any())); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a cancelled context = %v, want context.Canceled", err)
	}
	wantAbsent(t, s, "t", "k")
	if _, err := s.Get(ctx, "t", "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, "t", persistence.Query{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v, want context.Canceled", err)
	}
}

func testClosed(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	put(t, s, "t", "k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(ctx, "t", "k"); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if _, err := s.List(ctx, "t", persistence.Query{}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Apply(ctx, persistence.Put("t", "k", nil, persistence.Any())); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Apply after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("second Close = %v, want nil or ErrClosed", err)
	}
}

// testCloseWaits closes the store while writers run: every Apply must either
// succeed or report ErrClosed, never fail some other way or hang.
func testCloseWaits(t *testing.T, s persistence.Store) {
	const n = 32
	var wg sync.WaitGroup
	errs := make([]error, n)
	started := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			started <- struct{}{}
			_, errs[i] = s.Apply(context.Background(), persistence.Put("t", fmt.Sprint(i), []byte("v"), persistence.Any()))
		})
	}
	for range n / 2 {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, persistence.ErrClosed) {
			t.Errorf("writer %d: %v", i, err)
		}
	}
}
