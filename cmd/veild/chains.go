package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/relayer"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/httpapi/console"
	"github.com/veilhq/veil/persistence"
)

// chainSet is what serve starts for the chains: devnets for every chain
// without a configured RPC URL, a connector and a chain actor per chain.
type chainSet struct {
	refs agent.ChainMap
	// real marks the chains on a real network (VEIL_RPC_<CHAIN>), not a
	// devnet: their heads must be fresh (readiness).
	real map[chains.ID]bool
	// explorers read the devnet chains for the console's explorer pages
	// (the chains on a real network link to the network's explorer).
	explorers map[chains.ID]console.Explorer
	// networks say which network each chain runs on, for the devnet
	// banner of the console and the pay page.
	networks map[chains.ID]console.Network
	// settled relays every connector's settlements (chains.SettlementFunc)
	// to the receiver serve sets once the agents run; until then they wait
	// in the store.
	settled *chains.SettlementRelay
	closers []func()
}

// realCount is how many chains are on a real network.
func (s *chainSet) realCount() int {
	n := 0
	for _, r := range s.real {
		if r {
			n++
		}
	}
	return n
}

func (s *chainSet) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
}

// startChains connects every chain: to the network its VEIL_RPC_<CHAIN>
// names, else to the one --chains-config names (devnets another process
// runs, docs/cluster.md), else to an embedded devnet started here.
func startChains(ctx context.Context, cfg config, system *actor.ActorSystem, store persistence.Store, signer chains.Signer, relayers *relayer.Set, obs chainactor.Observer, log *slog.Logger) (*chainSet, error) {
	set := &chainSet{refs: agent.ChainMap{}, real: map[chains.ID]bool{}, explorers: map[chains.ID]console.Explorer{}, networks: map[chains.ID]console.Network{}, settled: &chains.SettlementRelay{}}
	ok := false
	defer func() {
		if !ok {
			set.close()
		}
	}()
	var shared *chainsConfig
	if cfg.ChainsConfig != "" {
		c, err := loadChainsConfig(cfg.ChainsConfig)
		if err != nil {
			return nil, err
		}
		shared = c
		log.Info("chains from the chains config; no devnet started here", slog.String("file", cfg.ChainsConfig))
	}
	// missing reports a chain with neither a real network nor a shared
	// one: it gets a devnet, except with --chains-config, where the
	// members must all see one chain and a private devnet would split them.
	missing := func(id chains.ID) error {
		if shared == nil {
			return nil
		}
		return &usageError{fmt.Sprintf("chain %s: not in --chains-config %s, and VEIL_RPC_%s is not set", id, cfg.ChainsConfig, envChain(id))}
	}

	configs := map[chains.ID]evm.Config{}
	var onDevnet []chains.ID
	for _, id := range evm.EVMChains() {
		c, err := envOrShared(set, id, func() (evm.Config, bool, error) { return evm.ConfigFromEnv(id, nil) }, shared,
			func(s *chainsConfig) *evm.Config {
				if c, has := s.EVM[id]; has {
					return &c
				}
				return nil
			}, missing)
		switch {
		case err != nil:
			return nil, err
		case set.real[id] || shared != nil:
			configs[id] = c
		default:
			onDevnet = append(onDevnet, id)
		}
	}
	scfg, err := envOrShared(set, chains.Stellar, func() (stellar.Config, bool, error) { return stellar.ConfigFromEnv(nil) }, shared,
		func(s *chainsConfig) *stellar.Config { return s.Stellar }, missing)
	if err != nil {
		return nil, err
	}
	lcfg, err := envOrShared(set, chains.Solana, func() (solana.Config, bool, error) { return solana.ConfigFromEnv(nil) }, shared,
		func(s *chainsConfig) *solana.Config { return s.Solana }, missing)
	if err != nil {
		return nil, err
	}
	stellarReal, solanaReal := set.real[chains.Stellar], set.real[chains.Solana]

	// noDevnet: the chains whose embedded devnet could not start (a
	// release build has none): each is down, and the rest serve.
	noDevnet := map[chains.ID]string{}
	if shared == nil {
		// One start per kind of devnet, so that one failing leaves the
		// others' chains serving.
		for _, part := range []struct {
			evm             []chains.ID
			stellar, solana bool
			ids             []chains.ID
		}{
			{evm: onDevnet, ids: onDevnet},
			{stellar: !stellarReal, ids: []chains.ID{chains.Stellar}},
			{solana: !solanaReal, ids: []chains.ID{chains.Solana}},
		} {
			if len(part.evm) == 0 && !part.stellar && !part.solana {
				continue
			}
			d, err := startDevnets(ctx, filepath.Join(cfg.Data, "devnet"), cfg.DevnetBasePort, part.evm, part.stellar, part.solana, log)
			if err != nil {
				if cfg.RequireAllChains {
					return nil, err
				}
				for _, id := range part.ids {
					log.Error("chain down: no node is configured and its embedded devnet did not start; the other chains serve (--require-all-chains refuses to start instead)",
						slog.String("chain", string(id)), slog.Any("err", err))
					noDevnet[id] = fmt.Sprintf("no node is configured for it on this server (VEIL_RPC_%s) and its embedded devnet could not start", envChain(id))
				}
				continue
			}
			set.closers = append(set.closers, d.close)
			for id, c := range d.cfg.EVM {
				configs[id] = c
			}
			if d.cfg.Stellar != nil {
				scfg = *d.cfg.Stellar
			}
			if d.cfg.Solana != nil {
				lcfg = *d.cfg.Solana
			}
		}
	}

	// Devnet transactions link to the console's explorer page on this
	// server (httpapi/console), not to the devnet's RPC, which answers raw
	// JSON.
	for id, c := range configs {
		if !set.real[id] {
			c.ExplorerTx = devnetExplorer(cfg.PublicURL, id)
			configs[id] = c
		}
	}
	if !stellarReal {
		scfg.ExplorerTx = devnetExplorer(cfg.PublicURL, chains.Stellar)
	}
	if !solanaReal {
		lcfg.ExplorerTx = devnetExplorer(cfg.PublicURL, chains.Solana)
	}
	// The network each chain runs on: a chain not on a real network
	// (VEIL_RPC_<CHAIN>) is a devnet, embedded here or shared through
	// --chains-config.
	for id, c := range configs {
		set.networks[id] = console.EVMNetwork(id, c.ChainID, !set.real[id])
	}
	set.networks[chains.Stellar] = console.StellarNetwork(scfg.NetworkPassphrase, !stellarReal)
	set.networks[chains.Solana] = console.SolanaNetwork(lcfg.RPCURL, !solanaReal)

	opts := chainactor.Options{Log: log, Observer: obs, Store: store}
	// start runs a chain's actor over the connector dial makes, and gives
	// a devnet chain the console's explorer. A node that does not answer
	// (chains.ErrUnavailable) leaves the chain degraded, connecting in the
	// background, unless --require-all-chains; any other error (a
	// configuration the node contradicts) stops the start.
	start := func(id chains.ID, dial func(context.Context) (chains.Connector, error), explorer func(chains.Connector) console.Explorer) error {
		if why, down := noDevnet[id]; down {
			ref, err := chainactor.StartPending(system, id, why, nil, opts)
			if err != nil {
				return err
			}
			set.closers = append(set.closers, ref.Stop)
			set.refs[id] = ref
			return nil
		}
		dial = relayed(relayers, id, !set.real[id], log, dial)
		conn, err := dial(ctx)
		if err != nil && (cfg.RequireAllChains || !errors.Is(err, chains.ErrUnavailable) || ctx.Err() != nil) {
			return err
		}
		if err != nil {
			log.Error("chain degraded: its node does not answer; the other chains serve, and this one will as soon as its node answers (--require-all-chains refuses to start instead)",
				slog.String("chain", string(id)), slog.Any("err", err))
			// No console explorer for it: the explorer needs the connector.
			ref, err := chainactor.StartPending(system, id, "", dial, opts)
			if err != nil {
				return err
			}
			set.closers = append(set.closers, ref.Stop)
			set.refs[id] = ref
			return nil
		}
		ref, err := chainactor.Start(ctx, system, conn, opts)
		if err != nil {
			return err
		}
		set.closers = append(set.closers, ref.Stop)
		set.refs[id] = ref
		if !set.real[id] {
			set.explorers[id] = explorer(conn)
		}
		return nil
	}
	if err := start(chains.Stellar, func(ctx context.Context) (chains.Connector, error) {
		c, err := stellar.New(ctx, scfg, stellar.Options{Store: store, Signer: signer, Failpoint: failpoints.Hook(), OnSettled: set.settled.Deliver, Log: log.With(slog.String("chain", "stellar"))})
		if err != nil {
			return nil, fmt.Errorf("connect stellar: %w", err)
		}
		if !set.real[chains.Stellar] {
			devnetSponsor(ctx, c, log)
		}
		return c, nil
	}, func(c chains.Connector) console.Explorer { return console.NewStellar(c.(*stellar.Connector)) }); err != nil {
		return nil, err
	}
	if err := start(chains.Solana, func(ctx context.Context) (chains.Connector, error) {
		c, err := solana.New(ctx, lcfg, solana.Options{Store: store, Signer: signer, Failpoint: failpoints.Hook(), OnSettled: set.settled.Deliver, Log: log.With(slog.String("chain", "solana"))})
		if err != nil {
			return nil, fmt.Errorf("connect solana: %w", err)
		}
		return c, nil
	}, func(c chains.Connector) console.Explorer { return console.NewSolana(c.(*solana.Connector)) }); err != nil {
		return nil, err
	}
	for _, id := range evm.EVMChains() {
		c, has := configs[id]
		if _, down := noDevnet[id]; !has && !down {
			continue
		}
		if err := start(id, func(ctx context.Context) (chains.Connector, error) {
			conn, err := evm.New(ctx, c, evm.Options{Store: store, Signer: signer, Failpoint: failpoints.Hook(), OnSettled: set.settled.Deliver, Log: log.With(slog.String("chain", string(id)))})
			if err != nil {
				// The URL may carry a provider's key: it goes to the log
				// only (this error is logged, never sent to a client).
				return nil, fmt.Errorf("connect %s at %s: %w", id, c.RPCURL, err)
			}
			return conn, nil
		}, func(c chains.Connector) console.Explorer { return console.NewEVM(c.(*evm.Connector)) }); err != nil {
			return nil, err
		}
	}
	ok = true
	return set, nil
}

