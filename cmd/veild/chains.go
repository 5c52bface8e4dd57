package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
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
	if err := startEd25519Chains(ctx, cfg, system, store, signer, obs, log, set); err != nil {
		return nil, err
	}
	for _, id := range chains.Order() {
		c, has := configs[id]
		if !has {
			continue
		}
		conn, err := evm.New(ctx, c, evm.Options{Store: store, Signer: signer, Failpoint: evmFailpoint(), Log: log.With(slog.String("chain", string(id)))})
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

// devnetAddr is the loopback address of the devnet at offset from the
// base port (free port when the base is 0).
func devnetAddr(base, offset int) string {
	if base <= 0 {
		return "127.0.0.1:0"
	}
	return fmt.Sprintf("127.0.0.1:%d", base+offset)
}

// startEd25519Chains starts Stellar and Solana: a connector to the
// configured network, or to the embedded devnet when none is configured.
func startEd25519Chains(ctx context.Context, cfg config, system *actor.ActorSystem, store persistence.Store, signer chains.Signer, obs chainactor.Observer, log *slog.Logger, set *chainSet) error {
	devLog := log.With(slog.String("component", "devnet"))
	start := func(id chains.ID, conn chains.Connector) error {
		ref, err := chainactor.Start(ctx, system, conn, chainactor.Options{Log: log, Observer: obs})
		if err != nil {
			return err
		}
		set.closers = append(set.closers, ref.Stop)
		set.refs[id] = ref
		return nil
	}

	scfg, real, err := stellar.ConfigFromEnv(nil)
	if err != nil {
		return &usageError{err.Error()}
	}
	if !real {
		if err := os.MkdirAll(filepath.Join(cfg.Data, "devnet", "stellar"), 0o700); err != nil {
			return err
		}
		d, err := stellardev.Start(ctx, stellardev.Options{Dir: filepath.Join(cfg.Data, "devnet", "stellar"), Addr: devnetAddr(cfg.DevnetBasePort, 4), Log: devLog})
		if err != nil {
			return fmt.Errorf("start the Stellar devnet (set VEIL_RPC_STELLAR to use a real network): %w", err)
		}
		set.closers = append(set.closers, func() { _ = d.Close() })
		scfg = d.Config()
	}
	sconn, err := stellar.New(ctx, scfg, stellar.Options{Store: store, Signer: signer, Failpoint: stellarFailpoint(), Log: log.With(slog.String("chain", "stellar"))})
	if err != nil {
		return fmt.Errorf("connect stellar: %w", err)
	}
	if err := start(chains.Stellar, sconn); err != nil {
		return err
	}

	lcfg, real, err := solana.ConfigFromEnv(nil)
	if err != nil {
		return &usageError{err.Error()}
	}
	if !real {
		if err := os.MkdirAll(filepath.Join(cfg.Data, "devnet", "solana"), 0o700); err != nil {
			return err
		}
		d, err := solanadev.Start(ctx, solanadev.Options{Dir: filepath.Join(cfg.Data, "devnet", "solana"), Addr: devnetAddr(cfg.DevnetBasePort, 5), Log: devLog})
		if err != nil {
			return fmt.Errorf("start the Solana devnet (set VEIL_RPC_SOLANA to use a real network): %w", err)
		}
		set.closers = append(set.closers, func() { _ = d.Close() })
		lcfg = d.Config()
	}
	lconn, err := solana.New(ctx, lcfg, solana.Options{Store: store, Signer: signer, Failpoint: solanaFailpoint(), Log: log.With(slog.String("chain", "solana"))})
	if err != nil {
		return fmt.Errorf("connect solana: %w", err)
	}
	return start(chains.Solana, lconn)
}
