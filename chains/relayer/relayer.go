// Package relayer is the server side of the relayers (docs/operations.md,
// "Relayers"): one account per chain whose key the enclave derives at
// "veil/relayer/<chain>/<epoch>/account", that pays what one-time
// addresses need (EVM gas top-ups and x402 settlements, the Solana fee
// payer, the Stellar sponsor) so that their agent's main account never
// funds them, which would link them on chain.
//
// A Set holds the enabled relayers: their chains.Relayer (what a
// connector uses, chains.RelayerUser), the policy of their own spends
// (Authorizer), their balance and runway as Prometheus series (Collector)
// and their readiness checks (Checks). Connectors import only package
// chains; nothing here signs.
package relayer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

// Deriver derives public keys: the enclave (enclave.Provider).
type Deriver interface {
	DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.PublicKeys, error)
}

// Config says which chains have a relayer and its limits.
type Config struct {
	// Chains are the chains whose relayer is enabled.
	Chains []chains.ID
	// MinBalance is the balance (native asset, base units) below which a
	// relayer's readiness check warns; DefaultMinBalance for a chain not in
	// it.
	MinBalance map[chains.ID]*big.Int
	// MaxSpend is the most one relayer signature may move (native asset,
	// base units): the relayer's own policy; DefaultMaxSpend for a chain
	// not in it.
	MaxSpend map[chains.ID]*big.Int
	// Fees are each chain's fees by asset symbol (whole units), replacing
	// DefaultFees for a chain in it.
	Fees map[chains.ID]map[string]string
	// MinRunway is the number of relays, at the recent mean cost, below
	// which readiness warns (DefaultMinRunway when 0).
	MinRunway int
}

// DefaultMinRunway is Config.MinRunway's default.
const DefaultMinRunway = 20

// recent is how many relays the runway's mean cost is taken over.
const recent = 32

// balanceTTL is how long a read balance is reused (metrics scrapes and
// readiness probes each read it).
const balanceTTL = 5 * time.Second

// nativeDecimals are the native assets' decimals by chain family.
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

// DefaultFees are the fees a relayer takes from a token withdrawal it
// pays for, on a chain without fees configured: 0.05 USDC on EVM chains (a
// gas top-up and two token transfers on an L2), 0.01 USDC on Solana and
// Stellar. Set them for the network's gas price (--relayer-fee).
func DefaultFees(id chains.ID) map[string]string {
	if id.Family() == chains.FamilyEVM {
		return map[string]string{"USDC": "0.05"}
	}
	return map[string]string{"USDC": "0.01"}
}

// DefaultMinBalance is the warning threshold of a chain without one
// configured: 0.01 ETH (EVM), 0.05 SOL, 10 XLM.
func DefaultMinBalance(id chains.ID) *big.Int {
	switch id.Family() {
	case chains.FamilyEVM:
		return mustParse("0.01", 18)
	case chains.FamilyStellar:
		return mustParse("10", 7)
	default:
		return mustParse("0.05", 9)
	}
}

// DefaultMaxSpend bounds one relayer signature on a chain without a bound
// configured: 0.01 ETH (several token transfers' gas at 20 gwei), 0.01
// SOL (a fee and a token account's rent), 5 XLM (a sponsored account and
// trustline's reserves and fees).
func DefaultMaxSpend(id chains.ID) *big.Int {
	switch id.Family() {
	case chains.FamilyEVM:
		return mustParse("0.01", 18)
	case chains.FamilyStellar:
		return mustParse("5", 7)
	default:
		return mustParse("0.01", 9)
	}
}

func mustParse(s string, decimals int) *big.Int {
	v, err := chains.ParseAmount(s, decimals)
	if err != nil {
		panic(err)
	}
	return v
}

// Set is the enabled relayers. Its methods are safe for concurrent use.
type Set struct {
	cfg      Config
	accounts map[chains.ID]*Account
	order    []chains.ID
}

// Account is one chain's relayer.
type Account struct {
	relayer    *chains.Relayer
	minBalance *big.Int
	maxSpend   *big.Int
	decimals   int

	mu       sync.Mutex
	balance  func(ctx context.Context) (*big.Int, error)
	cached   *big.Int
	cachedAt time.Time
	costs    []*big.Int // the last `recent` relays' costs, oldest first
	spent    *big.Int
	relays   uint64
}

