package evm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/internal/connopts"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/internal/parse"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// Failpoints of submitting a transaction (internal/failpoint): the hook
// in Options.Failpoint is called with these names. Tests only.
const (
	// FailAfterSign: the transaction is signed, nothing is persisted.
	FailAfterSign = "evm.after-sign"
	// FailBeforePersist: right before the nonce reservation and the signed
	// transaction are written in one batch.
	FailBeforePersist = "evm.before-persist"
	// FailBeforeBroadcast: persisted, not yet sent to the node.
	FailBeforeBroadcast = "evm.before-broadcast"
	// FailAfterBroadcast: the node has the transaction; the caller has no
	// answer yet.
	FailAfterBroadcast = "evm.after-broadcast"
	// FailBeforeConfirm: Maintain saw the receipt and has not recorded it.
	FailBeforeConfirm = "evm.before-confirm"
)

// Failpoints lists the names above.
func Failpoints() []string {
	return []string{FailAfterSign, FailBeforePersist, FailBeforeBroadcast, FailAfterBroadcast, FailBeforeConfirm}
}

// Options are a connector's dependencies; its Store holds the tables
// evm_nonces, evm_intents and evm_pending.
type Options = connopts.Options

// Connector is one EVM chain's chains.Connector.
type Connector struct {
	connopts.Base
	// opts are the dependencies, defaults applied and Log naming the chain.
	opts     Options
	cfg      Config
	rpc      *rpc.Client
	eth      *ethclient.Client
	txSigner types.Signer
	chainID  *big.Int

	reqs parse.Chain[common.Address, secp256k1.MetaAddress, asset]

	// relayer pays one-time addresses' gas and submits x402 settlements
	// when set (UseRelayer); nil: the agent's main account does.
	relayer *chains.Relayer

	sender *bindings.StealthSender
	names  *bindings.VeilNames
	token  *bindings.TestToken
	ann    *bindings.ERC5564Announcer

	feeMu   sync.Mutex
	feeAt   time.Time
	feeBase *big.Int
	feeTip  *big.Int

	// taken is when Maintain first saw each intent's nonce mined without a
	// receipt of its own (see DropAfter); resent, when the restart pass
	// sent each intent's last attempt again (see advance).
	taken  intents.Marks
	resent intents.Marks
	// unsure intents.Marks the intents whose broadcast's outcome was unknown (the
	// node's answer lost, or the request): the next maintenance pass sends
	// their last attempt again, the same bytes, instead of waiting
	// StuckAfter for a fee bump.
	unsure intents.Marks

	// noBlockReceipts: the node answered that it does not serve
	// eth_getBlockReceipts (see blockReceipts).
	noBlockReceipts atomic.Bool
}

var _ chains.Connector = (*Connector)(nil)

// New connects to cfg.RPCURL and checks that the node serves cfg.ChainID.
func New(ctx context.Context, cfg Config, opts Options) (*Connector, error) {
	return connect(ctx, cfg, opts, true)
}

// connect is New; check false skips the contract checks (tests only:
// NewUnchecked).
func connect(ctx context.Context, cfg Config, opts Options, check bool) (*Connector, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Defaults("evm", cfg.Chain, 30*time.Second); err != nil {
		return nil, err
	}
	rc, err := rpc.DialOptions(ctx, cfg.RPCURL, rpc.WithHTTPClient(opts.HTTPClient))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: dial %s: %v", chains.ErrUnavailable, cfg.Chain, cfg.RPCURL, err)
	}
	c := &Connector{
		Base: connopts.NewBase(cfg.Chain, cfg.ExplorerTx, cfg.ChainID, cfg.assets()), opts: opts,
		cfg: cfg, rpc: rc, eth: ethclient.NewClient(rc),
		chainID: new(big.Int).SetUint64(cfg.ChainID),
		sender:  bindings.NewStealthSender(), names: bindings.NewVeilNames(),
		token: bindings.NewTestToken(), ann: bindings.NewERC5564Announcer(),
	}
	c.txSigner = types.LatestSignerForChainID(c.chainID)
	c.reqs = parse.Chain[common.Address, secp256k1.MetaAddress, asset]{
		Address: parseAddress, Meta: parse.Meta(secp256k1.ParseMetaAddress),
		Own: c.Own, Asset: tokenOf,
	}
	got, err := c.eth.ChainID(ctx)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("%w: %s: eth_chainId at %s: %v", chains.ErrUnavailable, cfg.Chain, cfg.RPCURL, err)
	}
	if got.Cmp(c.chainID) != 0 {
		rc.Close()
		return nil, fmt.Errorf("evm: %s: %s serves chain id %s, configured %d (%s)", cfg.Chain, cfg.RPCURL, got, cfg.ChainID, envVar(cfg.Chain, "CHAIN_ID"))
	}
	// Refuse to run with a contract address that holds the wrong thing:
	// a payment to it would move value with no announcement.
	if err := c.Check(ctx); err != nil && check {
		rc.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the RPC connection and its idle HTTP connections.
func (c *Connector) Close() {
	c.rpc.Close()
	c.opts.HTTPClient.CloseIdleConnections()
}

// Config returns the connector's configuration (defaults applied).
func (c *Connector) Config() Config { return c.cfg }

// Client exposes the underlying ethclient (read-only uses: tests, tools).
func (c *Connector) Client() *ethclient.Client { return c.eth }

// asset is a request's asset, one of the connector's own (Own), with its
// token contract (zero for the native asset).
type asset struct {
	chains.Asset
	token common.Address
}

// tokenOf is a (checked by Own) with its contract.
func tokenOf(a chains.Asset) asset {
	if a.Native() {
		return asset{Asset: a}
	}
	return asset{Asset: a, token: common.HexToAddress(a.Ref)}
}

func (c *Connector) tokenByAddress(a common.Address) (Token, bool) {
	for _, t := range c.cfg.Tokens {
		if t.Address == a {
			return t, true
		}
	}
	return Token{}, false
}

func parseAddress(s string) (common.Address, error) {
	if !common.IsHexAddress(s) || !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return common.Address{}, fmt.Errorf("%w %q: want a 0x-prefixed 20-byte hex address", chains.ErrInvalidAddress, s)
	}
	return common.HexToAddress(s), nil
}