// envOrShared is a chain's connector settings: its real network's, when
// its VEIL_RPC_<CHAIN> is set (recorded in set.real); else, with
// --chains-config (shared not nil), the file's entry, which must be there;
// else the zero settings, for a devnet to fill.
func envOrShared[C any](set *chainSet, id chains.ID, fromEnv func() (C, bool, error), shared *chainsConfig, entry func(*chainsConfig) *C, missing func(chains.ID) error) (C, error) {
	c, real, err := fromEnv()
	if err != nil {
		return c, &usageError{err.Error()}
	}
	set.real[id] = real
	if !real && shared != nil {
		e := entry(shared)
		if e == nil {
			return c, missing(id)
		}
		c = *e
	}
	return c, nil
}

// devnetExplorer is the transaction link template of a devnet chain:
// the console's explorer page, /console/explorer/tx/<hash>?chain=<chain>.
func devnetExplorer(publicURL string, id chains.ID) string {
	return strings.TrimRight(publicURL, "/") + "/console/explorer/tx/{hash}?chain=" + string(id)
}

// envChain is a chain's suffix in VEIL_RPC_<CHAIN>.
func envChain(id chains.ID) string { return strings.ToUpper(string(id)) }

// devnetAddr is the loopback address of the devnet at offset from the
// base port (free port when the base is 0).
func devnetAddr(base, offset int) string {
	if base <= 0 {
		return "127.0.0.1:0"
	}
	return fmt.Sprintf("127.0.0.1:%d", base+offset)
}

// devnetSponsorSeed is the Stellar devnet's sponsor key: a well-known key,
// like the devnet's root, used only on a devnet.
var devnetSponsorSeed = sha256.Sum256([]byte("veil devnet stellar sponsor"))

// devnetSponsor makes a devnet's Stellar connector activate invoice
// addresses (docs/chains-stellar.md, "Invoice destinations") with a
// well-known sponsor account that friendbot funds once. On a real network
// the sponsor is the server's relayer; without one, create_invoice refuses
// what a fresh account cannot receive.
func devnetSponsor(ctx context.Context, c *stellar.Connector, log *slog.Logger) {
	sp := stellar.KeySponsor(devnetSponsorSeed)
	if b, err := c.Balance(ctx, sp.Address()); err == nil && b.Native == "0" {
		if _, err := c.Fund(ctx, sp.Address()); err != nil {
			log.Warn("stellar devnet sponsor not funded; Stellar invoices are refused as without a sponsor", slog.String("sponsor", sp.Address()), slog.Any("err", err))
			return
		}
	} else if err != nil {
		log.Warn("stellar devnet sponsor not read; Stellar invoices are refused as without a sponsor", slog.Any("err", err))
		return
	}
	c.SetSponsor(sp)
}