// New derives the relayer of every chain of cfg.Chains (duplicates
// ignored) with keys.
func New(ctx context.Context, keys Deriver, cfg Config) (*Set, error) {
	s := &Set{cfg: cfg, accounts: map[chains.ID]*Account{}}
	if s.cfg.MinRunway <= 0 {
		s.cfg.MinRunway = DefaultMinRunway
	}
	for _, id := range cfg.Chains {
		if _, dup := s.accounts[id]; dup {
			continue
		}
		if _, err := chains.Parse(string(id)); err != nil {
			return nil, fmt.Errorf("relayer: %w", err)
		}
		pub, err := keys.DeriveKeys(ctx, chains.RelayerID, id, 0)
		if err != nil {
			return nil, fmt.Errorf("relayer: derive the %s relayer's key: %w", id, err)
		}
		a := &Account{decimals: nativeDecimals(id), spent: new(big.Int),
			minBalance: DefaultMinBalance(id), maxSpend: DefaultMaxSpend(id)}
		if v := cfg.MinBalance[id]; v != nil {
			a.minBalance = v
		}
		if v := cfg.MaxSpend[id]; v != nil {
			a.maxSpend = v
		}
		fees := DefaultFees(id)
		if f, ok := cfg.Fees[id]; ok {
			fees = map[string]string{}
			for asset, v := range f {
				fees[strings.ToUpper(asset)] = v
			}
		}
		a.relayer = &chains.Relayer{Chain: id, Key: chains.RelayerKey(id), Address: pub.Address, Spent: a.record, Fees: fees}
		s.accounts[id] = a
		s.order = append(s.order, id)
	}
	return s, nil
}

// Enabled says whether chain has a relayer.
func (s *Set) Enabled(chain chains.ID) bool {
	if s == nil {
		return false
	}
	_, ok := s.accounts[chain]
	return ok
}

// Chains are the chains with a relayer, in the configured order.
func (s *Set) Chains() []chains.ID {
	if s == nil {
		return nil
	}
	return append([]chains.ID(nil), s.order...)
}

// Relayer is chain's relayer for its connector (nil when disabled).
func (s *Set) Relayer(chain chains.ID) *chains.Relayer {
	if a := s.account(chain); a != nil {
		return a.relayer
	}
	return nil
}

func (s *Set) account(chain chains.ID) *Account {
	if s == nil {
		return nil
	}
	return s.accounts[chain]
}

// SetBalance gives chain's relayer the reader of its native balance (base
// units): the chain's connector, once it serves.
func (s *Set) SetBalance(chain chains.ID, read func(ctx context.Context) (*big.Int, error)) {
	if a := s.account(chain); a != nil {
		a.mu.Lock()
		a.balance = read
		a.cached = nil
		a.mu.Unlock()
	}
}

// BalanceReader makes SetBalance's reader of a connector's Balance: the
// native amount of address, parsed with chain's native decimals.
func BalanceReader(chain chains.ID, address string, balance func(ctx context.Context, address string) (chains.Balance, error)) func(ctx context.Context) (*big.Int, error) {
	return func(ctx context.Context) (*big.Int, error) {
		b, err := balance(ctx, address)
		if err != nil {
			return nil, err
		}
		v, err := chains.ParseAmount(b.Native, nativeDecimals(chain))
		if err != nil {
			return nil, fmt.Errorf("relayer: %s balance %q: %w", chain, b.Native, err)
		}
		return v, nil
	}
}

// record is chains.Relayer.Spent.
func (a *Account) record(cost *big.Int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.relays++
	a.spent.Add(a.spent, cost)
	a.costs = append(a.costs, cost)
	if len(a.costs) > recent {
		a.costs = a.costs[len(a.costs)-recent:]
	}
	a.cached = nil // the balance moved
}

// ErrNoBalance reports a relayer whose balance cannot be read (its chain
// does not serve yet).
var ErrNoBalance = errors.New("relayer: balance unknown")

// Status is a relayer's state now.
type Status struct {
	Chain   chains.ID `json:"chain"`
	Address string    `json:"address"`
	Asset   string    `json:"asset"`
	// Balance is the native balance (base units); nil when unknown.
	Balance *big.Int `json:"-"`
	// MeanCost is the mean cost of the recent relays (base units); nil
	// before the first relay of this process.
	MeanCost *big.Int `json:"-"`
	// Runway is Balance / MeanCost, in relays; -1 when either is unknown.
	Runway int64 `json:"runway"`
	// Spent and Relays are this process's totals.
	Spent  *big.Int `json:"-"`
	Relays uint64   `json:"relays"`
	// Err is why Balance is unknown.
	Err error `json:"-"`
}

// Status reads chain's relayer (its balance at most balanceTTL old).
func (s *Set) Status(ctx context.Context, chain chains.ID) (Status, bool) {
	a := s.account(chain)
	if a == nil {
		return Status{}, false
	}
	return a.status(ctx), true
}

