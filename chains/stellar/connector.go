package stellar

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/connopts"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/internal/names"
	"github.com/veilhq/veil/chains/internal/parse"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

// Failpoints of submitting a transaction (internal/failpoint): the hook
// in Options.Failpoint is called with these names. Tests only.
const (
	// FailAfterSign: an attempt is signed, nothing is persisted.
	FailAfterSign = "stellar.after-sign"
	// FailBeforeSubmit: the attempt is persisted, not yet submitted.
	FailBeforeSubmit = "stellar.before-submit"
	// FailAfterSubmit: Horizon answered; the caller has no answer yet.
	FailAfterSubmit = "stellar.after-submit"
)

// Failpoints lists the names above.
func Failpoints() []string {
	return []string{FailAfterSign, FailBeforeSubmit, FailAfterSubmit}
}

// Options are a connector's dependencies; its Store holds the tables
// stellar_intents, stellar_names and stellar_meta.
type Options = connopts.Options

// Tables of the connector.
const (
	TableIntents = "stellar_intents"
	TableNames   = "stellar_names"
	TableMeta    = "stellar_meta"
)

// Connector is Stellar's chains.Connector.
type Connector struct {
	connopts.Base
	// opts are the dependencies, defaults applied and Log naming the chain.
	opts Options
	cfg  Config
	hc   *horizonclient.Client

	ledger *intents.Ledger[attempt]

	indexMu     sync.Mutex
	indexExists map[string]bool

	registry *names.Index
	reqs     parse.Chain[string, edstealth.MetaAddress, asset]

	// spon is the server-wide sponsor (SetSponsor; nil: none).
	spon atomic.Pointer[sponsorBox]
}

var _ chains.Connector = (*Connector)(nil)

// New connects to cfg.HorizonURL and checks that it serves the configured
// network (its passphrase).
func New(ctx context.Context, cfg Config, opts Options) (*Connector, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Defaults("stellar", chains.Stellar, cfg.HTTPTimeout); err != nil {
		return nil, err
	}
	c := &Connector{
		Base: connopts.NewBase(chains.Stellar, cfg.ExplorerTx, 0, cfg.assets()), opts: opts,
		cfg: cfg, hc: &horizonclient.Client{HorizonURL: cfg.HorizonURL + "/", HTTP: opts.HTTPClient, AppName: "veil"},
		indexExists: map[string]bool{},
	}
	c.ledger = c.newLedger()
	c.reqs = parse.Chain[string, edstealth.MetaAddress, asset]{
		Address: parseAccount, Own: c.Own, Asset: stellarAsset,
		Meta: parse.Meta(func(s string) (edstealth.MetaAddress, error) {
			return edstealth.ParseMetaAddressFor(edstealth.Stellar, s)
		}),
	}
	c.registry = &names.Index{Store: opts.Store, Names: TableNames, Meta: TableMeta, Chain: chains.Stellar, Scheme: edstealth.Stellar, Page: c.registrations}
	root, err := c.call(ctx, func() (any, error) { return c.hc.Root() })
	if err != nil {
		return nil, c.Unavailable("root", err)
	}
	if p := root.(hProtocol.Root).NetworkPassphrase; p != cfg.NetworkPassphrase {
		return nil, fmt.Errorf("stellar: %s serves network %q, configured %q", cfg.HorizonURL, p, cfg.NetworkPassphrase)
	}
	return c, nil
}

