package persistence_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/storetest"
)

// benchDirEnv places the benchmarks' data files. The default, the test's
// temp dir under os.TempDir, is on the real disk on Veil's machines; where
// /tmp is a tmpfs, fsync is free and the figures mean nothing, so point this
// at a directory on the disk veild would use.
const benchDirEnv = "VEIL_BENCH_DIR"

func benchStore(b *testing.B, opts persistence.BoltOptions) *persistence.Bolt {
	b.Helper()
	dir := b.TempDir()
	if base := os.Getenv(benchDirEnv); base != "" {
		var err error
		if dir, err = os.MkdirTemp(base, "veil-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	s, err := persistence.OpenBolt(dir+"/veil.db", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchKey spreads keys over the key space, like the random ids most Veil
// records have; sequential keys would flatter bbolt (append-only pages).
func benchKey(i uint64) string {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], i*0x9e3779b97f4a7c15)
	return fmt.Sprintf("%x", buf)
}

// BenchmarkApply measures committed writes per second: b.N single-put
// batches of 256 bytes shared among the writers, each waiting for its
// commit like an actor persisting before it replies. Reported latencies are
// what one writer waits in Apply. The modes: group (the default: group
// commit through the write-ahead log, bbolt written behind it by the
// applier), nolog (group commit straight into bbolt, the path before the
// log) and nogroup (a transaction and fsync per Apply). With the log, a
// write is durable when Apply returns but the applier may still be behind:
// drain-ms is how long it then takes to catch up (not in writes/s), and
// groups/apply-tx and apply-tx-ms describe its transactions.
func BenchmarkApply(b *testing.B) {
	modes := []struct {
		name string
		opts persistence.BoltOptions
	}{
		{"group", persistence.BoltOptions{}},
		{"nolog", persistence.BoltOptions{NoLog: true}},
		{"nogroup", persistence.BoltOptions{NoGroupCommit: true}},
	}
	for _, mode := range modes {
		for _, writers := range []int{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode.name, writers), func(b *testing.B) {
				var groups, batches, applyTx, applyGroups, applyNs atomic.Int64
				opts := mode.opts
				opts.Observe = func(n int, _ time.Duration) {
					groups.Add(1)
					batches.Add(int64(n))
				}
				opts.ObserveApply = func(g int, d time.Duration) {
					applyTx.Add(1)
					applyGroups.Add(int64(g))
					applyNs.Add(int64(d))
				}
				s := benchStore(b, opts)
				value := make([]byte, 256)
				ctx := context.Background()
				b.ResetTimer()
				elapsed, all := storetest.RunWriters(b, writers, func(i uint64) error {
					_, err := s.Apply(ctx, persistence.Put("t", benchKey(i), value, persistence.Absent()))
					return err
				})
				b.StopTimer()
				t0 := time.Now()
				if err := s.WaitApplied(); err != nil {
					b.Fatal(err)
				}
				drain := time.Since(t0)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
				b.ReportMetric(float64(storetest.Percentile(all, 50).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(storetest.Percentile(all, 99).Microseconds())/1000, "p99-ms")
				if g := groups.Load(); g > 0 {
					b.ReportMetric(float64(batches.Load())/float64(g), "batches/commit")
				}
				if x := applyTx.Load(); x > 0 {
					b.ReportMetric(float64(drain.Microseconds())/1000, "drain-ms")
					b.ReportMetric(float64(applyGroups.Load())/float64(x), "groups/apply-tx")
					b.ReportMetric(float64(applyNs.Load())/float64(x)/1e6, "apply-tx-ms")
				}
			})
		}
	}
}

// BenchmarkGet measures point reads from a 10,000-record table, from all
// cores at once.
func BenchmarkGet(b *testing.B) {
	const records = 10_000
	s := benchStore(b, persistence.BoltOptions{})
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