func (a *Account) status(ctx context.Context) Status {
	st := Status{Chain: a.relayer.Chain, Address: a.relayer.Address, Asset: a.relayer.Chain.NativeAsset(), Runway: -1}
	a.mu.Lock()
	read, cached, at := a.balance, a.cached, a.cachedAt
	st.Spent, st.Relays = new(big.Int).Set(a.spent), a.relays
	if n := len(a.costs); n > 0 {
		sum := new(big.Int)
		for _, c := range a.costs {
			sum.Add(sum, c)
		}
		st.MeanCost = sum.Div(sum, big.NewInt(int64(n)))
	}
	a.mu.Unlock()
	switch {
	case cached != nil && time.Since(at) < balanceTTL:
		st.Balance = cached
	case read == nil:
		st.Err = fmt.Errorf("%w: the %s chain does not serve yet", ErrNoBalance, a.relayer.Chain)
	default:
		b, err := read(ctx)
		if err != nil {
			st.Err = fmt.Errorf("%w: %w", ErrNoBalance, err)
			break
		}
		st.Balance = b
		a.mu.Lock()
		a.cached, a.cachedAt = b, time.Now()
		a.mu.Unlock()
	}
	if st.Balance != nil && st.MeanCost != nil && st.MeanCost.Sign() > 0 {
		st.Runway = new(big.Int).Div(st.Balance, st.MeanCost).Int64()
	}
	return st
}

// Low says why chain's relayer needs funding ("" when it does not): its
// balance is below its minimum, or covers fewer than MinRunway relays at
// the recent mean cost, or cannot be read.
func (s *Set) Low(ctx context.Context, chain chains.ID) string {
	a := s.account(chain)
	if a == nil {
		return ""
	}
	return a.low(a.status(ctx), s.cfg.MinRunway)
}

func (a *Account) low(st Status, minRunway int) string {
	asset := st.Asset
	fmtv := func(v *big.Int) string { return chains.FormatAmount(v, a.decimals) + " " + asset }
	switch {
	case st.Err != nil:
		return fmt.Sprintf("the %s relayer %s: %v", st.Chain, st.Address, st.Err)
	case st.Balance.Cmp(a.minBalance) < 0:
		return fmt.Sprintf("the %s relayer %s holds %s, under its minimum %s (--relayer-min-balance): fund it, or withdrawals from one-time addresses on %s will fail",
			st.Chain, st.Address, fmtv(st.Balance), fmtv(a.minBalance), st.Chain)
	case st.Runway >= 0 && st.Runway < int64(minRunway):
		return fmt.Sprintf("the %s relayer %s holds %s: %d relays at the recent mean cost of %s, under --relayer-min-runway %d: fund it",
			st.Chain, st.Address, fmtv(st.Balance), st.Runway, fmtv(st.MeanCost), minRunway)
	}
	return ""
}

// Authorizer returns the enclave's authorizer for every spend: a
// relayer's (chains.RelayerID) by the relayer's own policy — its chain's
// relayer is enabled, the asset is the native one, the amount is named
// and at most the chain's maximum — and every other spend by agents (the
// owners' policies, approvals included).
func (s *Set) Authorizer(agents enclave.Authorizer) enclave.Authorizer {
	return authorizer{set: s, agents: agents}
}

type authorizer struct {
	set    *Set
	agents enclave.Authorizer
}

func (z authorizer) Authorize(ctx context.Context, sp chains.Spend) error {
	if sp.AgentID != chains.RelayerID {
		return z.agents.Authorize(ctx, sp)
	}
	a := z.set.account(sp.Chain)
	switch {
	case a == nil:
		return fmt.Errorf("%w: no relayer is enabled on %s (--relayer)", enclave.ErrPolicy, sp.Chain)
	case !strings.EqualFold(sp.Asset, sp.Chain.NativeAsset()):
		return fmt.Errorf("%w: the %s relayer spends only %s, not %s", enclave.ErrPolicy, sp.Chain, sp.Chain.NativeAsset(), sp.Asset)
	case sp.All:
		return fmt.Errorf("%w: a relayer spend names its amount", enclave.ErrPolicy)
	}
	units, err := sp.Amount.In(a.decimals)
	if err != nil {
		return fmt.Errorf("%w: relayer spend amount: %v", enclave.ErrPolicy, err)
	}
	if units.Cmp(a.maxSpend) > 0 {
		return fmt.Errorf("%w: the %s relayer pays at most %s %s per signature (--relayer-max-spend), this one asks %s",
			enclave.ErrPolicy, sp.Chain, chains.FormatAmount(a.maxSpend, a.decimals), sp.Chain.NativeAsset(), sp.Amount)
	}
	return nil
}
