package solana

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

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
	FailAfterSign = "solana.after-sign"
	// FailBeforeSend: the attempt is persisted, not yet sent.
	FailBeforeSend = "solana.before-send"
	// FailAfterSend: the node answered; the caller has no answer yet.
	FailAfterSend = "solana.after-send"
)

// Failpoints lists the names above.
func Failpoints() []string {
	return []string{FailAfterSign, FailBeforeSend, FailAfterSend}
}

// Options are a connector's dependencies; its Store holds the tables
// solana_intents, solana_names and solana_meta.
type Options = connopts.Options

// Tables of the connector.
const (
	TableIntents = "solana_intents"
	TableNames   = "solana_names"
	TableMeta    = "solana_meta"
)

// Connector is Solana's chains.Connector.
type Connector struct {
	connopts.Base
	// opts are the dependencies, defaults applied and Log naming the chain.
	opts Options
	cfg  Config
	rpc  *rpc.Client
	jrpc jsonrpc.RPCClient
	ann  solanago.PublicKey
	reg  solanago.PublicKey

	ledger *intents.Ledger[attempt]

	rentMu sync.Mutex
	rent   map[uint64]uint64

	registry *names.Index
	reqs     parse.Chain[solanago.PublicKey, edstealth.MetaAddress, asset]

	// relayer is the fee payer of one-time addresses' token withdrawals
	// when set (UseRelayer, relayer.go).
	relayer *chains.Relayer
}

var _ chains.Connector = (*Connector)(nil)

// New connects to cfg.RPCURL and checks that the node answers.
func New(ctx context.Context, cfg Config, opts Options) (*Connector, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Defaults("solana", chains.Solana, 30*time.Second); err != nil {
		return nil, err
	}
	jc := jsonrpc.NewClientWithOpts(cfg.RPCURL, &jsonrpc.RPCClientOpts{HTTPClient: opts.HTTPClient})
	c := &Connector{
		Base: connopts.NewBase(chains.Solana, cfg.ExplorerTx, 0, cfg.assets()), opts: opts,
		cfg: cfg, rpc: rpc.NewWithCustomRPCClient(jc), jrpc: jc,
		ann: solanago.MustPublicKeyFromBase58(cfg.AnnouncementAccount), reg: solanago.MustPublicKeyFromBase58(cfg.RegistryAccount),
		rent: map[uint64]uint64{},
	}
	c.ledger = c.newLedger()
	c.reqs = parse.Chain[solanago.PublicKey, edstealth.MetaAddress, asset]{
		Address: parseAddress, Own: c.Own, Asset: mintOf,
		Meta: parse.Meta(func(s string) (edstealth.MetaAddress, error) {
			return edstealth.ParseMetaAddressFor(edstealth.Solana, s)
		}),
	}
	c.registry = &names.Index{Store: opts.Store, Names: TableNames, Meta: TableMeta, Chain: chains.Solana, Scheme: edstealth.Solana, Page: c.registrations}
	if _, err := c.rpc.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed); err != nil {
		return nil, c.Unavailable("getLatestBlockhash at "+cfg.RPCURL, err)
	}
	return c, nil
}

// Config returns the configuration (defaults applied).
func (c *Connector) Config() Config { return c.cfg }

// Client exposes the RPC client (read-only uses: tests, tools).
func (c *Connector) Client() *rpc.Client { return c.rpc }

// asset is a request's asset, one of the connector's own (Own), with its
// mint (zero for SOL).
type asset struct {
	chains.Asset
	mint solanago.PublicKey
}

// mintOf is a (checked by Own, so its mint is a configured one) with its
// mint.
func mintOf(a chains.Asset) asset {
	if a.Native() {
		return asset{Asset: a}
	}
	return asset{Asset: a, mint: solanago.MustPublicKeyFromBase58(a.Ref)}
}

func (c *Connector) tokenByMint(m solanago.PublicKey) (Token, bool) {
	for _, t := range c.cfg.Tokens {
		if t.Mint == m.String() {
			return t, true
		}
	}
	return Token{}, false
}

