package main

import (
	"log/slog"
	"sync"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/metrics"
)

// startMoneyServices starts the background payment scanner of every chain
// that has a chain actor and the schedule reminder (docs/scanner.md,
// docs/schedules.md). The returned stop ends them; call it before the agent
// host stops, since both deliver to agents.
func startMoneyServices(store persistence.Store, agents scanner.Agents, keys agent.Keys, refs agent.ChainMap, mets *metrics.Metrics, log *slog.Logger) (stop func()) {
	var stops []func()
	for _, id := range chains.Order() {
		ref, ok := refs[id]
		if !ok || ref == nil {
			continue
		}
		s := scanner.New(scanner.Options{Store: store, Chain: ref, Agents: agents, Keys: keys,
			Log: log.With(slog.String("component", "scanner"), slog.String("chain", string(id))),
			OnPass: func(chain chains.ID, rep scanner.Report, took time.Duration, err error) {
				if err == nil {
					mets.ScanPass(chain, rep.Announcements, rep.Announcements*rep.Agents, took)
				}
			}})
		s.Start()
		stops = append(stops, s.Stop)
	}
	rem := reminder.New(reminder.Options{Store: store, Agents: agents, Log: log.With(slog.String("component", "reminder"))})
	rem.Start()
	stops = append(stops, rem.Stop)
	var once sync.Once
	return func() {
		once.Do(func() {
			var wg sync.WaitGroup
			for _, f := range stops {
				wg.Add(1)
				go func() { defer wg.Done(); f() }()
			}
			wg.Wait()
		})
	}
}
