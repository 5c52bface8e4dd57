package scanner_test

import (
	"encoding/json"
	"fmt"
	"os"
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
	n := 10_000
	if v, err := strconv.Atoi(os.Getenv("VEIL_BENCH_AGENTS")); err == nil && v > 0 {
		n = v
	}
	const page = 32
	env := moneytest.NewEnv(b, moneytest.NewClock(time.Now()))
	// Agents are written straight to the store (creating 10k through the
	// actors would measure creation); two real ones receive payments.
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
		if len(ops) == 1000 {
			if _, err := env.Store.Apply(ctx, ops...); err != nil {
				b.Fatal(err)
			}
			ops = ops[:0]
		}
	}
	if len(ops) > 0 {
		if _, err := env.Store.Apply(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
	for i := range page - 2 {
		env.Chain.Announce(pay(b, stranger(b), "1", fmt.Sprintf("0xs%d", i)))
	}
	env.Chain.Announce(pay(b, alice.MetaAddresses["ethereum"], "1", "0xa"), pay(b, bob.MetaAddresses["ethereum"], "1", "0xb"))
	s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log, PageSize: page})
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
		if err != nil || rep.Matches != 2 || rep.Announcements != page {
			b.Fatalf("%+v %v", rep, err)
		}
	}
	b.StopTimer()
	pairs := float64(page) * float64(n) * float64(b.N)
	b.ReportMetric(pairs/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(page*b.N)/b.Elapsed().Seconds(), "announcements/s")
	b.ReportMetric(first.Seconds(), "first-pass-s")
}
