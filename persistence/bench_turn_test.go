package persistence_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/storetest"
)

// BenchmarkTurns measures the store alone under chat turns (issue 38):
// each batch is what a `hello` turn writes (two messages under the
// agent's conversation, the conversation record, the account's audit
// record), for one of 500 agents, from many writers at once, with no HTTP
// and no model in front, so that the store's serial stages show even on
// two cores. It reports, per turn, the time each serial stage was busy:
// the committer (commit-µs/turn; with the log, its append and fdatasync)
// and, with the log, the applier (apply-µs/turn; its bbolt transactions).
// No number of cores takes the store past 1e6 / (the larger of the two)
// turns per second: turns-ceiling/s. commit-p99-ms and commit-max-ms are
// the tail of the commits themselves, which every turn of a group waits
// for.
func BenchmarkTurns(b *testing.B) {
	const agents = 500
	modes := []struct {
		name string
		opts persistence.BoltOptions
	}{
		{"log", persistence.BoltOptions{}},
		{"nolog", persistence.BoltOptions{NoLog: true}},
	}
	for _, mode := range modes {
		for _, writers := range []int{64, 256} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode.name, writers), func(b *testing.B) {
				var commitNs, applyNs, batches, commits, applies atomic.Int64
				var durMu sync.Mutex
				var durations []time.Duration // each commit's
				opts := mode.opts
				opts.Observe = func(n int, d time.Duration) {
					commits.Add(1)
					batches.Add(int64(n))
					commitNs.Add(int64(d))
					durMu.Lock()
					durations = append(durations, d)
					durMu.Unlock()
				}
				opts.ObserveApply = func(_ int, d time.Duration) {
					applies.Add(1)
					applyNs.Add(int64(d))
				}
				s := benchStore(b, opts)
				ctx := context.Background()
				ids := make([]string, agents)
				r := rand.New(rand.NewPCG(1, 2))
				for i := range ids {
					ids[i] = fmt.Sprintf("0x%016x%016x%08x", r.Uint64(), r.Uint64(), r.Uint32())
				}
				user, answer, conv, audit := make([]byte, 600), make([]byte, 900), make([]byte, 700), make([]byte, 400)
				var msg atomic.Uint64
				before := s.WriteStats()
				b.ResetTimer()
				elapsed, all := storetest.RunWriters(b, writers, func(i uint64) error {
					agent := ids[i%agents]
					m := msg.Add(2)
					_, err := s.Apply(ctx,
						persistence.Put("messages", fmt.Sprintf("%s/c1/%016x", agent, m-1), user, persistence.Absent()),
						persistence.Put("messages", fmt.Sprintf("%s/c1/%016x", agent, m), answer, persistence.Absent()),
						persistence.Put("conversations", agent+"/c1", conv, persistence.Any()),
						persistence.Put("audit", fmt.Sprintf("acct/%016x/%08x", time.Now().UnixNano(), i), audit, persistence.Absent()),
					)
					return err
				})
				b.StopTimer()
				if err := s.WaitApplied(); err != nil {
					b.Fatal(err)
				}
				after := s.WriteStats()
				n := float64(b.N)
				commitUs := float64(commitNs.Load()) / 1e3 / n
				applyUs := float64(applyNs.Load()) / 1e3 / n
				b.ReportMetric(n/elapsed.Seconds(), "turns/s")
				b.ReportMetric(float64(storetest.Percentile(all, 50).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(storetest.Percentile(all, 99).Microseconds())/1000, "p99-ms")
				b.ReportMetric(commitUs, "commit-µs/turn")
				// The commit's own tail (on the log: one append and
				// fdatasync), which every turn in its group waits for.
				durMu.Lock()
				slices.Sort(durations)
				b.ReportMetric(float64(storetest.Percentile(durations, 99).Microseconds())/1000, "commit-p99-ms")
				if len(durations) > 0 {
					b.ReportMetric(float64(durations[len(durations)-1].Microseconds())/1000, "commit-max-ms")
				}
				durMu.Unlock()
				b.ReportMetric(applyUs, "apply-µs/turn")
				b.ReportMetric(1e6/max(commitUs, applyUs), "turns-ceiling/s")
				b.ReportMetric(float64(after.Pages-before.Pages)/n, "pages/turn")
				if c := commits.Load(); c > 0 {
					b.ReportMetric(float64(batches.Load())/float64(c), "batches/commit")
				}
				if a := applies.Load(); a > 0 {
					b.ReportMetric(float64(commits.Load())/float64(a), "commits/apply")
				}
			})
		}
	}
}
