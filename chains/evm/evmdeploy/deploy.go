// Package evmdeploy deploys Veil's contracts on an EVM network and prints
// the configuration veild needs for it (`veild contracts deploy`, see
// docs/operations.md): the ERC-5564 announcer when the canonical singleton
// is absent, the StealthSender wired to it, the VeilNames registry and, on
// request (test networks), test tokens whose minter is a given account.
//
// A deployment is idempotent through a state file: each contract's address
// and creation transaction are written before the transaction is sent, so
// a run that is interrupted (or repeated) waits for, verifies and reuses
// what an earlier run deployed instead of deploying it twice. What is
// reused is always checked on chain first (code present, the sender's
// announcer, the tokens' decimals and symbols); an entry that fails the
// check is deployed again.
package evmdeploy

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/bindings"
)

// Options of a deployment.
type Options struct {
	Chain  chains.ID
	RPCURL string
	// Key pays for and sends the deployments (and is the test tokens'
	// default minter).
	Key *ecdsa.PrivateKey
	// ChainID, when set, must be what the node serves.
	ChainID uint64
	// Announcer to use instead of the canonical singleton (zero: the
	// canonical one if the network has it, else a new one is deployed).
	Announcer common.Address
	// TestTokens: deploy test tokens (USDC, 6 decimals; ZEN, 18, except on
	// horizen, whose native asset is ZEN).
	TestTokens bool
	// Minter of the test tokens (zero: the deployer).
	Minter common.Address
	// StatePath is the state file (created if missing).
	StatePath string
	// Progress receives one line per step (nil: discarded).
	Progress io.Writer
	// Poll is the receipt polling interval (default 1s).
	Poll time.Duration
}

// Result is the deployed (or reused) configuration.
type Result struct {
	Chain     chains.ID
	ChainID   uint64
	RPCURL    string
	Deployer  common.Address
	Announcer common.Address
	Sender    common.Address
	Names     common.Address
	Tokens    []evm.Token
	// FromBlock is the first block a scan needs: the earliest deployment
	// block of the sender and the registry.
	FromBlock uint64
	// Deployed and Reused name the contracts of each kind in this run.
	Deployed, Reused []string
}

// Env is the VEIL_RPC_<CHAIN> and VEIL_EVM_<CHAIN>_* block for veild.
func (r Result) Env() string {
	up := strings.ToUpper(string(r.Chain))
	var b strings.Builder
	fmt.Fprintf(&b, "VEIL_RPC_%s=%s\n", up, r.RPCURL)
	fmt.Fprintf(&b, "VEIL_EVM_%s_CHAIN_ID=%d\n", up, r.ChainID)
	fmt.Fprintf(&b, "VEIL_EVM_%s_ANNOUNCER=%s\n", up, r.Announcer.Hex())
	fmt.Fprintf(&b, "VEIL_EVM_%s_SENDER=%s\n", up, r.Sender.Hex())
	fmt.Fprintf(&b, "VEIL_EVM_%s_NAMES=%s\n", up, r.Names.Hex())
	if len(r.Tokens) > 0 {
		var ts []string
		for _, t := range r.Tokens {
			ts = append(ts, fmt.Sprintf("%s=%s:%d", t.Symbol, t.Address.Hex(), t.Decimals))
		}
		fmt.Fprintf(&b, "VEIL_EVM_%s_TOKENS=%s\n", up, strings.Join(ts, ","))
	}
	fmt.Fprintf(&b, "VEIL_EVM_%s_FROM_BLOCK=%d\n", up, r.FromBlock)
	return b.String()
}

// Config is the evm.Config of the result (defaults applied by evm.New).
func (r Result) Config() evm.Config {
	return evm.Config{Chain: r.Chain, ChainID: r.ChainID, RPCURL: r.RPCURL, Announcer: r.Announcer, Sender: r.Sender,
		Names: r.Names, Tokens: append([]evm.Token(nil), r.Tokens...), FromBlock: r.FromBlock}
}

// state is the state file: per network, each contract's deployment.
type state struct {
	// Networks by "<chain>/<chain id>".
	Networks map[string]map[string]*entry `json:"networks"`
}

