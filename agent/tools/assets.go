package tools

import (
	"fmt"
	"strings"

	"github.com/veilhq/veil/chains"
)

// Asset is a symbol a chain carries and its decimal places.
type Asset struct {
	Symbol   string `json:"symbol"`
	Decimals int    `json:"decimals"`
	Native   bool   `json:"native"`
}

// MaxAmountLen caps an amount string (a uint256 has 78 digits).
const MaxAmountLen = 80

var evmTokens = []Asset{{Symbol: "USDC", Decimals: 6}, {Symbol: "ZEN", Decimals: 18}}

// Assets lists the assets the tools accept on chain, native first. EVM
// chains carry their native asset (18 decimals) and the USDC (6) and ZEN
// (18) tokens (on horizen ZEN is the native asset); Stellar carries XLM and
// USDC, both with Stellar's 7 decimals; Solana carries SOL (9) and USDC (6,
// the SPL mint's decimals).
func Assets(chain chains.ID) []Asset {
	switch chain {
	case chains.Horizen:
		return []Asset{{Symbol: "ZEN", Decimals: 18, Native: true}, {Symbol: "USDC", Decimals: 6}}
	case chains.Ethereum, chains.Base, chains.Polygon:
		return append([]Asset{{Symbol: chain.NativeAsset(), Decimals: 18, Native: true}}, evmTokens...)
	case chains.Stellar:
		return []Asset{{Symbol: "XLM", Decimals: 7, Native: true}, {Symbol: "USDC", Decimals: 7}}
	case chains.Solana:
		return []Asset{{Symbol: "SOL", Decimals: 9, Native: true}, {Symbol: "USDC", Decimals: 6}}
	}
	return nil
}

// LookupAsset finds symbol (any case) on chain.
func LookupAsset(chain chains.ID, symbol string) (Asset, error) {
	sym := strings.ToUpper(strings.TrimSpace(symbol))
	for _, a := range Assets(chain) {
		if a.Symbol == sym {
			return a, nil
		}
	}
	return Asset{}, fmt.Errorf("%w %q on %s: use one of %s", chains.ErrUnknownAsset, clip(symbol, 16), chain, assetList(chain))
}

func nativeAsset(chain chains.ID) Asset { return Assets(chain)[0] }

func assetList(chain chains.ID) string {
	var s []string
	for _, a := range Assets(chain) {
		s = append(s, a.Symbol)
	}
	return strings.Join(s, ", ")
}

