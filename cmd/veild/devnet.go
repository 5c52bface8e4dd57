package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stellar"
)

// chainsConfig is the file `veild devnet` writes and `veild serve
// --chains-config` reads: the connector settings of every chain, so that
// the members of a local cluster all use the same chains.
type chainsConfig struct {
	EVM     map[chains.ID]evm.Config `json:"evm,omitempty"`
	Stellar *stellar.Config          `json:"stellar,omitempty"`
	Solana  *solana.Config           `json:"solana,omitempty"`
}

// devnets is a running set of embedded devnets and their connector
// settings.
type devnets struct {
	cfg     chainsConfig
	closers []func()
}

func (d *devnets) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// startDevnets starts the embedded devnets of the given EVM chains and,
// when asked, of Stellar and Solana, keeping their state under dir. With
// basePort > 0 they listen on fixed loopback ports (the EVM chains from
// basePort, Stellar at +4, Solana at +5), else on free ones.
func startDevnets(ctx context.Context, dir string, basePort int, evmIDs []chains.ID, withStellar, withSolana bool, log *slog.Logger) (_ *devnets, err error) {
	d := &devnets{cfg: chainsConfig{EVM: map[chains.ID]evm.Config{}}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	devLog := log.With(slog.String("component", "devnet"))
	if len(evmIDs) > 0 {
		log.Info("starting EVM devnets", slog.Any("chains", evmIDs))
		e, err := devnet.StartEVM(ctx, devnet.EVMOptions{
			Dir:      filepath.Join(dir, "evm"),
			Chains:   evmIDs,
			BasePort: basePort,
			Log:      devLog,
		})
		if err != nil {
			return nil, fmt.Errorf("start EVM devnets (set VEIL_RPC_<CHAIN> to use a real network, or --devnet-base-port 0 if the ports are taken): %w", err)
		}
		d.closers = append(d.closers, func() { _ = e.Close() })
		for _, id := range evmIDs {
			c, _ := e.Config(id)
			d.cfg.EVM[id] = c
		}
	}
	if withStellar {
		d.cfg.Stellar, err = startChainDevnet[stellar.Config](d, dir, chains.Stellar, "Stellar", func(dir string) (*stellardev.Devnet, error) {
			return stellardev.Start(ctx, stellardev.Options{Dir: dir, Addr: devnetAddr(basePort, 4), Log: devLog})
		})
		if err != nil {
			return nil, err
		}
	}
	if withSolana {
		d.cfg.Solana, err = startChainDevnet[solana.Config](d, dir, chains.Solana, "Solana", func(dir string) (*solanadev.Devnet, error) {
			return solanadev.Start(ctx, solanadev.Options{Dir: dir, Addr: devnetAddr(basePort, 5), Log: devLog})
		})
		if err != nil {
			return nil, err
		}
	}
	return d, nil
}

// chainDevnet is one chain's embedded devnet: the connector settings it
// serves, and its end.
type chainDevnet[C any] interface {
	Config() C
	Close() error
}

// startChainDevnet starts the devnet of chain id (named so in errors) with its
// state in dir/<id>, adds its end to d's, and returns its settings.
func startChainDevnet[C any, D chainDevnet[C]](d *devnets, dir string, id chains.ID, name string, start func(dir string) (D, error)) (*C, error) {
	dir = filepath.Join(dir, string(id))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	dn, err := start(dir)
	if err != nil {
		return nil, fmt.Errorf("start the %s devnet (set VEIL_RPC_%s to use a real network): %w", name, envChain(id), err)
	}
	d.closers = append(d.closers, func() { _ = dn.Close() })
	c := dn.Config()
	return &c, nil
}

// devnetCmd is `veild devnet`: the six devnets alone, shared by the
// members of a local cluster (docs/cluster.md), until SIGINT or SIGTERM.
func devnetCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("veild devnet", stderr)
	var cfg config
	fs.StringVar(&cfg.Data, "data", "./data", "directory of the devnets' state (<data>/devnet), kept across restarts")
	fs.IntVar(&cfg.DevnetBasePort, "devnet-base-port", 18545, "first loopback port (EVM chains on base+0..3, Stellar +4, Solana +5); 0 picks free ports")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&cfg.LogFormat, "log-format", "text", "log format: text or json")
	out := fs.String("out", "", "where to write the chains config for `veild serve --chains-config` (default <data>/chains.json)")
	log, err := parseServerFlags(fs, args, &cfg)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(cfg.Data, "chains.json")
	}
	if err := os.MkdirAll(cfg.Data, 0o700); err != nil {
		return fmt.Errorf("create data directory %s: %w", cfg.Data, err)
	}
	d, err := startDevnets(ctx, filepath.Join(cfg.Data, "devnet"), cfg.DevnetBasePort, evm.EVMChains(), true, true, log)
	if err != nil {
		return err
	}
	defer d.close()
	if err := writeChainsConfig(*out, d.cfg); err != nil {
		return err
	}
	log.Info("devnets serving", slog.String("chains_config", *out))
	fmt.Fprintf(stdout, "Devnets serving. Chains config written to %s\nStart members with: veild serve --chains-config %s\n", *out, *out)
	<-ctx.Done()
	log.Info("devnets stopping")
	return nil
}

// writeChainsConfig writes c to path (mode 0600) through a temporary file
// and a rename, so that a member never reads half a file.
func writeChainsConfig(path string, c chainsConfig) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode chains config: %w", err)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write chains config: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write chains config: %w", err)
	}
	return nil
}

// loadChainsConfig reads a file writeChainsConfig wrote.
func loadChainsConfig(path string) (*chainsConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--chains-config: %w", err)
	}
	var c chainsConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &usageError{fmt.Sprintf("--chains-config %s: %v", path, err)}
	}
	if len(c.EVM) == 0 && c.Stellar == nil && c.Solana == nil {
		return nil, &usageError{fmt.Sprintf("--chains-config %s: no chains in it", path)}
	}
	for id, ec := range c.EVM {
		if id.Family() != chains.FamilyEVM || ec.Chain != id || ec.RPCURL == "" {
			return nil, &usageError{fmt.Sprintf("--chains-config %s: bad EVM entry %q", path, id)}
		}
	}
	return &c, nil
}