// Balance returns the native balance and every configured token's balance
// of address, read in one batched round trip at the latest block.
func (c *Connector) Balance(ctx context.Context, address string) (chains.Balance, error) {
	addr, err := parseAddress(address)
	if err != nil {
		return chains.Balance{}, err
	}
	var native hexutil.Big
	toks := make([]hexutil.Bytes, len(c.cfg.Tokens))
	batch := []rpc.BatchElem{{Method: "eth_getBalance", Args: []any{addr, "latest"}, Result: &native}}
	for i, t := range c.cfg.Tokens {
		batch = append(batch, rpc.BatchElem{
			Method: "eth_call",
			Args:   []any{callArgs(addr, t.Address, c.token.PackBalanceOf(addr)), "latest"},
			Result: &toks[i],
		})
	}
	if err := c.rpc.BatchCallContext(ctx, batch); err != nil {
		return chains.Balance{}, c.Unavailable("balance", err)
	}
	for _, b := range batch {
		if b.Error != nil {
			return chains.Balance{}, c.Unavailable("balance", b.Error)
		}
	}
	out := chains.Balance{Native: chains.FormatAmount(native.ToInt(), NativeDecimals), Tokens: map[string]string{}}
	for i, t := range c.cfg.Tokens {
		v := new(big.Int)
		if len(toks[i]) >= 32 {
			v.SetBytes(toks[i][:32])
		}
		out.Tokens[t.Symbol] = chains.FormatAmount(v, t.Decimals)
	}
	return out, nil
}

func callArgs(from, to common.Address, data []byte) map[string]any {
	return map[string]any{"from": from, "to": to, "input": hexutil.Bytes(data)}
}

// balanceOf reads one asset's balance in base units.
func (c *Connector) balanceOf(ctx context.Context, a asset, addr common.Address) (*big.Int, error) {
	if a.Native() {
		return c.eth.BalanceAt(ctx, addr, nil)
	}
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &a.token, Data: c.token.PackBalanceOf(addr)}, nil)
	if err != nil {
		return nil, err
	}
	return c.token.UnpackBalanceOf(out)
}

// WaitMined polls for the receipt of txHash every PollInterval until ctx ends.
func (c *Connector) WaitMined(ctx context.Context, txHash string) (*types.Receipt, error) {
	h := common.HexToHash(txHash)
	t := time.NewTicker(c.cfg.PollInterval)
	defer t.Stop()
	for {
		r, err := c.eth.TransactionReceipt(ctx, h)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) && !isIndexing(err) {
			return nil, c.Unavailable("receipt", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func isIndexing(err error) bool {
	return err != nil && strings.Contains(err.Error(), "indexing is in progress")
}

// fees returns the base fee of the latest block and a suggested tip,
// cached for one poll interval (at most 2s).
func (c *Connector) fees(ctx context.Context) (base, tip *big.Int, err error) {
	ttl := min(c.cfg.PollInterval, 2*time.Second)
	c.feeMu.Lock()
	if c.feeBase != nil && c.opts.Now().Sub(c.feeAt) < ttl {
		base, tip = c.feeBase, c.feeTip
		c.feeMu.Unlock()
		return base, tip, nil
	}
	c.feeMu.Unlock()
	var head struct {
		BaseFee *hexutil.Big `json:"baseFeePerGas"`
	}
	var t hexutil.Big
	batch := []rpc.BatchElem{
		{Method: "eth_getBlockByNumber", Args: []any{"latest", false}, Result: &head},
		{Method: "eth_maxPriorityFeePerGas", Result: &t},
	}
	if err := c.rpc.BatchCallContext(ctx, batch); err != nil {
		return nil, nil, c.Unavailable("fees", err)
	}
	for _, b := range batch {
		if b.Error != nil {
			return nil, nil, c.Unavailable("fees", b.Error)
		}
	}
	base = big.NewInt(0)
	if head.BaseFee != nil {
		base = head.BaseFee.ToInt()
	}
	tip = t.ToInt()
	if tip.Sign() == 0 {
		tip = big.NewInt(1)
	}
	c.feeMu.Lock()
	c.feeBase, c.feeTip, c.feeAt = base, tip, c.opts.Now()
	c.feeMu.Unlock()
	return base, tip, nil
}

// feeCaps returns (tip, cap) for a new transaction: cap = 2·base + tip.
func (c *Connector) feeCaps(ctx context.Context) (tip, feeCap *big.Int, err error) {
	base, tip, err := c.fees(ctx)
	if err != nil {
		return nil, nil, err
	}
	feeCap = new(big.Int).Add(new(big.Int).Lsh(base, 1), tip)
	return new(big.Int).Set(tip), feeCap, nil
}
