package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"strings"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/relayer"
)

// relayerConfig reads --relayer, --relayer-min-balance,
// --relayer-max-spend and --relayer-min-runway (docs/operations.md,
// "Relayers"). --relayer is a comma-separated list of chains, "all" or
// "none" (the default: no relayer, and one-time addresses are funded as
// before, with its documented trade-off); the amount flags are
// comma-separated chain=amount pairs in the chain's native asset.
func relayerConfig(c config) (relayer.Config, error) {
	var out relayer.Config
	switch v := strings.TrimSpace(c.Relayer); v {
	case "", "none", "off":
	case "all":
		out.Chains = chains.Order()
	default:
		for _, s := range strings.Split(v, ",") {
			id, err := chains.Parse(strings.TrimSpace(s))
			if err != nil {
				return out, &usageError{fmt.Sprintf("--relayer: %v (chains: %s, or all, or none)", err, chainList())}
			}
			out.Chains = append(out.Chains, id)
		}
	}
	var err error
	if out.MinBalance, err = chainAmounts("--relayer-min-balance", c.RelayerMinBalance); err != nil {
		return out, err
	}
	if out.MaxSpend, err = chainAmounts("--relayer-max-spend", c.RelayerMaxSpend); err != nil {
		return out, err
	}
	if out.Fees, err = chainFees(c.RelayerFee); err != nil {
		return out, err
	}
	if c.RelayerMinRunway < 0 {
		return out, &usageError{"--relayer-min-runway must be 0 (the default, " + strconv.Itoa(relayer.DefaultMinRunway) + ") or more"}
	}
	out.MinRunway = c.RelayerMinRunway
	return out, nil
}

func chainList() string {
	var ids []string
	for _, id := range chains.Order() {
		ids = append(ids, string(id))
	}
	return strings.Join(ids, ", ")
}

// chainAmounts parses "base=0.05,solana=0.2": amounts of each chain's
// native asset, in base units.
func chainAmounts(flag, v string) (map[chains.ID]*big.Int, error) {
	out := map[chains.ID]*big.Int{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, pair := range strings.Split(v, ",") {
		name, amount, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return nil, &usageError{fmt.Sprintf("%s: %q is not chain=amount (e.g. base=0.05)", flag, pair)}
		}
		id, err := chains.Parse(strings.TrimSpace(name))
		if err != nil {
			return nil, &usageError{fmt.Sprintf("%s: %v", flag, err)}
		}
		units, err := chains.ParseAmount(strings.TrimSpace(amount), nativeDecimals(id))
		if err != nil || units.Sign() <= 0 {
			return nil, &usageError{fmt.Sprintf("%s: %s amount %q must be a positive number of %s", flag, id, amount, id.NativeAsset())}
		}
		out[id] = units
	}
	return out, nil
}

// chainFees parses --relayer-fee, "base:USDC=0.1,solana:USDC=0.02":
// each chain's fees by asset, in whole units of the asset (checked by the
// connector against the asset's decimals). "base:USDC=0" takes no fee.
func chainFees(v string) (map[chains.ID]map[string]string, error) {
	out := map[chains.ID]map[string]string{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, pair := range strings.Split(v, ",") {
		k, amount, ok := strings.Cut(strings.TrimSpace(pair), "=")
		name, asset, ok2 := strings.Cut(k, ":")
		if !ok || !ok2 || strings.TrimSpace(asset) == "" {
			return nil, &usageError{fmt.Sprintf("--relayer-fee: %q is not chain:asset=amount (e.g. base:USDC=0.05)", pair)}
		}
		id, err := chains.Parse(strings.TrimSpace(name))
		if err != nil {
			return nil, &usageError{fmt.Sprintf("--relayer-fee: %v", err)}
		}
		amount = strings.TrimSpace(amount)
		r, ok := new(big.Rat).SetString(amount)
		if !ok || r.Sign() < 0 || strings.ContainsAny(amount, "eE/") {
			return nil, &usageError{fmt.Sprintf("--relayer-fee: %s %s fee %q is not a decimal amount", id, asset, amount)}
		}
		if out[id] == nil {
			out[id] = map[string]string{}
		}
		if r.Sign() > 0 {
			out[id][strings.ToUpper(strings.TrimSpace(asset))] = amount
		}
	}
	return out, nil
}

func nativeDecimals(id chains.ID) int {
	switch id.Family() {
	case chains.FamilyEVM:
		return 18
	case chains.FamilyStellar:
		return 7
	default:
		return 9
	}
}

// relayed wraps a chain's dial so that the connector it makes gets the
// chain's relayer (chains.RelayerUser), the relayer's balance is read
// through it, and, on a devnet with a faucet, an empty relayer is funded
// like the other development accounts. A chain with a relayer enabled
// whose connector cannot use one yet serves without it (logged).
func relayed(set *relayer.Set, id chains.ID, devnet bool, log *slog.Logger, dial func(context.Context) (chains.Connector, error)) func(context.Context) (chains.Connector, error) {
	r := set.Relayer(id)
	if r == nil {
		return dial
	}
	return func(ctx context.Context) (chains.Connector, error) {
		conn, err := dial(ctx)
		if err != nil {
			return conn, err
		}
		u, ok := conn.(chains.RelayerUser)
		if !ok {
			log.Warn("a relayer is enabled for this chain but its connector cannot use one yet: one-time addresses are funded as without a relayer", slog.String("chain", string(id)))
			return conn, nil
		}
		u.UseRelayer(r)
		read := relayer.BalanceReader(id, r.Address, conn.Balance)
		set.SetBalance(id, read)
		log.Info("relayer", slog.String("chain", string(id)), slog.String("address", r.Address))
		if devnet {
			fundRelayer(ctx, conn, r, read, log)
		}
		return conn, nil
	}
}

// fundRelayer asks a devnet's faucet for an empty relayer's funds. A
// failure is logged: the relayer's readiness check reports it.
func fundRelayer(ctx context.Context, conn chains.Connector, r *chains.Relayer, read func(context.Context) (*big.Int, error), log *slog.Logger) {
	if bal, err := read(ctx); err == nil && bal.Sign() > 0 {
		return
	}
	if _, err := conn.Fund(ctx, r.Address); err != nil && !errors.Is(err, chains.ErrNoFaucet) {
		log.Warn("could not fund the relayer from the devnet's faucet", slog.String("chain", string(r.Chain)), slog.String("address", r.Address), slog.Any("err", err))
	}
}
