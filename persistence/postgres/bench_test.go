package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/storetest"
)

// The benchmarks mirror persistence/bench_test.go (bbolt) so that the two
// stores' figures compare: committed single-put batches of 256 bytes, each
// writer waiting for its commit like an actor persisting before it replies.
// Each run gets a fresh database on the server of the tests (127.0.0.1:5432
// or VEIL_TEST_POSTGRES).

// benchKey spreads keys over the key space, like the random ids of most
// Veil records.
func benchKey(i uint64) string {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], i*0x9e3779b97f4a7c15)
	return fmt.Sprintf("%x", buf)
}

// BenchmarkApply measures committed writes per second for 1, 16 and 256
// concurrent writers: group commit (the default), group commit with a
// savepoint around every batch (what the conflict path costs if every
// group took it), and one transaction per Apply over a pool of 32
// connections (PostgreSQL then still shares WAL flushes between concurrent
// commits). Reported latencies are what one writer waits in Apply.
func BenchmarkApply(b *testing.B) {
	modes := []struct {
		name  string
		opts  Options
		hooks testHooks
	}{
		{"group", Options{}, testHooks{}},
		{"group-savepoints", Options{}, testHooks{savepoints: true}},
		{"nogroup", Options{NoGroupCommit: true, MaxConns: 32}, testHooks{}},
	}
	for _, mode := range modes {
		for _, writers := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode.name, writers), func(b *testing.B) {
				var groups, batches atomic.Int64
				hooks := mode.hooks
				hooks.observe = func(n int, _ time.Duration) {
					groups.Add(1)
					batches.Add(int64(n))
				}
				s := openHooked(b, freshDB(b), mode.opts, hooks)
				value := make([]byte, 256)
				ctx := context.Background()
				b.ResetTimer()
				elapsed, all := storetest.RunWriters(b, writers, func(i uint64) error {
					_, err := s.Apply(ctx, persistence.Put("t", benchKey(i), value, persistence.Absent()))
					return err
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
				b.ReportMetric(float64(storetest.Percentile(all, 50).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(storetest.Percentile(all, 99).Microseconds())/1000, "p99-ms")
				if g := groups.Load(); g > 0 {
					b.ReportMetric(float64(batches.Load())/float64(g), "batches/commit")
				}
			})
		}
	}
}

// BenchmarkGet measures point reads from a 10,000-record table, from all
// cores at once.
func BenchmarkGet(b *testing.B) {
	const records = 10_000
	s := openStore(b, freshDB(b), Options{})
	ctx := context.Background()
	value := make([]byte, 256)
	for base := 0; base < records; base += 1000 {
		ops := make([]persistence.Op, 0, 1000)
		for i := base; i < base+1000; i++ {
			ops = append(ops, persistence.Put("t", benchKey(uint64(i)), value, persistence.Any()))
		}
		if _, err := s.Apply(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			if _, err := s.Get(ctx, "t", benchKey(r.Uint64N(records))); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