func parseAddress(s string) (solanago.PublicKey, error) {
	k, err := solanago.PublicKeyFromBase58(strings.TrimSpace(s))
	if err != nil {
		return solanago.PublicKey{}, fmt.Errorf("%w %q: want a base58 Solana address", chains.ErrInvalidAddress, s)
	}
	return k, nil
}

func (c *Connector) rentExempt(ctx context.Context, n uint64) (uint64, error) {
	c.rentMu.Lock()
	v, ok := c.rent[n]
	c.rentMu.Unlock()
	if ok {
		return v, nil
	}
	v, err := c.rpc.GetMinimumBalanceForRentExemption(ctx, n, rpc.CommitmentConfirmed)
	if err != nil {
		return 0, c.Unavailable("rent", err)
	}
	c.rentMu.Lock()
	c.rent[n] = v
	c.rentMu.Unlock()
	return v, nil
}

func (c *Connector) lamports(ctx context.Context, k solanago.PublicKey) (uint64, error) {
	r, err := c.rpc.GetBalance(ctx, k, rpc.CommitmentConfirmed)
	if err != nil {
		return 0, c.Unavailable("balance", err)
	}
	return r.Value, nil
}

// tokenAmount reads the balance of a token account; exists is false when
// it does not exist.
func (c *Connector) tokenAmount(ctx context.Context, acct solanago.PublicKey) (amount uint64, exists bool, err error) {
	info, err := c.rpc.GetAccountInfoWithOpts(ctx, acct, &rpc.GetAccountInfoOpts{Encoding: solanago.EncodingBase64, Commitment: rpc.CommitmentConfirmed})
	if errors.Is(err, rpc.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, c.Unavailable("account", err)
	}
	if info == nil || info.Value == nil {
		return 0, false, nil
	}
	d := info.Value.Data.GetBinary()
	if len(d) != 165 || !info.Value.Owner.Equals(solanago.TokenProgramID) {
		return 0, false, fmt.Errorf("%w: %s is not a token account", chains.ErrInvalidAddress, acct)
	}
	return binary.LittleEndian.Uint64(d[64:72]), true, nil
}

func ata(owner, mint solanago.PublicKey) solanago.PublicKey {
	a, _, err := solanago.FindAssociatedTokenAddress(owner, mint)
	if err != nil {
		panic(err) // only when no bump seed works: impossible in practice
	}
	return a
}

// Balance returns the SOL balance and every configured token's balance
// (its associated token account) of address.
func (c *Connector) Balance(ctx context.Context, address string) (chains.Balance, error) {
	k, err := parseAddress(address)
	if err != nil {
		return chains.Balance{}, err
	}
	l, err := c.lamports(ctx, k)
	if err != nil {
		return chains.Balance{}, err
	}
	out := chains.Balance{Native: chains.FormatAmount(new(big.Int).SetUint64(l), Decimals), Tokens: map[string]string{}}
	for _, t := range c.cfg.Tokens {
		amt, _, err := c.tokenAmount(ctx, ata(k, solanago.MustPublicKeyFromBase58(t.Mint)))
		if err != nil {
			return chains.Balance{}, err
		}
		out.Tokens[strings.ToUpper(t.Symbol)] = chains.FormatAmount(new(big.Int).SetUint64(amt), t.Decimals)
	}
	return out, nil
}

// Fund asks the faucet: on the embedded devnet veilFund (10 SOL and 10,000
// USDC in one transaction), elsewhere requestAirdrop of AirdropLamports
// (public clusters rate-limit it; an error there is chains.ErrUnavailable).
func (c *Connector) Fund(ctx context.Context, address string) (chains.TxResult, error) {
	k, err := parseAddress(address)
	if err != nil {
		return chains.TxResult{}, err
	}
	if c.cfg.DevnetFaucet {
		var sig string
		if err := c.rpc.RPCCallForInto(ctx, &sig, "veilFund", []any{k.String()}); err != nil {
			return chains.TxResult{}, c.Unavailable("faucet", err)
		}
		return c.Result(sig), nil
	}
	sig, err := c.rpc.RequestAirdrop(ctx, k, c.cfg.AirdropLamports, rpc.CommitmentConfirmed)
	if err != nil {
		return chains.TxResult{}, c.Unavailable("requestAirdrop", err)
	}
	return c.Result(sig.String()), nil
}