type entry struct {
	Address common.Address `json:"address"`
	TxHash  common.Hash    `json:"txHash"`
	Block   uint64         `json:"block,omitempty"`
	// Mined: the receipt was seen (successful).
	Mined bool `json:"mined"`
}

// contract is one thing to deploy.
type contract struct {
	name string
	code func(d *deployer) []byte
	// verify checks, beyond the code being there (nil: nothing more), that
	// the contract at a is the one wanted.
	verify func(ctx context.Context, d *deployer, a common.Address) error
}

// check verifies the contract at a: it has code, and c.verify accepts it.
func (c contract) check(ctx context.Context, d *deployer, a common.Address) error {
	if err := d.requireCode(ctx, c.name, a); err != nil {
		return err
	}
	if c.verify == nil {
		return nil
	}
	return c.verify(ctx, d, a)
}

type deployer struct {
	opts    Options
	eth     *ethclient.Client
	acct    *Account
	st      *state
	net     map[string]*entry
	res     Result
	log     func(format string, args ...any)
	chainID *big.Int
}

// Deploy deploys what the network lacks and returns the configuration.
func Deploy(ctx context.Context, opts Options) (Result, error) {
	if opts.Key == nil {
		return Result{}, errors.New("evmdeploy: no deployer key")
	}
	if opts.Chain.Family() != chains.FamilyEVM {
		return Result{}, fmt.Errorf("evmdeploy: %q is not an EVM chain (one of %v)", opts.Chain, evm.EVMChains())
	}
	if opts.StatePath == "" {
		return Result{}, errors.New("evmdeploy: no state file")
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	out := opts.Progress
	if out == nil {
		out = io.Discard
	}
	eth, err := ethclient.DialContext(ctx, opts.RPCURL)
	if err != nil {
		return Result{}, fmt.Errorf("evmdeploy: dial %s: %w", opts.RPCURL, err)
	}
	defer eth.Close()
	id, err := eth.ChainID(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("evmdeploy: eth_chainId at %s: %w", opts.RPCURL, err)
	}
	if opts.ChainID != 0 && id.Uint64() != opts.ChainID {
		return Result{}, fmt.Errorf("evmdeploy: %s serves chain id %s, not %d", opts.RPCURL, id, opts.ChainID)
	}
	d := &deployer{opts: opts, eth: eth, acct: NewAccount(eth, opts.Key, id), chainID: id,
		log: func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }}
	d.acct.Poll = opts.Poll
	d.res = Result{Chain: opts.Chain, ChainID: id.Uint64(), RPCURL: opts.RPCURL, Deployer: d.acct.Address}
	if d.st, err = loadState(opts.StatePath); err != nil {
		return Result{}, err
	}
	netKey := fmt.Sprintf("%s/%d", opts.Chain, id.Uint64())
	if d.st.Networks[netKey] == nil {
		d.st.Networks[netKey] = map[string]*entry{}
	}
	d.net = d.st.Networks[netKey]
	bal, err := eth.BalanceAt(ctx, d.acct.Address, nil)
	if err != nil {
		return Result{}, fmt.Errorf("evmdeploy: balance of %s: %w", d.acct.Address.Hex(), err)
	}
	d.log("deploying Veil's contracts on %s (chain id %s) from %s (balance %s %s); state in %s",
		opts.Chain, id, d.acct.Address.Hex(), chains.FormatAmount(bal, evm.NativeDecimals), opts.Chain.NativeAsset(), opts.StatePath)

	// The announcer: the one given, else the canonical singleton where the
	// network has it, else our own.
	switch {
	case opts.Announcer != (common.Address{}):
		if err := d.requireCode(ctx, "announcer", opts.Announcer); err != nil {
			return Result{}, err
		}
		d.res.Announcer = opts.Announcer
		d.res.Reused = append(d.res.Reused, "ERC5564Announcer")
		d.log("announcer: %s (given)", opts.Announcer.Hex())
	default:
		code, err := eth.CodeAt(ctx, evm.CanonicalAnnouncer, nil)
		if err != nil {
			return Result{}, fmt.Errorf("evmdeploy: code at the canonical announcer: %w", err)
		}
		if len(code) > 0 {
			d.res.Announcer = evm.CanonicalAnnouncer
			d.res.Reused = append(d.res.Reused, "ERC5564Announcer")
			d.log("announcer: the canonical ERC-5564 singleton %s is on this network", evm.CanonicalAnnouncer.Hex())
		} else {
			d.log("announcer: the canonical ERC-5564 singleton is absent; deploying one")
			if d.res.Announcer, err = d.ensure(ctx, contract{name: "ERC5564Announcer",
				code: func(*deployer) []byte { return common.FromHex(bindings.ERC5564AnnouncerMetaData.Bin) },
			}); err != nil {
				return Result{}, err
			}
		}
	}
	var senderBlock, namesBlock uint64
	if d.res.Sender, senderBlock, err = d.ensureBlock(ctx, contract{name: "StealthSender",
		code: func(d *deployer) []byte {
			return append(common.FromHex(bindings.StealthSenderMetaData.Bin), bindings.NewStealthSender().PackConstructor(d.res.Announcer)...)
		},
		verify: verifySender,
	}); err != nil {
		return Result{}, err
	}
	if d.res.Names, namesBlock, err = d.ensureBlock(ctx, contract{name: "VeilNames",
		code:   func(*deployer) []byte { return common.FromHex(bindings.VeilNamesMetaData.Bin) },
		verify: verifyNames,
	}); err != nil {
		return Result{}, err
	}
	d.res.FromBlock = min(senderBlock, namesBlock)
	if opts.TestTokens {
		minter := opts.Minter
		if minter == (common.Address{}) {
			minter = d.acct.Address
		}
		toks := []evm.Token{{Symbol: "USDC", Decimals: 6}}
		if opts.Chain != chains.Horizen {
			toks = append(toks, evm.Token{Symbol: "ZEN", Decimals: 18})
		}
		for _, t := range toks {
			name := "TestToken " + t.Symbol
			a, err := d.ensure(ctx, contract{name: name,
				code: func(*deployer) []byte {
					return append(common.FromHex(bindings.TestTokenMetaData.Bin),
						bindings.NewTestToken().PackConstructor(t.Symbol+" (Veil test token)", t.Symbol, uint8(t.Decimals), minter)...)
				},
				verify: func(ctx context.Context, d *deployer, a common.Address) error {
					return verifyToken(ctx, d, a, t, minter)
				},
			})
			if err != nil {
				return Result{}, err
			}
			t.Address = a
			d.res.Tokens = append(d.res.Tokens, t)
		}
		d.log("test tokens mint only from %s", minter.Hex())
	}
	// The whole configuration passes the checks veild runs at start.
	if err := evm.CheckContracts(ctx, eth.Client(), d.res.Config()); err != nil {
		return Result{}, fmt.Errorf("evmdeploy: the deployed configuration fails veild's start-up checks: %w", err)
	}
	d.log("done: %d deployed, %d reused; scans start at block %d", len(d.res.Deployed), len(d.res.Reused), d.res.FromBlock)
	return d.res, nil
}

