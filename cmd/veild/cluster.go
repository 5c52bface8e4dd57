package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/runtime"
	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/metrics"
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
	if cfg.Enclave == "software" && os.Getenv("VEIL_ENCLAVE_ROOT") == "" {
		return &usageError{"--cluster with the software enclave needs VEIL_ENCLAVE_ROOT (the same 64 hex digits on every member), or agents would get different keys on each member"}
	}
	return nil
}

// joinCluster starts this process's membership; agents are then reached
// through the returned member wherever they live.
func joinCluster(ctx context.Context, cfg config, system *actor.ActorSystem, host *runtime.Host, mets *metrics.Metrics, log *slog.Logger) (*cluster.Member, error) {
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
		Name:       cfg.ClusterName,
		Addr:       cfg.ClusterAddr,
		Provider:   cfg.ClusterProvider,
		Seeds:      seeds,
		HealthAddr: cfg.ClusterHealth,
		Host:       host,
		Codec:      codec,
		Log:        log.With(slog.String("component", "cluster")),
		Observe:    mets.ClusterRequest,
	})
	if err != nil {
		return nil, fmt.Errorf("join the cluster: %w", err)
	}
	return m, nil
}
