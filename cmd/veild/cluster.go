package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/host"
	"github.com/veilhq/veil/runtime/lease"
	"github.com/veilhq/veil/runtime/prom"
)

// checkCluster refuses a cluster configuration that would lose or split
// state: members must share the store and derive the same keys.
func checkCluster(cfg config) error {
	if !cfg.Cluster {
		return nil
	}
	if cfg.Store != "postgres" {
		return &usageError{"--cluster needs --store postgres (with --postgres-dsn): every member must see the same state"}
	}
	if cfg.ClusterProvider == "k8s" && cfg.ClusterSize <= 0 {
		return &usageError{"--cluster-provider k8s needs --cluster-size N (the StatefulSet's replicas): a member that sees fewer than a majority of N serves no agent"}
	}
	if cfg.Enclave == "software" && os.Getenv("VEIL_ENCLAVE_ROOT") == "" {
		return &usageError{"--cluster with the software enclave needs VEIL_ENCLAVE_ROOT (the same 64 hex digits on every member), or agents would get different keys on each member"}
	}
	return nil
}

// exitRejoin is veild's exit status when a cluster member restarts to
// rejoin (EX_TEMPFAIL): the others dropped it for good (it was paused or
// cut off), and only a new process, with a fresh cluster identity, is
// admitted again. Its supervisor (systemd Restart=, Kubernetes) starts it
// again; docs/cluster.md.
const exitRejoin = 75

// rejoinGrace bounds the drain of a member that restarts to rejoin
// (--shutdown-grace, if shorter, bounds it too): a step of the heal's
// bound (docs/cluster.md). Its clients' requests in flight then end as
// when a member dies: a retriable failure, and the forwarded request
// finishes on its owner (chat's Idempotency-Key gets its answer there).
const rejoinGrace = 3 * time.Second

// rejoinExit bounds the whole restart of a member that rejoins, from the
// decision to the process's exit: what still holds it then (a directory
// waiting on a busy agent, the money services' lease releases, a store
// call, protoactor's shutdown, on a starved machine) is cut by exiting
// with exitRejoin at once. A member restarting to rejoin is fenced and has
// passivated its agents: exiting now is a crash of a fenced member, which
// the cluster is built to survive (crash-only: ownership epochs, payment
// intents, leases that expire). Measured before the cut: drains of 15-24 s
// after the decision at load 30-40 (docs/BENCHMARKS.md, "Heal after
// pauses and partitions"), for a bound of 3 s.
const rejoinExit = rejoinGrace + 2*time.Second

// exitProcess ends the process (os.Exit).
var exitProcess = os.Exit

// errRejoin is the cause of a shutdown to rejoin the cluster.
var errRejoin = errors.New("left the cluster to rejoin it with a fresh identity: start veild again (a supervisor does)")

// agentLoader is the agents' activation: in a cluster each activation takes
// an ownership epoch from the store (cluster.FencedLoader), so that a
// stale owner's writes are refused.
func agentLoader(cfg config, deps agent.Deps, self func() string) host.Loader {
	if !cfg.Cluster {
		return agent.Loader(deps)
	}
	return cluster.FencedLoader(deps.Store, self, func(st persistence.Store) host.Loader {
		d := deps
		d.Store = st
		return agent.Loader(d)
	})
}

// staleActivation tells the errors that mean an agent's activation worked
// on stale state: a version conflict that no agent code turned into an
// answer of its own (those would otherwise be 500s), or a write refused by
// the activation's fence.
func staleActivation(err error) bool {
	return errors.Is(err, persistence.ErrConflict) || errors.Is(err, persistence.ErrFenced)
}

// joinCluster starts this process's membership; agents are then reached
// through the returned member wherever they live. The member holds a store
// lease ("cluster/member/<address>") while it serves: one that cannot renew
// it (cut off from the database, or paused past its TTL) is fenced.
// rejoin is called when the member must restart to rejoin. The feed's
// wake-ups cross members: a notification stored here wakes the streams of
// the agent on every member, and the others' wake this process's streams.
func joinCluster(ctx context.Context, cfg config, system *actor.ActorSystem, host *host.Host, store persistence.Store, feed *agent.Feed, rejoin context.CancelCauseFunc, mets *prom.Metrics, log *slog.Logger) (*cluster.Member, error) {
	codec := msg.NewCodec()
	agent.RegisterWire(codec)
	var seeds []string
	for _, s := range strings.Split(cfg.ClusterSeeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	jctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m, err := cluster.Start(jctx, system, cluster.Config{
		Name:            cfg.ClusterName,
		Addr:            cfg.ClusterAddr,
		Advertise:       cfg.ClusterAdvertise,
		Provider:        cfg.ClusterProvider,
		Seeds:           seeds,
		HealthAddr:      cfg.ClusterHealth,
		HealthAdvertise: cfg.ClusterHealthAdvertise,
		Expected:        cfg.ClusterSize,
		Rejoin: func(string) {
			rejoin(errRejoin)
			time.AfterFunc(rejoinExit, func() {
				log.Error("rejoin drain cut short: exiting to rejoin now", slog.Duration("after", rejoinExit))
				exitProcess(exitRejoin)
			})
		},
		Host:     host,
		Codec:    msg.NewWire(codec),
		Log:      log.With(slog.String("component", "cluster")),
		Observe:  mets.ClusterRequest,
		OnNotify: feed.Wake,
	})
	if err != nil {
		return nil, fmt.Errorf("join the cluster: %w", err)
	}
	feed.SetRelay(m.Notify)
	m.SetLease(false)
	// Exclusive: the name is this member's address, and the newest
	// process at an address is the member (a restarted one does not wait
	// a TTL for its killed predecessor's record; a predecessor that was
	// only paused loses the lease at its next renewal, and is fenced).
	// OnRenew: the member's watchdog fences it at the hold's end on this
	// process's clock, even before the lease's own goroutine has run (a
	// process resumed after a pause past the TTL).
	leases, err := lease.New(lease.Options{Store: store, Holder: lease.NewHolderID(), Exclusive: true, Log: log.With(slog.String("component", "lease")),
		OnRenew: func(_ string, until time.Time) { m.SetLeaseUntil(until) }})
	if err != nil {
		m.Stop()
		return nil, err
	}
	go func() {
		_ = leases.Run(ctx, "cluster/member/"+m.Self(), func(lctx context.Context) {
			m.SetLease(true)
			<-lctx.Done()
			m.SetLease(false)
		})
	}()
	return m, nil
}

// clusterView is the member's view for the payment scanners: the members it
// sees and the placement requests use, so each member scans for the agents
// it hosts (docs/scanner.md, "Sharding"). A view without this member (not
// yet joined, or left) owns no agent.
func clusterView(m *cluster.Member) func() scanner.View {
	return func() scanner.View {
		return scanner.View{Members: m.Members(), Self: m.Self(), Place: cluster.Place}
	}
}