// call runs a horizonclient call (which takes no context) so that ctx
// still bounds the wait.
func (c *Connector) call(ctx context.Context, f func() (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type res struct {
		v   any
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f()
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Config returns the configuration (defaults applied).
func (c *Connector) Config() Config { return c.cfg }

// PaymentNetwork implements payuri.Networked: the network passphrase
// that SEP-7 pay requests carry off the public network.
func (c *Connector) PaymentNetwork() string { return c.cfg.NetworkPassphrase }

// Client exposes the Horizon client (read-only uses: tests, tools).
func (c *Connector) Client() *horizonclient.Client { return c.hc }

// asset is an asset as Stellar names it (a request's: stellarAsset).
type asset struct {
	code   string // "XLM" for native
	issuer string
}

func (a asset) native() bool { return a.issuer == "" }

func (a asset) txn() txnbuild.Asset {
	if a.native() {
		return txnbuild.NativeAsset{}
	}
	return txnbuild.CreditAsset{Code: a.code, Issuer: a.issuer}
}

func (a asset) key() string {
	if a.native() {
		return "native"
	}
	return a.code + ":" + a.issuer
}

// stellarAsset is a (one of the connector's own: Own) as Stellar names
// it: its code and issuer.
func stellarAsset(a chains.Asset) asset { return asset{code: a.Symbol, issuer: a.Ref} }

func parseAccount(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strkey.IsValidEd25519PublicKey(s) {
		return "", fmt.Errorf("%w %q: want a Stellar account id (G…)", chains.ErrInvalidAddress, s)
	}
	return s, nil
}

func pubKey(addr string) ed25519.PublicKey {
	b, err := strkey.Decode(strkey.VersionByteAccountID, addr)
	if err != nil {
		return nil
	}
	return ed25519.PublicKey(b)
}

// account reads an account; found is false for a missing one.
func (c *Connector) account(ctx context.Context, addr string) (hProtocol.Account, bool, error) {
	v, err := c.call(ctx, func() (any, error) { return c.hc.AccountDetail(horizonclient.AccountRequest{AccountID: addr}) })
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return hProtocol.Account{}, false, nil
		}
		return hProtocol.Account{}, false, c.Unavailable("account "+addr, err)
	}
	return v.(hProtocol.Account), true, nil
}

// claimableOf lists the unconditional claimable balances addr can claim
// alone, of asset a.
func (c *Connector) claimableOf(ctx context.Context, addr string, a asset) ([]hProtocol.ClaimableBalance, error) {
	v, err := c.call(ctx, func() (any, error) {
		return c.hc.ClaimableBalances(horizonclient.ClaimableBalanceRequest{Claimant: addr, Limit: 200})
	})
	if err != nil {
		return nil, c.Unavailable("claimable balances", err)
	}
	var out []hProtocol.ClaimableBalance
	for _, cb := range v.(hProtocol.ClaimableBalances).Embedded.Records {
		if cb.Asset != a.key() {
			continue
		}
		for _, cl := range cb.Claimants {
			if cl.Destination == addr && cl.Predicate.Type == xdr.ClaimPredicateTypeClaimPredicateUnconditional {
				out = append(out, cb)
				break
			}
		}
	}
	return out, nil
}

func stroops(s string) *big.Int {
	v, err := chains.ParseAmount(s, Decimals)
	if err != nil {
		return new(big.Int)
	}
	return v
}

func lineBalance(acc hProtocol.Account, a asset) (*big.Int, bool) {
	for _, b := range acc.Balances {
		if a.native() && b.Type == "native" || !a.native() && b.Code == a.code && b.Issuer == a.issuer {
			return stroops(b.Balance), true
		}
	}
	return new(big.Int), false
}

// Balance returns the XLM balance and every configured asset's balance of
// address. An asset's balance counts its trustline and the unconditional
// claimable balances the address can claim alone (a payment to a one-time
// address, friendbot's USDC): the next payment or withdrawal claims them.
// A missing account holds nothing.
func (c *Connector) Balance(ctx context.Context, address string) (chains.Balance, error) {
	addr, err := parseAccount(address)
	if err != nil {
		return chains.Balance{}, err
	}
	out := chains.Balance{Native: "0", Tokens: map[string]string{}}
	acc, found, err := c.account(ctx, addr)
	if err != nil {
		return chains.Balance{}, err
	}
	if found {
		n, _ := lineBalance(acc, asset{code: "XLM"})
		out.Native = chains.FormatAmount(n, Decimals)
	}
	for _, ca := range c.cfg.Assets {
		a := asset{code: strings.ToUpper(ca.Code), issuer: ca.Issuer}
		total := new(big.Int)
		if found {
			total, _ = lineBalance(acc, a)
		}
		cbs, err := c.claimableOf(ctx, addr, a)
		if err != nil {
			return chains.Balance{}, err
		}
		for _, cb := range cbs {
			total.Add(total, stroops(cb.Amount))
		}
		out.Tokens[a.code] = chains.FormatAmount(total, Decimals)
	}
	return out, nil
}

// Fund asks friendbot to fund address: on the devnet 10,000 XLM and 10,000
// USDC (as a claimable balance), on the test network what SDF's friendbot
// gives (a new account only). Without friendbot it reports
// chains.ErrUnavailable.
func (c *Connector) Fund(ctx context.Context, address string) (chains.TxResult, error) {
	addr, err := parseAccount(address)
	if err != nil {
		return chains.TxResult{}, err
	}
	if !c.cfg.Friendbot {
		return chains.TxResult{}, fmt.Errorf("%w: this Stellar network has no friendbot; fund %s from the network's faucet", chains.ErrUnavailable, addr)
	}
	v, err := c.call(ctx, func() (any, error) { return c.hc.Fund(addr) })
	if err != nil {
		return chains.TxResult{}, c.Unavailable("friendbot", err)
	}
	return c.Result(v.(hProtocol.Transaction).Hash), nil
}
