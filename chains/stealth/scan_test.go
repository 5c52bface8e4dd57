package stealth

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

func TestScanPairsVisitsEveryPairOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 3} {
		prev := runtime.GOMAXPROCS(procs)
		for _, dims := range [][2]int{{0, 5}, {5, 0}, {1, 1}, {1, 100}, {100, 1}, {7, 13}, {40, 40}} {
			nA, nK := dims[0], dims[1]
			seen := make([]atomic.Int32, nA*nK)
			var workers, done atomic.Int32
			got := ScanPairs(nA, nK, func() (func(int, int) bool, func()) {
				workers.Add(1)
				return func(a, k int) bool {
					seen[a*nK+k].Add(1)
					return (a+k)%3 == 0
				}, func() { done.Add(1) }
			})
			var want []Match
			for a := range nA {
				for k := range nK {
					if (a+k)%3 == 0 {
						want = append(want, Match{a, k})
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("procs %d dims %v: got %v want %v", procs, dims, got, want)
			}
			for i := range seen {
				if seen[i].Load() != 1 {
					t.Fatalf("pair %d visited %d times", i, seen[i].Load())
				}
			}
			if workers.Load() != done.Load() || int(workers.Load()) > procs {
				t.Fatalf("workers %d, done %d", workers.Load(), done.Load())
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}

func TestErrorMatching(t *testing.T) {
	err := Errorf(ErrInvalidPoint, "key %d", 3)
	if !errors.Is(err, ErrInvalidPoint) || errors.Is(err, ErrMalformed) {
		t.Fatal("errors.Is")
	}
	if err.Error() != "stealth: invalid curve point: key 3" {
		t.Fatal(err.Error())
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != ErrInvalidPoint {
		t.Fatal("errors.As")
	}
}