func (d *deployer) ensure(ctx context.Context, c contract) (common.Address, error) {
	a, _, err := d.ensureBlock(ctx, c)
	return a, err
}

// ensureBlock reuses c's recorded deployment if it verifies, waits for a
// recorded deployment still in flight, or deploys c; it returns the
// address and the deployment block.
func (d *deployer) ensureBlock(ctx context.Context, c contract) (common.Address, uint64, error) {
	if e := d.net[c.name]; e != nil {
		if !e.Mined {
			// Sent by an earlier run that did not see its receipt: wait
			// for it (a transaction that never reached a node is
			// not found, and is sent again below).
			d.log("%s: waiting for %s from an earlier run", c.name, e.TxHash.Hex())
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			r, err := d.acct.Wait(wctx, e.TxHash)
			cancel()
			if err == nil && r.Status == types.ReceiptStatusSuccessful {
				e.Mined, e.Block = true, r.BlockNumber.Uint64()
				if err := d.save(); err != nil {
					return common.Address{}, 0, err
				}
			}
		}
		if e.Mined {
			err := c.check(ctx, d, e.Address)
			if err == nil {
				d.res.Reused = append(d.res.Reused, c.name)
				d.log("%s: %s (deployed earlier in block %d, verified)", c.name, e.Address.Hex(), e.Block)
				return e.Address, e.Block, nil
			}
			d.log("%s: the recorded %s does not verify (%v); deploying again", c.name, e.Address.Hex(), err)
		}
	}
	tx, addr, err := d.acct.Create(ctx, c.code(d))
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("evmdeploy: %s: %w", c.name, err)
	}
	// Recorded before it is sent: an interrupted run finds it.
	d.net[c.name] = &entry{Address: addr, TxHash: tx.Hash()}
	if err := d.save(); err != nil {
		return common.Address{}, 0, err
	}
	if err := d.eth.SendTransaction(ctx, tx); err != nil {
		return common.Address{}, 0, fmt.Errorf("evmdeploy: send %s: %w", c.name, err)
	}
	d.log("%s: sent %s (nonce %d, gas limit %d), waiting for the receipt …", c.name, tx.Hash().Hex(), tx.Nonce(), tx.Gas())
	r, err := d.acct.Wait(ctx, tx.Hash())
	if err != nil {
		return common.Address{}, 0, fmt.Errorf("evmdeploy: %s: %w (run the command again: it waits for %s)", c.name, err, tx.Hash().Hex())
	}
	if r.Status != types.ReceiptStatusSuccessful {
		delete(d.net, c.name)
		_ = d.save()
		return common.Address{}, 0, fmt.Errorf("evmdeploy: %s: creation %s reverted", c.name, tx.Hash().Hex())
	}
	e := d.net[c.name]
	e.Mined, e.Block = true, r.BlockNumber.Uint64()
	if err := d.save(); err != nil {
		return common.Address{}, 0, err
	}
	if err := c.check(ctx, d, addr); err != nil {
		return common.Address{}, 0, fmt.Errorf("evmdeploy: %s at %s: %w", c.name, addr.Hex(), err)
	}
	d.res.Deployed = append(d.res.Deployed, c.name)
	d.log("%s: %s (block %d, gas used %d)", c.name, addr.Hex(), e.Block, r.GasUsed)
	return addr, e.Block, nil
}

