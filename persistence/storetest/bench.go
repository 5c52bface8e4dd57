package storetest

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Helpers of the stores' write benchmarks (persistence and
// persistence/postgres), so that both measure a write the same way.

// RunWriters runs write(i) for i = 1..b.N, shared among writers
// goroutines, each waiting for its write like an actor persisting before
// it replies, and answers how long it all took and each write's wait,
// sorted. The first error fails the benchmark.
func RunWriters(b *testing.B, writers int, write func(i uint64) error) (time.Duration, []time.Duration) {
	var next atomic.Uint64
	waits := make([][]time.Duration, writers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > uint64(b.N) {
					return
				}
				t0 := time.Now()
				err := write(i)
				waits[w] = append(waits[w], time.Since(t0))
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(waits...)
	slices.Sort(all)
	return elapsed, all
}

// Percentile is the p-th percentile of sorted.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
