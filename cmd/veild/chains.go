package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/persistence"
)

// chainSet is what serve starts for the chains: devnets for every chain
// without a configured RPC URL, a connector and a chain actor per chain.
type chainSet struct {
	refs    agent.ChainMap
	closers []func()
}

func (s *chainSet) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

func startChains(ctx context.Context, cfg config, system *actor.ActorSystem, store persistence.Store, signer chains.Signer, obs chainactor.Observer, log *slog.Logger) (*chainSet, error) {
	set := &chainSet{refs: agent.ChainMap{}}
	ok := false
	defer func() {
		if !ok {
			set.close()
		}
	}()
	configs := map[chains.ID]evm.Config{}
	var onDevnet []chains.ID
	for _, id := range chains.Order() {
		if id.Family() != chains.FamilyEVM {
			continue
		}
		c, real, err := evm.ConfigFromEnv(id, nil)
		if err != nil {
			return nil, &usageError{err.Error()}
		}
		if real {
			configs[id] = c
		} else {
			onDevnet = append(onDevnet, id)
		}
	}
	if len(onDevnet) > 0 {
		log.Info("starting EVM devnets", slog.Any("chains", onDevnet))
		d, err := devnet.StartEVM(ctx, devnet.EVMOptions{
			Dir:      filepath.Join(cfg.Data, "devnet", "evm"),
			Chains:   onDevnet,
			BasePort: cfg.DevnetBasePort,
			Log:      log.With(slog.String("component", "devnet")),
		})
		if err != nil {
			return nil, fmt.Errorf("start EVM devnets (set VEIL_RPC_<CHAIN> to use a real network, or --devnet-base-port 0 if the ports are taken): %w", err)
		}
		set.closers = append(set.closers, func() { _ = d.Close() })
		for _, id := range onDevnet {
			c, _ := d.Config(id)
			configs[id] = c
		}
	}
	for _, id := range chains.Order() {
		c, has := configs[id]
		if !has {
			continue
		}
		conn, err := evm.New(ctx, c, evm.Options{Store: store, Signer: signer, Log: log.With(slog.String("chain", string(id)))})
		if err != nil {
			return nil, fmt.Errorf("connect %s at %s: %w", id, c.RPCURL, err)
		}
		ref, err := chainactor.Start(ctx, system, conn, chainactor.Options{Log: log, Observer: obs})
		if err != nil {
			return nil, err
		}
		set.closers = append(set.closers, ref.Stop)
		set.refs[id] = ref
	}
	ok = true
	return set, nil
}
