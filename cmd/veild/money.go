package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/actors/webhook"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/lease"
	"github.com/veilhq/veil/runtime/prom"
)

// scanHealth is the health of this process's payment scanners, one entry
// per chain whose scanner ran here: /readyz's "scanner" check fails on
// scanHealth.Err(scanNotReadyAfter) (a chain whose scans keep failing finds
// no payments).
var scanHealth = scanner.NewBoard()

// scanNotReadyAfter is how many failed scanner passes in a row make
// /readyz fail (one transient RPC error does not).
const scanNotReadyAfter = 3

// startMoneyServices starts the background payment scanner of every chain
// that has a chain actor and the schedule reminder (docs/scanner.md,
// docs/schedules.md) and the webhook deliverer, each under its lease in the store ("scanner/<chain>",
// "reminder"; docs/cluster.md), so that the members of a cluster run one
// copy of each between them. A single node takes every lease at once. The
// returned stop ends them and releases the leases; call it before the
// agent host stops, since both deliver to agents.
//
// placement is nil on a single node; in a cluster it is the member's view
// (clusterView), and each member scans for the agents it owns, again at
// once whenever the channel topology answers closes (the member list
// changed).
func startMoneyServices(store persistence.Store, agents scanner.Agents, keys agent.Keys, refs agent.ChainMap, placement func() scanner.View, topology func() <-chan struct{}, mets *prom.Metrics, log *slog.Logger, webhookAllowPrivate bool) (stop func()) {
	holder := lease.NewHolderID()
	// bbolt is opened by one process at a time: a lease record another
	// holder left there is a crashed predecessor's, not a live member's.
	_, exclusive := store.(*persistence.Bolt)
	leases, err := lease.New(lease.Options{Store: store, Holder: holder, Exclusive: exclusive, Log: log.With(slog.String("component", "lease"))})
	if err != nil {
		// Only a programming error (nil store, empty holder) gets here.
		panic(err)
	}
	log.Info("money services contend for their leases", slog.String("holder", holder))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var stops []func() // services that need no lease
	// run keeps one service under its lease until stop. The service is
	// built anew for every hold: a stopped scanner or reminder does not
	// start again.
	run := func(name string, start func() (stop func())) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = leases.Run(ctx, name, func(ctx context.Context) {
				stop := start()
				<-ctx.Done()
				stop()
			})
		}()
	}
	for _, id := range chains.Order() {
		ref, ok := refs[id]
		if !ok || ref == nil {
			continue
		}
		newScanner := func(watch scanner.Watch, place func() scanner.View, topology func() <-chan struct{}) *scanner.Scanner {
			// /readyz reads one health per chain: the scanner that
			// finds the announcements (in a cluster, this member's shard).
			board := scanHealth
			if watch == scanner.WatchTransfers {
				board = nil
			}
			var s *scanner.Scanner
			s = scanner.New(scanner.Options{Store: store, Chain: ref, Agents: agents, Keys: keys, Board: board, Watch: watch, Placement: place, Topology: topology,
				Log: log.With(slog.String("component", "scanner"), slog.String("chain", string(id))),
				OnPass: func(chain chains.ID, rep scanner.Report, took time.Duration, err error) {
					if err == nil {
						mets.ScanPass(chain, rep.Announcements, rep.Announcements*rep.Agents, took)
						mets.ScanOK(chain)
					} else {
						mets.ScanFailed(chain, s.Health().Failures)
					}
				}})
			return s
		}
		if placement == nil {
			// One node: one scanner per chain does everything.
			run("scanner/"+string(id), func() func() {
				s := newScanner(0, nil, nil)
				s.Start()
				return s.Stop
			})
			continue
		}
		// A cluster: every member scans the announcements for the agents
		// it owns (its shard, docs/scanner.md), and one member, under the
		// lease, watches the plain transfers to invoice addresses.
		shard := newScanner(scanner.WatchAnnouncements, placement, topology)
		shard.Start()
		stops = append(stops, shard.Stop)
		run("scanner/"+string(id), func() func() {
			s := newScanner(scanner.WatchTransfers, nil, nil)
			s.Start()
			return s.Stop
		})
	}
	run("reminder", func() func() {
		rem := reminder.New(reminder.Options{Store: store, Agents: agents, Log: log.With(slog.String("component", "reminder"))})
		rem.Start()
		return rem.Stop
	})
	// One webhook deliverer per store (docs/webhooks.md).
	run("webhooks", func() func() {
		d := webhook.NewDeliverer(webhook.Options{Store: store, AllowPrivate: webhookAllowPrivate, Metrics: mets,
			Log: log.With(slog.String("component", "webhooks")), Failpoint: failpoints.Hook()})
		d.Start()
		return d.Stop
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, stop := range stops {
				stop()
			}
			cancel()
			wg.Wait()
		})
	}
}

// newInstant is the payee side of payments between two agents of this
// Veil: the payer's actor tells it (agent.Deps.Sent), and it delivers the
// payment to the payee once the transaction is confirmed, before any scan
// (docs/scanner.md, "Payments between Veil agents"). agents is read at
// each delivery: in a cluster it is the member, joined after the agents'
// dependencies are built.
func newInstant(store persistence.Store, refs agent.ChainMap, keys agent.Keys, agents func() scanner.Agents, log *slog.Logger) *scanner.Instant {
	return scanner.NewInstant(scanner.InstantOptions{Store: store, Chains: refs, Agents: agentsVia(agents), Keys: keys,
		Log: log.With(slog.String("component", "instant-notify"))})
}

// agentsVia reaches the agents through whatever the function answers now.
type agentsVia func() scanner.Agents

func (f agentsVia) Request(ctx context.Context, id string, msg any) (any, error) {
	return f().Request(ctx, id, msg)
}