func (d *deployer) requireCode(ctx context.Context, what string, a common.Address) error {
	code, err := d.eth.CodeAt(ctx, a, nil)
	if err != nil {
		return fmt.Errorf("evmdeploy: code at %s: %w", a.Hex(), err)
	}
	if len(code) == 0 {
		return fmt.Errorf("evmdeploy: %s %s has no code on this network", what, a.Hex())
	}
	return nil
}

// call calls a read-only method of the contract at a: data is the packed
// call, unpack decodes its answer.
func call[T any](ctx context.Context, d *deployer, a common.Address, data []byte, unpack func([]byte) (T, error)) (T, error) {
	out, err := d.eth.CallContract(ctx, ethereum.CallMsg{To: &a, Data: data}, nil)
	if err != nil {
		var zero T
		return zero, err
	}
	return unpack(out)
}

func verifySender(ctx context.Context, d *deployer, a common.Address) error {
	s := bindings.NewStealthSender()
	ann, err := call(ctx, d, a, s.PackAnnouncer(), s.UnpackAnnouncer)
	if err != nil {
		return err
	}
	if ann != d.res.Announcer {
		return fmt.Errorf("announces through %s, not %s", ann.Hex(), d.res.Announcer.Hex())
	}
	return nil
}

func verifyNames(ctx context.Context, d *deployer, a common.Address) error {
	n := bindings.NewVeilNames()
	_, err := call(ctx, d, a, n.PackNameOf(common.Address{}), n.UnpackNameOf)
	return err
}

func verifyToken(ctx context.Context, d *deployer, a common.Address, want evm.Token, minter common.Address) error {
	t := bindings.NewTestToken()
	dec, err := call(ctx, d, a, t.PackDecimals(), t.UnpackDecimals)
	if err != nil {
		return err
	}
	sym, err := call(ctx, d, a, t.PackSymbol(), t.UnpackSymbol)
	if err != nil {
		return err
	}
	m, err := call(ctx, d, a, t.PackMinter(), t.UnpackMinter)
	if err != nil {
		return err
	}
	if int(dec) != want.Decimals || sym != want.Symbol || m != minter {
		return fmt.Errorf("token is %s with %d decimals minted by %s, want %s with %d minted by %s", sym, dec, m.Hex(), want.Symbol, want.Decimals, minter.Hex())
	}
	return nil
}

