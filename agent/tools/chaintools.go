package tools

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/veilhq/veil/chains"
)

var pChainOpt = param{name: "chain", enum: chainEnum(), desc: "One chain the agent is deployed on. Default: every chain of the agent."}
var pChainDefault = param{name: "chain", enum: chainEnum(), desc: "Chain the agent is deployed on. Default: the agent's default (first) chain."}

// ChainError is one chain a multi-chain tool could not reach.
type ChainError struct {
	Chain chains.ID `json:"chain"`
	Error string    `json:"error"`
}

// ScanResult is the detail of scan_payments.
type ScanResult struct {
	// Count is the number of new payments found, all chains together.
	Count int `json:"count"`
	// Chain is set when one chain was scanned.
	Chain       chains.ID      `json:"chain,omitempty"`
	Chains      []ChainCount   `json:"chains"`
	Unavailable []ChainError   `json:"unavailable,omitempty"`
	Payments    []PaymentBrief `json:"unwithdrawn,omitempty"`
}

// ChainCount is one chain's count.
type ChainCount struct {
	Chain chains.ID `json:"chain"`
	Count int       `json:"count"`
}

// PaymentBrief is a received payment as tools report it.
type PaymentBrief struct {
	Chain          chains.ID `json:"chain"`
	StealthAddress string    `json:"stealthAddress"`
	Asset          string    `json:"asset"`
	Balance        string    `json:"balance"`
}

// maxListed caps the lists tools return.
const maxListed = 20

