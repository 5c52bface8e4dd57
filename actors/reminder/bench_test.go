package reminder_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// BenchmarkDue100k: 100,000 daily schedules (VEIL_BENCH_SCHEDULES
// overrides) of 1,000 agents fall due at once; one op is the reminder's
// pass that runs them all: per slot a RunSchedule through the agent actor
// (activated from the store), the payment on the fake chain (instant, with
// its idempotency key), the outcome and schedule_executed in one write, the
// schedule advanced (schedule and due index in one write). bbolt on disk,
// group commit. Reported: runs/s.
func BenchmarkDue100k(b *testing.B) {
	total := 100_000
	if v, err := strconv.Atoi(os.Getenv("VEIL_BENCH_SCHEDULES")); err == nil && v > 0 {
		total = v
	}
	const perAgent = 100
	agents := max(1, total/perAgent)
	start := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for range b.N {
		b.StopTimer()
		env := moneytest.NewEnv(b, moneytest.NewClock(start))
		meta := env.CreateAgent("payee").MetaAddresses["ethereum"]
		ids := make([]string, agents)
		var ops []persistence.Op
		for i := range ids {
			ids[i] = uuid.NewString()
			raw, _ := json.Marshal(agent.Record{ID: ids[i], Name: fmt.Sprintf("bench-%d", i), AccountID: moneytest.Account, Chain: "ethereum",
				Chains: []string{"ethereum"}, Addresses: map[string]string{"ethereum": fmt.Sprintf("0x%040x", i+1)},
				MetaAddresses: map[string]string{"ethereum": meta}})
			ops = append(ops, persistence.Put(agent.TableAgents, ids[i], raw, persistence.Any()))
		}
		if _, err := env.Store.Apply(ctx, ops...); err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, agents)
		sem := make(chan struct{}, 64)
		for _, id := range ids {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				s := state.NewSchedules(env.Store, id, env.Clock.Now)
				for range perAgent {
					if _, err := s.Create(ctx, tools.Schedule{Recipient: meta, Amount: "1", Asset: "ETH", Chain: chains.Ethereum, Interval: tools.Daily}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		env.Clock.Set(start.Add(24 * time.Hour))
		par, _ := strconv.Atoi(os.Getenv("VEIL_BENCH_PARALLEL")) // 0: the default
		rem := reminder.New(reminder.Options{Store: env.Store, Agents: env.Host, Now: env.Clock.Now, Log: env.Log, Parallel: par})
		b.StartTimer()
		t0 := time.Now()
		rep, err := rem.RunDue(ctx)
		took := time.Since(t0)
		b.StopTimer()
		if err != nil || rep.Paid != agents*perAgent || rep.Errors != 0 {
			b.Fatalf("%+v %v", rep, err)
		}
		if n := len(env.Chain.Sends()); n != agents*perAgent {
			b.Fatalf("%d payments", n)
		}
		b.ReportMetric(float64(rep.Paid)/took.Seconds(), "runs/s")
		b.ReportMetric(float64(agents*perAgent), "schedules")
	}
}