func loadState(path string) (*state, error) {
	st := &state{Networks: map[string]map[string]*entry{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("evmdeploy: state file: %w", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("evmdeploy: state file %s: %w (move it away to start over)", path, err)
	}
	if st.Networks == nil {
		st.Networks = map[string]map[string]*entry{}
	}
	return st, nil
}

// save writes the state file atomically and durably (temporary file,
// fsync, rename, fsync of the directory).
func (d *deployer) save() error {
	b, err := json.MarshalIndent(d.st, "", "  ")
	if err != nil {
		return err
	}
	path := d.opts.StatePath
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("evmdeploy: state file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("evmdeploy: state file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("evmdeploy: state file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("evmdeploy: state file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("evmdeploy: state file: %w", err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		_ = dir.Sync()
		dir.Close()
	}
	return nil
}

// Account sends transactions from one key, one at a time (the deployer;
// tests fund agents with it).
type Account struct {
	Address common.Address
	Poll    time.Duration
	eth     *ethclient.Client
	key     *ecdsa.PrivateKey
	chainID *big.Int
}

// NewAccount sends from key on the network eth serves (chain id chainID).
func NewAccount(eth *ethclient.Client, key *ecdsa.PrivateKey, chainID *big.Int) *Account {
	return &Account{Address: crypto.PubkeyToAddress(key.PublicKey), Poll: time.Second, eth: eth, key: key, chainID: chainID}
}

// sign builds and signs a transaction at the pending nonce: gas estimated
// (+25%), tip eth_maxPriorityFeePerGas, fee cap 2·base fee + tip.
func (a *Account) sign(ctx context.Context, to *common.Address, value *big.Int, data []byte) (*types.Transaction, error) {
	nonce, err := a.eth.PendingNonceAt(ctx, a.Address)
	if err != nil {
		return nil, err
	}
	if value == nil {
		value = new(big.Int)
	}
	gas, err := a.eth.EstimateGas(ctx, ethereum.CallMsg{From: a.Address, To: to, Value: value, Data: data})
	if err != nil {
		return nil, fmt.Errorf("estimate gas: %w", err)
	}
	tip, err := a.eth.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, fmt.Errorf("tip: %w", err)
	}
	head, err := a.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, err
	}
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	return types.SignNewTx(a.key, types.LatestSignerForChainID(a.chainID), &types.DynamicFeeTx{
		ChainID: a.chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: gas + gas/4, To: to, Value: value, Data: data,
	})
}

// Create signs (does not send) a contract creation and returns it with the
// address the contract will have.
func (a *Account) Create(ctx context.Context, code []byte) (*types.Transaction, common.Address, error) {
	tx, err := a.sign(ctx, nil, nil, code)
	if err != nil {
		return nil, common.Address{}, err
	}
	return tx, crypto.CreateAddress(a.Address, tx.Nonce()), nil
}

// Send sends value and data to `to` and waits for a successful receipt.
func (a *Account) Send(ctx context.Context, to common.Address, value *big.Int, data []byte) (*types.Receipt, error) {
	tx, err := a.sign(ctx, &to, value, data)
	if err != nil {
		return nil, err
	}
	if err := a.eth.SendTransaction(ctx, tx); err != nil {
		return nil, err
	}
	r, err := a.Wait(ctx, tx.Hash())
	if err != nil {
		return nil, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return r, fmt.Errorf("transaction %s reverted", tx.Hash().Hex())
	}
	return r, nil
}

// Wait polls for the receipt of h until ctx ends.
func (a *Account) Wait(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	t := time.NewTicker(a.Poll)
	defer t.Stop()
	for {
		r, err := a.eth.TransactionReceipt(ctx, h)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no receipt for %s yet: %w", h.Hex(), ctx.Err())
		case <-t.C:
		}
	}
}

// Dial connects to a node (the caller closes the client).
func Dial(ctx context.Context, url string) (*ethclient.Client, error) {
	c, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("evmdeploy: dial %s: %w", url, err)
	}
	return c, nil
}
