package scanner_test

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// BenchmarkScanner10kAgents: one chain, 10,000 agents (VEIL_BENCH_AGENTS
// overrides), pages of 32 announcements of which 2 pay agents. An op is
// one full pass over a page: every (announcement, agent) pair checked with
// the batch scanner, the matches delivered through the agent actors, the
// cursor written. Reported: pairs/s (announcements × agents checked per
// second) and the one-time cost of loading the agents' keys.
func BenchmarkScanner10kAgents(b *testing.B) {
	n := benchAgents(10_000)
	env := benchEnv(b, n)
	s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log, PageSize: benchPage})
	defer s.Stop()

	// The first pass loads every agent's keys.
	start := time.Now()
	rep, err := s.ScanOnce(ctx)
	if err != nil || rep.Agents != n || rep.Matches != 2 {
		b.Fatalf("%+v %v", rep, err)
	}
	first := time.Since(start)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := scanner.ForgetCursors(ctx, env.Store, "ethereum"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := s.ScanOnce(ctx)
		if err != nil || rep.Matches != 2 || rep.Announcements != benchPage {
			b.Fatalf("%+v %v", rep, err)
		}
	}
	b.StopTimer()
	pairs := float64(benchPage) * float64(n) * float64(b.N)
	b.ReportMetric(pairs/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(benchPage*b.N)/b.Elapsed().Seconds(), "announcements/s")
	b.ReportMetric(first.Seconds(), "first-pass-s")
}

// benchPage is the announcements of a benchmark's page: 2 pay agents.
const benchPage = 32

// benchAgents is VEIL_BENCH_AGENTS, or def.
func benchAgents(def int) int {
	if v, err := strconv.Atoi(os.Getenv("VEIL_BENCH_AGENTS")); err == nil && v > 0 {
		return v
	}
	return def
}

// benchEnv is an env with n agents on ethereum and one page of
// announcements on its chain, 2 of which (the last two) pay agents (alice
// and bob, created through the actors; the others are written straight to
// the store: creating thousands through the actors would measure creation).
func benchEnv(b *testing.B, n int) *moneytest.Env {
	env := moneytest.NewEnv(b, moneytest.NewClock(time.Now()))
	alice, bob := env.CreateAgent("alice"), env.CreateAgent("bob")
	var ops []persistence.Op
	for i := range n - 2 {
		id := uuid.NewString()
		pk, err := env.Enclave.DeriveKeys(ctx, id, chains.Ethereum, 0)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(agent.Record{ID: id, Name: fmt.Sprintf("bench-%d", i), AccountID: moneytest.Account, Chain: "ethereum",
			Chains: []string{"ethereum"}, Addresses: map[string]string{"ethereum": pk.Address}, MetaAddresses: map[string]string{"ethereum": pk.MetaAddress}})
		ops = append(ops, persistence.Put(agent.TableAgents, id, raw, persistence.Any()))
		if len(ops) == 1000 || i == n-3 {
			if _, err := env.Store.Apply(ctx, ops...); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	for i := range benchPage - 2 {
		env.Chain.Announce(pay(b, stranger(b), "1", fmt.Sprintf("0xs%d", i)))
	}
	env.Chain.Announce(pay(b, alice.MetaAddresses["ethereum"], "1", "0xa"), pay(b, bob.MetaAddresses["ethereum"], "1", "0xb"))
	return env
}

// BenchmarkScannerMembers: one chain's agents (3,000; VEIL_BENCH_AGENTS)
// split between 1, 2 or 3 cluster members by the placement requests use,
// each member a sharded scanner in this process with its own GOMAXPROCS
// (procs=1: one core each; procs=all: one node on every core). The
// machine has 2 cores, so the members run one after the other, each
// timed alone, and the cluster's figures take them as running at once on
// their own cores: an op is one page of 32 announcements (2 pay agents)
// scanned by every member, each for its own agents, matches delivered and
// cursors written. Reported: pairs/s (announcements × agents per second
// for the whole cluster: pairs over the slowest member's pass),
// pairs/s/core (over the members' summed passes and their cores), and
// lag-ms (from a pass's start until the last member delivered its
// payments: the announcement lag, less the wait for the next pass).
func BenchmarkScannerMembers(b *testing.B) {
	n := benchAgents(3_000)
	env := benchEnv(b, n)
	for _, tc := range []struct{ members, procs int }{{1, 0}, {1, 1}, {2, 1}, {3, 1}} {
		procs := "all"
		if tc.procs > 0 {
			procs = strconv.Itoa(tc.procs)
		}
		b.Run(fmt.Sprintf("members=%d/procs=%s", tc.members, procs), func(b *testing.B) {
			var names []string
			for i := range tc.members {
				names = append(names, fmt.Sprintf("10.0.0.%d:7000", i+1))
			}
			var members []*scanner.Scanner
			for _, m := range names {
				s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log,
					PageSize: benchPage, Watch: scanner.WatchAnnouncements,
					Placement: func() scanner.View { return scanner.View{Members: names, Self: m, Place: place} }})
				defer s.Stop()
				members = append(members, s)
			}
			if tc.procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tc.procs))
			}
			cores := float64(runtime.GOMAXPROCS(0))
			pass := func() (slowest, sum time.Duration) {
				if err := scanner.ForgetCursors(ctx, env.Store, "ethereum"); err != nil {
					b.Fatal(err)
				}
				matches := 0
				for _, s := range members {
					start := time.Now()
					rep, err := s.ScanOnce(ctx)
					d := time.Since(start)
					if err != nil || rep.Announcements != benchPage {
						b.Fatalf("%+v %v", rep, err)
					}
					matches += rep.Matches
					slowest, sum = max(slowest, d), sum+d
				}
				if matches != 2 {
					b.Fatalf("%d matches, want 2", matches)
				}
				return slowest, sum
			}
			pass() // loads each member's keys
			var slowest, sum time.Duration
			b.ResetTimer()
			for range b.N {
				s, t := pass()
				slowest, sum = slowest+s, sum+t
			}
			b.StopTimer()
			pairs := float64(benchPage) * float64(n) * float64(b.N)
			b.ReportMetric(pairs/slowest.Seconds(), "pairs/s")
			b.ReportMetric(pairs/sum.Seconds()/cores, "pairs/s/core")
			b.ReportMetric(slowest.Seconds()*1000/float64(b.N), "lag-ms")
		})
	}
}