// ParseAmount validates a decimal amount of asset and returns it
// normalised ("0.50" → "0.5"). Errors match chains.ErrInvalidAmount.
func ParseAmount(amount string, a Asset) (string, error) {
	v, err := a.Parse(amount)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

// Parse reads a decimal amount of the asset in whole units ("1.5") into
// base units, once: the parsed amount travels on to the connector.
// Errors match chains.ErrInvalidAmount.
func (a Asset) Parse(amount string) (chains.Amount, error) {
	if len(amount) > MaxAmountLen {
		return chains.Amount{}, fmt.Errorf("%w: %d characters is too long", chains.ErrInvalidAmount, len(amount))
	}
	v, err := chains.ParseAmountOf(amount, a.Decimals)
	if err != nil {
		return chains.Amount{}, fmt.Errorf("amount for %s (at most %d decimal places, digits and one '.', no exponent): %w", a.Symbol, a.Decimals, err)
	}
	return v, nil
}

func chainList(ids []chains.ID) string {
	if len(ids) == 0 {
		return "none"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

func deployed(ag *Agent, c chains.ID) bool {
	for _, d := range ag.Chains {
		if d == c {
			return true
		}
	}
	return false
}

// chainArg reads an optional chain argument once: "" (none given) or
// a chain the agent is deployed on.
func chainArg(env *Env, arg string) (chains.ID, error) {
	if len(env.Agent.Chains) == 0 {
		return "", fmt.Errorf("%w: the agent is not deployed on any chain", ErrNotConfigured)
	}
	if arg == "" {
		return "", nil
	}
	c, err := chains.Parse(arg)
	if err != nil {
		return "", argErr("%v", err)
	}
	if !deployed(&env.Agent, c) {
		return "", fmt.Errorf("%w: this agent is not deployed on %s; it is on %s", ErrInvalidArgs, c, chainList(env.Agent.Chains))
	}
	return c, nil
}

// agentChain resolves an optional chain argument against the agent's
// deployed chains; "" means the agent's default (first) chain.
func agentChain(env *Env, arg string) (chains.ID, error) {
	c, err := chainArg(env, arg)
	if err != nil || c != "" {
		return c, err
	}
	return env.Agent.Chains[0], nil
}

// agentChains is the chain argument as a list: one chain, or every
// deployed chain when arg is "".
func agentChains(env *Env, arg string) ([]chains.ID, error) {
	c, err := chainArg(env, arg)
	if err != nil {
		return nil, err
	}
	return scope(env, c), nil
}

// scope is the chains a parsed chain argument c names: c, or every
// deployed chain when it is "".
func scope(env *Env, c chains.ID) []chains.ID {
	if c == "" {
		return env.Agent.Chains
	}
	return []chains.ID{c}
}

// spend is what a payment, an invoice or a schedule moves: its chain, its
// asset and the amount in that asset's base units.
type spend struct {
	chain  chains.ID
	asset  Asset
	amount chains.Amount
}

// readSpend reads the chain, asset and amount arguments of a (readSpendOn
// with the chain argument read by chainArg).
func readSpend(env *Env, a *args, rc *recipient) (spend, error) {
	c, err := chainArg(env, a.str("chain"))
	if err != nil {
		return spend{}, err
	}
	return readSpendOn(env, c, a, rc)
}

// readSpendOn reads the asset and amount arguments of a on the chain
// argument c, already read ("" when none was given): the chain and asset
// by pickChain's rules (rc as there), the amount in that asset, each once.
func readSpendOn(env *Env, c chains.ID, a *args, rc *recipient) (spend, error) {
	c, asset, err := pickChain(env, c, a.str("asset"), rc)
	if err != nil {
		return spend{}, err
	}
	v, err := asset.Parse(a.str("amount"))
	if err != nil {
		return spend{}, err
	}
	return spend{chain: c, asset: asset, amount: v}, nil
}

// pickChain chooses the chain and asset of a payment (or invoice) from the
// chain argument (read by chainArg: "" or a deployed chain) and the
// optional asset argument; rc, when non-nil, limits the chains to those
// the recipient can be paid on. The rules (docs/tools.md):
//
//  1. an explicit chain must be one the agent (and the recipient) is on;
//  2. else an asset picks the first usable chain, in the agent's order,
//     that carries it (the default chain first);
//  3. else the recipient's meta-address prefix st:xlm / st:sol names the
//     chain; else the agent's default chain, which the recipient must be on.
func pickChain(env *Env, chainArg chains.ID, assetArg string, rc *recipient) (chains.ID, Asset, error) {
	ag := &env.Agent
	if len(ag.Chains) == 0 {
		return "", Asset{}, fmt.Errorf("%w: the agent is not deployed on any chain", ErrNotConfigured)
	}
	var usable []chains.ID
	for _, c := range ag.Chains {
		if rc == nil || rc.canPay(c) {
			usable = append(usable, c)
		}
	}
	withAsset := func(c chains.ID) (chains.ID, Asset, error) {
		if assetArg == "" {
			return c, nativeAsset(c), nil
		}
		a, err := LookupAsset(c, assetArg)
		if err != nil {
			return "", Asset{}, err
		}
		return c, a, nil
	}
	if chainArg != "" {
		if rc != nil && !rc.canPay(chainArg) {
			return "", Asset{}, rc.notOn(chainArg, usable)
		}
		return withAsset(chainArg)
	}
	if rc != nil && len(usable) == 0 {
		return "", Asset{}, rc.noShared(ag.Chains)
	}
	if assetArg != "" {
		for _, c := range usable {
			if a, err := LookupAsset(c, assetArg); err == nil {
				return c, a, nil
			}
		}
		var offers []string
		for _, c := range usable {
			offers = append(offers, fmt.Sprintf("%s: %s", c, assetList(c)))
		}
		where := "on any of your chains"
		if rc != nil {
			where = "on any chain you can use to pay " + rc.display
		}
		return "", Asset{}, fmt.Errorf("%w %q %s (%s)", chains.ErrUnknownAsset, clip(assetArg, 16), where, strings.Join(offers, "; "))
	}
	if rc != nil && rc.fixed != "" {
		if !deployed(ag, rc.fixed) {
			return "", Asset{}, fmt.Errorf("%w: %s is a %s meta-address but this agent is not deployed on %s; it is on %s", ErrInvalidArgs, clip(rc.display, 24), rc.fixed, rc.fixed, chainList(ag.Chains))
		}
		return withAsset(rc.fixed)
	}
	def := ag.Chains[0]
	if rc != nil && !rc.canPay(def) {
		return "", Asset{}, fmt.Errorf("%w: %s cannot be paid on your default chain %s; chains you can use: %s — pass chain, or an asset such as %s",
			ErrInvalidArgs, rc.display, def, chainList(usable), nativeAsset(usable[0]).Symbol)
	}
	return withAsset(def)
}