func scanPayments() Tool {
	return onChains(Tool{
		Name: "scan_payments",
		Description: "Scan the chain(s) now for stealth payments sent to this agent. Returns count (new payments found) " +
			"and the unwithdrawn payments (stealth addresses to use with withdraw).",
	}, func(ctx context.Context, env *Env, a *args, cs []chains.ID) (any, error) {
		res := &ScanResult{Chains: []ChainCount{}}
		if a.has("chain") {
			res.Chain = cs[0]
		}
		var ok []chains.ID
		var err error
		res.Unavailable, err = onEachChain(cs, "scanning", func(c chains.ID) error {
			n, err := env.Chains.Scan(ctx, c)
			if err == nil {
				ok = append(ok, c)
				res.Count += n
				res.Chains = append(res.Chains, ChainCount{Chain: c, Count: n})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(ok) == 0 {
			return nil, fmt.Errorf("scanning failed on every chain: %s", res.Unavailable[0].Error)
		}
		if env.Payments != nil {
			ps, err := received(ctx, env, ok)
			if err == nil {
				res.Payments = briefs(ps)
			}
		}
		return res, nil
	})
}

// briefs lists the unwithdrawn payments, newest first, capped.
func briefs(ps []Payment) []PaymentBrief {
	open := unwithdrawn(ps)
	sort.SliceStable(open, func(i, j int) bool { return open[i].ReceivedAt.After(open[j].ReceivedAt) })
	if len(open) > maxListed {
		open = open[:maxListed]
	}
	out := make([]PaymentBrief, len(open))
	for i, p := range open {
		out[i] = PaymentBrief{Chain: p.Chain, StealthAddress: p.StealthAddress, Asset: p.Asset, Balance: p.Balance}
	}
	return out
}

// BalanceResult is the detail of get_balance.
type BalanceResult struct {
	Balances    []ChainBalance `json:"balances"`
	Unavailable []ChainError   `json:"unavailable,omitempty"`
}

// ChainBalance is one chain's holdings: the agent's public address, and
// the received stealth payments not yet withdrawn (per asset).
type ChainBalance struct {
	Chain           chains.ID         `json:"chain"`
	Address         string            `json:"address"`
	NativeAsset     string            `json:"nativeAsset"`
	Native          string            `json:"native"`
	Tokens          map[string]string `json:"tokens"`
	Stealth         map[string]string `json:"stealth,omitempty"`
	StealthPayments int               `json:"stealthPayments"`
	// PendingOutgoing are the agent's payments on this chain still on
	// their way (pending or broadcast): they may or may not be counted in
	// Native and Tokens yet, depending on whether the node has them.
	PendingOutgoing []OutgoingBrief `json:"pendingOutgoing,omitempty"`
}

// OutgoingBrief is a payment on its way, as get_balance reports it.
type OutgoingBrief struct {
	PaymentID string        `json:"paymentId"`
	Amount    string        `json:"amount"`
	Asset     string        `json:"asset"`
	Recipient string        `json:"recipient"`
	Status    PaymentStatus `json:"status"`
	TxHash    string        `json:"txHash,omitempty"`
}

// pendingOutgoing is the briefs of the agent's payments on its way on c.
// A failed read leaves them out: the balance the chain answered is still
// right, and the records are the agent's own store.
func pendingOutgoing(ctx context.Context, env *Env, c chains.ID) []OutgoingBrief {
	if env.Outgoing == nil {
		return nil
	}
	ps, err := env.Outgoing.OpenOn(ctx, c)
	if err != nil {
		return nil
	}
	var out []OutgoingBrief
	for _, p := range ps {
		amount := p.Amount.String()
		if p.All {
			amount = "all"
		}
		out = append(out, OutgoingBrief{PaymentID: p.ID, Amount: amount, Asset: p.Asset,
			Recipient: orDefault(p.Recipient.Name, p.Recipient.Address), Status: p.Status, TxHash: p.TxHash})
	}
	return out
}

func getBalance() Tool {
	return onChains(Tool{
		Name:     "get_balance",
		ReadOnly: true,
		Description: "Balances of this agent: its public address (native asset and tokens), the received stealth payments " +
			"not yet withdrawn, and the outgoing payments still on their way (pendingOutgoing: amount, asset, recipient, status), per chain.",
	}, func(ctx context.Context, env *Env, _ *args, cs []chains.ID) (any, error) {
		res := &BalanceResult{Balances: []ChainBalance{}}
		var err error
		res.Unavailable, err = onEachChain(cs, "reading the balance", func(c chains.ID) error {
			b, err := env.Chains.Balance(ctx, c)
			if err != nil {
				return err
			}
			cb := ChainBalance{Chain: c, Address: env.Agent.Addresses[c], NativeAsset: c.NativeAsset(), Native: b.Native, Tokens: b.Tokens}
			if cb.Tokens == nil {
				cb.Tokens = map[string]string{}
			}
			if env.Payments != nil {
				if ps, err := env.Payments.Received(ctx, c); err == nil {
					for _, p := range unwithdrawn(ps) {
						if cb.Stealth == nil {
							cb.Stealth = map[string]string{}
						}
						cb.Stealth[p.Asset] = addDecimal(cb.Stealth[p.Asset], p.Balance)
						cb.StealthPayments++
					}
				}
			}
			cb.PendingOutgoing = pendingOutgoing(ctx, env, c)
			res.Balances = append(res.Balances, cb)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(res.Balances) == 0 {
			return nil, fmt.Errorf("no chain answered: %s", res.Unavailable[0].Error)
		}
		return res, nil
	})
}

// onEachChain runs op on each of cs. On one chain, its failure is the
// tool's, explained (chainErr) as what failed; on several, the chains that
// failed are listed and the others still run.
func onEachChain(cs []chains.ID, what string, op func(c chains.ID) error) ([]ChainError, error) {
	var failed []ChainError
	for _, c := range cs {
		if err := op(c); err != nil {
			if len(cs) == 1 {
				return nil, chainErr(what, c, err)
			}
			failed = append(failed, ChainError{Chain: c, Error: err.Error()})
		}
	}
	return failed, nil
}

// addDecimal adds two decimal strings exactly ("" is 0).
func addDecimal(a, b string) string {
	x, y := new(big.Rat), new(big.Rat)
	if _, ok := x.SetString(orZero(a)); !ok {
		x.SetInt64(0)
	}
	if _, ok := y.SetString(orZero(b)); !ok {
		y.SetInt64(0)
	}
	prec := max(fracDigits(a), fracDigits(b))
	s := new(big.Rat).Add(x, y).FloatString(prec)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func fracDigits(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

func isZero(s string) bool {
	x, ok := new(big.Rat).SetString(orZero(s))
	return !ok || x.Sign() == 0
}

// NameResult is the detail of register_name.
type NameResult struct {
	Name     string    `json:"name"`
	FullName string    `json:"fullName"`
	Chain    chains.ID `json:"chain"`
	TxHash   string    `json:"txHash"`
	TxLink   string    `json:"txLink"`
}

func registerName() Tool {
	return onChain(Tool{
		Name:        "register_name",
		Description: "Register this agent's name (name.veil → its stealth meta-address) in the chain's on-chain name registry, so others can pay it by name there.",
	}, func(ctx context.Context, env *Env, c chains.ID) (any, error) {
		tx, err := env.Chains.RegisterName(ctx, c)
		if errors.Is(err, chains.ErrNameTaken) {
			return nil, fmt.Errorf("%s%s on %s: %w (to another meta-address)", env.Agent.Name, chains.NameSuffix, c, err)
		}
		if err != nil {
			return nil, chainErr("registering "+env.Agent.Name+chains.NameSuffix, c, err)
		}
		return &NameResult{Name: env.Agent.Name, FullName: env.Agent.Name + chains.NameSuffix, Chain: c, TxHash: tx.TxHash, TxLink: txLink(env, c, tx)}, nil
	})
}

// ResolveResult is the detail of resolve_name.
type ResolveResult struct {
	Name     string `json:"name"`
	FullName string `json:"fullName"`
	// Source is "veil" (a Veil agent) or "chain" (the on-chain registry).
	Source        string               `json:"source"`
	Chains        []chains.ID          `json:"chains"`
	MetaAddresses map[chains.ID]string `json:"metaAddresses"`
}

var resolveSpec = spec{{name: "name", required: true, maxLen: 40, example: "bob.veil", desc: "Name to look up: bob or bob.veil."}}

func resolveName() Tool {
	return withArgs(Tool{
		Name:        "resolve_name",
		ReadOnly:    true,
		Description: "Look up a name (bob or bob.veil): the chains it can be paid on and its stealth meta-addresses. Veil agents first, then the on-chain registry of this agent's chains.",
		needs:       []service{agentDirectory},
	}, resolveSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		name, err := chains.ParseName(a.str("name"))
		if err != nil {
			return nil, err
		}
		res := &ResolveResult{Name: name, FullName: name + chains.NameSuffix, MetaAddresses: map[chains.ID]string{}, Chains: []chains.ID{}}
		found, err := env.Directory.LookupAgent(ctx, name)
		if err == nil {
			res.Source = "veil"
			for _, c := range found.Chains {
				if m := found.MetaAddresses[c]; m != "" {
					res.Chains = append(res.Chains, c)
					res.MetaAddresses[c] = m
				}
			}
			return res, nil
		}
		if !errors.Is(err, ErrUnknownRecipient) {
			return nil, fmt.Errorf("looking up %s%s failed: %w", name, chains.NameSuffix, err)
		}
		if env.Chains == nil {
			return nil, fmt.Errorf("%w: no Veil agent is named %s%s", ErrUnknownRecipient, name, chains.NameSuffix)
		}
		rc, err := resolveRecipient(ctx, env, name, "", true)
		if err != nil {
			return nil, err
		}
		res.Source = "chain"
		res.Chains = rc.chains()
		res.MetaAddresses = rc.meta
		return res, nil
	})
}

// FundResult is the detail of fund_wallet.
type FundResult struct {
	Chain   chains.ID `json:"chain"`
	Address string    `json:"address"`
	TxHash  string    `json:"txHash"`
	TxLink  string    `json:"txLink"`
}

func fundWallet() Tool {
	return onChain(Tool{
		Name:        "fund_wallet",
		Description: "Ask the test network's faucet to fund this agent's public address (test networks only).",
	}, func(ctx context.Context, env *Env, c chains.ID) (any, error) {
		tx, err := env.Chains.Fund(ctx, c)
		if err != nil {
			return nil, chainErr("funding from the faucet", c, err)
		}
		return &FundResult{Chain: c, Address: env.Agent.Addresses[c], TxHash: tx.TxHash, TxLink: txLink(env, c, tx)}, nil
	})
}

// AgentInfo is the detail of get_agent_info.
type AgentInfo struct {
	ID            string               `json:"id"`
	Name          string               `json:"name"`
	FullName      string               `json:"fullName"`
	DefaultChain  chains.ID            `json:"defaultChain"`
	Chains        []chains.ID          `json:"chains"`
	Addresses     map[chains.ID]string `json:"addresses"`
	MetaAddresses map[chains.ID]string `json:"metaAddresses"`
}

var noArgs = spec{}

func getAgentInfo() Tool {
	return withArgs(Tool{
		Name:        "get_agent_info",
		ReadOnly:    true,
		Description: "This agent's identity: name, full name (name.veil), chains, public addresses and stealth meta-addresses (what others pay).",
	}, noArgs, func(ctx context.Context, env *Env, _ *args) (any, error) {
		ag := env.Agent
		info := &AgentInfo{ID: ag.ID, Name: ag.Name, FullName: ag.Name + chains.NameSuffix, Chains: append([]chains.ID{}, ag.Chains...),
			Addresses: map[chains.ID]string{}, MetaAddresses: map[chains.ID]string{}}
		if len(ag.Chains) > 0 {
			info.DefaultChain = ag.Chains[0]
		}
		for _, c := range ag.Chains {
			info.Addresses[c] = ag.Addresses[c]
			info.MetaAddresses[c] = ag.MetaAddresses[c]
		}
		return info, nil
	})
}

// PrivacyReport is the detail of privacy_check.
type PrivacyReport struct {
	// Level is "good", "fair" or "at_risk".
	Level               string         `json:"level"`
	UnwithdrawnPayments int            `json:"unwithdrawnPayments"`
	WithdrawnPayments   int            `json:"withdrawnPayments"`
	Chains              []ChainPrivacy `json:"chains"`
	// LinkedWithdrawals are addresses that received withdrawals of more
	// than one payment, which links those payments.
	LinkedWithdrawals []LinkedAddress `json:"linkedWithdrawals,omitempty"`
	Unavailable       []ChainError    `json:"unavailable,omitempty"`
	Advice            []string        `json:"advice"`
}

// ChainPrivacy is one chain's part of the report.
type ChainPrivacy struct {
	Chain       chains.ID `json:"chain"`
	Unwithdrawn int       `json:"unwithdrawn"`
	Withdrawn   int       `json:"withdrawn"`
	// PublicFunds: the agent's public address holds a balance.
	PublicFunds bool `json:"publicFunds"`
	// PublicBalance is that balance (absent when unknown).
	PublicBalance *chains.Balance `json:"publicBalance,omitempty"`
}

// LinkedAddress is a withdrawal target shared by several payments.
type LinkedAddress struct {
	Chain    chains.ID `json:"chain"`
	Address  string    `json:"address"`
	Payments int       `json:"payments"`
	// Public is true when it is this agent's own public address.
	Public bool `json:"public"`
}

func privacyCheck() Tool {
	return withArgs(Tool{
		Name:     "privacy_check",
		ReadOnly: true,
		Description: "Review this agent's payment privacy: received stealth payments still unwithdrawn, withdrawals that link payments " +
			"(several to one address, or to the agent's public address), funds on the public address; with advice.",
		needs: []service{chainAccess, paymentRecords},
	}, noArgs, func(ctx context.Context, env *Env, _ *args) (any, error) {
		cs, err := agentChains(env, "")
		if err != nil {
			return nil, err
		}
		rep := &PrivacyReport{Chains: []ChainPrivacy{}, Advice: []string{}}
		type target struct {
			chain chains.ID
			addr  string
		}
		linked := map[target]int{}
		var publicFunds []chains.ID
		for _, c := range cs {
			cp := ChainPrivacy{Chain: c}
			ps, err := env.Payments.Received(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("reading received payments on %s: %w", c, err)
			}
			for _, p := range ps {
				if p.Withdrawn {
					cp.Withdrawn++
				} else {
					cp.Unwithdrawn++
				}
				seen := map[string]bool{}
				for _, to := range p.WithdrawnTo {
					k := to
					if c.Family() == chains.FamilyEVM {
						k = strings.ToLower(to)
					}
					if !seen[k] {
						seen[k] = true
						linked[target{c, k}]++
					}
				}
			}
			if b, err := env.Chains.Balance(ctx, c); err != nil {
				rep.Unavailable = append(rep.Unavailable, ChainError{Chain: c, Error: err.Error()})
			} else {
				bb := b
				cp.PublicBalance = &bb
				cp.PublicFunds = !isZero(b.Native)
				for _, v := range b.Tokens {
					cp.PublicFunds = cp.PublicFunds || !isZero(v)
				}
				if cp.PublicFunds {
					publicFunds = append(publicFunds, c)
				}
			}
			rep.UnwithdrawnPayments += cp.Unwithdrawn
			rep.WithdrawnPayments += cp.Withdrawn
			rep.Chains = append(rep.Chains, cp)
		}
		atRisk := false
		for t, n := range linked {
			public := sameAddress(t.chain, env.Agent.Addresses[t.chain], t.addr)
			if n > 1 || public {
				rep.LinkedWithdrawals = append(rep.LinkedWithdrawals, LinkedAddress{Chain: t.chain, Address: t.addr, Payments: n, Public: public})
			}
		}
		sort.Slice(rep.LinkedWithdrawals, func(i, j int) bool {
			x, y := rep.LinkedWithdrawals[i], rep.LinkedWithdrawals[j]
			if x.Chain != y.Chain {
				return chainIndex(x.Chain) < chainIndex(y.Chain)
			}
			return x.Address < y.Address
		})
		for _, l := range rep.LinkedWithdrawals {
			atRisk = true
			if l.Public {
				rep.Advice = append(rep.Advice, fmt.Sprintf("%d payment(s) on %s were withdrawn to this agent's public address, which ties them to its name. Withdraw to fresh addresses instead.", l.Payments, l.Chain))
			} else {
				rep.Advice = append(rep.Advice, fmt.Sprintf("%d payments on %s were withdrawn to the same address %s, so anyone can link them. Use a fresh address for each withdrawal.", l.Payments, l.Chain, l.Address))
			}
		}
		if len(publicFunds) > 0 {
			rep.Advice = append(rep.Advice, fmt.Sprintf("The public address holds funds on %s. Payments sent from it are visible as coming from this agent; that is expected for paying, but do not withdraw received stealth payments to it.", chainList(publicFunds)))
		}
		if rep.UnwithdrawnPayments > 0 {
			rep.Advice = append(rep.Advice, fmt.Sprintf("%d received payment(s) sit unlinked at one-time stealth addresses. When you withdraw, use a different fresh address for each and space withdrawals out; withdraw_all to one address links them.", rep.UnwithdrawnPayments))
		}
		if rep.UnwithdrawnPayments+rep.WithdrawnPayments == 0 {
			rep.Advice = append(rep.Advice, "No stealth payments received yet; share your name or meta-address to receive privately.")
		}
		if len(rep.Unavailable) > 0 {
			rep.Advice = append(rep.Advice, fmt.Sprintf("Public balances could not be read on %s; the report is incomplete there.", chainList(errChains(rep.Unavailable))))
		}
		switch {
		case atRisk:
			rep.Level = "at_risk"
		case len(publicFunds) > 0:
			rep.Level = "fair"
		default:
			rep.Level = "good"
		}
		return rep, nil
	})
}

// unwithdrawn keeps the payments of ps not yet withdrawn, in their order.
func unwithdrawn(ps []Payment) []Payment {
	var open []Payment
	for _, p := range ps {
		if !p.Withdrawn {
			open = append(open, p)
		}
	}
	return open
}

func chainIndex(c chains.ID) int {
	for i, o := range chains.Order() {
		if o == c {
			return i
		}
	}
	return len(chains.Order())
}

func errChains(es []ChainError) []chains.ID {
	out := make([]chains.ID, len(es))
	for i, e := range es {
		out[i] = e.Chain
	}
	return out
}

// onChains is withArgs for a tool whose one argument is its optional
// chain: do runs on the agent's chains it names (every chain of the agent
// when none is).
func onChains(t Tool, do func(ctx context.Context, env *Env, a *args, cs []chains.ID) (any, error)) Tool {
	return chainTool(t, pChainOpt, agentChains, do)
}

// onChain is onChains for a tool that runs on one chain (the agent's
// default when none is named).
func onChain(t Tool, do func(ctx context.Context, env *Env, c chains.ID) (any, error)) Tool {
	one := func(env *Env, arg string) ([]chains.ID, error) {
		c, err := agentChain(env, arg)
		return []chains.ID{c}, err
	}
	return chainTool(t, pChainDefault, one, func(ctx context.Context, env *Env, _ *args, cs []chains.ID) (any, error) {
		return do(ctx, env, cs[0])
	})
}

// chainTool resolves the chain argument p (with resolve) to the agent's
// chains and runs do on them, once the tool is known to reach chains at all.
func chainTool(t Tool, p param, resolve func(env *Env, arg string) ([]chains.ID, error), do func(ctx context.Context, env *Env, a *args, cs []chains.ID) (any, error)) Tool {
	return withArgs(t, spec{p}, func(ctx context.Context, env *Env, a *args) (any, error) {
		cs, err := resolve(env, a.str("chain"))
		if err != nil {
			return nil, err
		}
		if err := chainAccess.missing(env); err != nil {
			return nil, err
		}
		return do(ctx, env, a, cs)
	})
}
