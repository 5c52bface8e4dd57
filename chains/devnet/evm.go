//go:build !nodevnet

// Package devnet runs Veil's embedded local networks, the offline default
// and the networks of the tests. This file holds the EVM devnets: one
// in-process go-ethereum node per EVM chain (the engine of
// ethclient/simulated, driven by the simulated beacon) serving JSON-RPC on a
// loopback port, so that chains/evm talks to it exactly as to a public
// node. Blocks are sealed as transactions arrive. Build with -tags nodevnet
// to leave the devnets (and most of geth) out of the binary.
package devnet

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/event"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/bindings"
)

// EVMAvailable reports whether this binary includes the EVM devnets.
const EVMAvailable = true

// Faucet amounts: what Fund gives an address per call, in whole units.
const (
	FaucetNative = "10"    // of the chain's native asset (ETH, ZEN on horizen, POL)
	FaucetUSDC   = "10000" // test USDC, 6 decimals
	FaucetZEN    = "1000"  // test ZEN token, 18 decimals (not on horizen, where ZEN is native)
	faucetSupply = "1000000000"
)

// FaucetKey is the devnets' well-known faucet and deployer key (the same on
// every devnet and every machine: devnet funds are worthless by design).
var FaucetKey = mustKey(crypto.Keccak256([]byte("veil devnet faucet")))

func mustKey(b []byte) *ecdsa.PrivateKey {
	k, err := crypto.ToECDSA(b)
	if err != nil {
		panic(err)
	}
	return k
}

// EVMOptions configures StartEVM.
type EVMOptions struct {
	// Dir holds one chain database per chain (<Dir>/<chain>); state then
	// persists across restarts. "" keeps every chain in memory.
	Dir string
	// Chains to run; default the four EVM chains.
	Chains []chains.ID
	// BasePort: when > 0 the i-th chain of the canonical order listens on
	// 127.0.0.1:BasePort+i (horizen +0, ethereum +1, polygon +2, base +3),
	// so that RPC URLs and transaction links stay valid across restarts.
	// 0 picks free ports.
	BasePort int
	// Log receives the devnets' own events (default slog.Default()).
	Log *slog.Logger
}

// EVM is the running set of EVM devnets.
type EVM struct {
	nets  map[chains.ID]*EVMNet
	order []chains.ID
}

// EVMNet is one chain's devnet.
type EVMNet struct {
	id      chains.ID
	log     *slog.Logger
	stack   *node.Node
	eth     *eth.Ethereum
	beacon  *catalyst.SimulatedBeacon
	client  *ethclient.Client // in-process
	cfg     evm.Config
	faucet  common.Address // VeilFaucet contract
	tokens  []evm.Token
	deploys map[string]common.Address

	faucetMu    sync.Mutex
	faucetNonce uint64 // next nonce of the faucet key (the pool's view lags a sealed block)

	// sealMu: sealing a block holds it exclusively until the pool has
	// caught up with the new head; every JSON-RPC request holds it shared.
	// So no client that has seen a block can submit to a pool that has not
	// (the pool resets asynchronously, and a stale pool double-counts a
	// just-mined transaction's cost against the new balance).
	sealMu     sync.RWMutex
	persistent bool
	http       *http.Server
	rpc        *rpc.Server

	mineMu  sync.Mutex
	paused  bool
	kick    chan struct{}
	quit    chan struct{}
	stopped chan struct{}
}

// StartEVM starts the EVM devnets, deploys the contracts on a fresh chain
// (or finds them on a persisted one) and returns once every chain serves
// JSON-RPC. Close stops them.
func StartEVM(ctx context.Context, opts EVMOptions) (*EVM, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	ids := opts.Chains
	if len(ids) == 0 {
		ids = evm.EVMChains()
	}
	d := &EVM{nets: map[chains.ID]*EVMNet{}}
	type res struct {
		n   *EVMNet
		err error
	}
	results := make([]chan res, len(ids))
	for i, id := range ids {
		if id.Family() != chains.FamilyEVM {
			return nil, fmt.Errorf("devnet: %q is not an EVM chain", id)
		}
		results[i] = make(chan res, 1)
		addr := "127.0.0.1:0"
		if opts.BasePort > 0 {
			addr = "127.0.0.1:" + strconv.Itoa(opts.BasePort+chainIndex(id))
		}
		dir := ""
		if opts.Dir != "" {
			dir = filepath.Join(opts.Dir, string(id))
		}
		go func() {
			n, err := startNet(ctx, id, dir, addr, opts.Log.With("devnet", string(id)))
			results[i] <- res{n, err}
		}()
	}
	var errs []error
	for i, id := range ids {
		r := <-results[i]
		if r.err != nil {
			errs = append(errs, fmt.Errorf("devnet %s: %w", id, r.err))
			continue
		}
		d.nets[id] = r.n
		d.order = append(d.order, id)
	}
	if err := errors.Join(errs...); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func chainIndex(id chains.ID) int {
	for i, c := range evm.EVMChains() {
		if c == id {
			return i
		}
	}
	return 0
}

// Chains lists the running chains in canonical order.
func (d *EVM) Chains() []chains.ID { return append([]chains.ID(nil), d.order...) }

// Config is the connector configuration of chain id's devnet.
func (d *EVM) Config(id chains.ID) (evm.Config, bool) {
	n, ok := d.nets[id]
	if !ok {
		return evm.Config{}, false
	}
	return n.cfg, true
}

// Net is chain id's devnet (nil when not running).
func (d *EVM) Net(id chains.ID) *EVMNet { return d.nets[id] }

// Close stops every chain, flushing its database.
func (d *EVM) Close() error {
	var errs []error
	for _, n := range d.nets {
		errs = append(errs, n.close())
	}
	d.nets = map[chains.ID]*EVMNet{}
	return errors.Join(errs...)
}

// Config is the connector configuration of this devnet.
func (n *EVMNet) Config() evm.Config { return n.cfg }

// RPCURL is the loopback JSON-RPC endpoint.
func (n *EVMNet) RPCURL() string { return n.cfg.RPCURL }

// Contracts returns the deployed contracts by name (VeilFaucet,
// StealthSender, VeilNames, USDC, ZEN) plus ERC5564Announcer.
func (n *EVMNet) Contracts() map[string]common.Address {
	out := map[string]common.Address{"ERC5564Announcer": evm.CanonicalAnnouncer}
	for k, v := range n.deploys {
		out[k] = v
	}
	return out
}

// SetMining pauses (false) or resumes (true) block production. Paused,
// transactions wait in the pool, as on a congested network. Tests only.
func (n *EVMNet) SetMining(on bool) {
	n.mineMu.Lock()
	n.paused = !on
	n.mineMu.Unlock()
	if on {
		n.poke()
	}
}

// Head is the current block number.
func (n *EVMNet) Head() uint64 { return n.eth.BlockChain().CurrentBlock().Number.Uint64() }

func (n *EVMNet) poke() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func genesis(chainID uint64) *core.Genesis {
	cfg := *params.AllDevChainProtocolChanges
	cfg.ChainID = new(big.Int).SetUint64(chainID)
	// The forks the public test networks run (up to Osaka), not geth's
	// experimental ones (Amsterdam's state-gas repricing makes a fresh
	// storage slot cost ~10x what it costs on Sepolia or Base Sepolia).
	cfg.AmsterdamTime, cfg.BogotaTime, cfg.UBTTime = nil, nil, nil
	cfg.BPO1Time, cfg.BPO2Time, cfg.BPO3Time, cfg.BPO4Time, cfg.BPO5Time = nil, nil, nil, nil, nil
	supply, _ := chains.ParseAmount(faucetSupply, evm.NativeDecimals)
	alloc := core.SystemContractAllocs()
	alloc[crypto.PubkeyToAddress(FaucetKey.PublicKey)] = types.Account{Balance: supply}
	alloc[evm.CanonicalAnnouncer] = types.Account{Code: common.FromHex(bindings.ERC5564AnnouncerRuntimeBin), Balance: new(big.Int)}
	return &core.Genesis{
		Config:     &cfg,
		GasLimit:   60_000_000,
		BaseFee:    big.NewInt(params.InitialBaseFee),
		Difficulty: big.NewInt(0),
		Timestamp:  1_735_689_600, // 2025-01-01T00:00:00Z: a fixed genesis, so a persisted chain matches on restart
		Alloc:      alloc,
	}
}

func startNet(ctx context.Context, id chains.ID, dir, addr string, log *slog.Logger) (n *EVMNet, err error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	chainID := evm.TestnetChainID(id)
	nodeCfg := node.DefaultConfig
	nodeCfg.Name = "veil-devnet"
	nodeCfg.DataDir = dir
	nodeCfg.IPCPath = ""
	// JSON-RPC is served by our own HTTP server (serveRPC), not geth's.
	nodeCfg.HTTPHost = ""
	nodeCfg.WSHost = ""
	nodeCfg.AuthPort = 0
	nodeCfg.P2P = p2p.Config{NoDiscovery: true, MaxPeers: 0, ListenAddr: ""}
	nodeCfg.DBEngine = "pebble"
	stack, err := node.New(&nodeCfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			stack.Close()
		}
	}()

	ethCfg := ethconfig.Defaults
	ethCfg.Genesis = genesis(chainID)
	ethCfg.NetworkId = chainID
	ethCfg.SyncMode = ethconfig.FullSync
	// Hash-based state in archive mode commits every block's state to disk
	// as the block is written, so a killed process loses no block; no
	// snapshot layer to rebuild after a crash.
	ethCfg.StateScheme = rawdb.HashScheme
	ethCfg.NoPruning = true
	ethCfg.SnapshotCache = 0
	ethCfg.DatabaseCache = 16
	ethCfg.DatabaseHandles = 64
	ethCfg.TrieCleanCache = 16
	ethCfg.TrieDirtyCache = 0
	ethCfg.FilterLogCacheSize = 8
	ethCfg.LogNoHistory = true // unindexed log search: no background indexer
	ethCfg.TxPool.NoLocals = true
	ethCfg.TxPool.Journal = ""
	ethCfg.BlobPool.Datadir = ""
	ethCfg.Miner.PendingFeeRecipient = crypto.PubkeyToAddress(FaucetKey.PublicKey)
	backend, err := eth.New(stack, &ethCfg)
	if err != nil {
		return nil, err
	}
	fsys := filters.NewFilterSystem(backend.APIBackend, filters.Config{})
	n = &EVMNet{
		id: id, log: log, stack: stack, eth: backend, persistent: dir != "",
		kick: make(chan struct{}, 1), quit: make(chan struct{}), stopped: make(chan struct{}),
	}
	beacon, err := catalyst.NewSimulatedBeacon(0, ethCfg.Miner.PendingFeeRecipient, backend)
	if err != nil {
		return nil, err
	}
	n.beacon = beacon
	if err := stack.Start(); err != nil {
		return nil, fmt.Errorf("start node on %s: %w", addr, err)
	}
	n.client = ethclient.NewClient(stack.Attach())
	// Subscribe before anything can reach the pool, so no arrival is missed.
	txs := make(chan core.NewTxsEvent, 256)
	sub := backend.TxPool().SubscribeTransactions(txs, true)
	go n.mineLoop(txs, sub)
	if err := n.deploy(ctx); err != nil {
		n.close()
		return nil, err
	}
	url, err := n.serveRPC(addr, backend, fsys)
	if err != nil {
		n.close()
		return nil, err
	}
	n.cfg = evm.Config{
		Chain: id, ChainID: chainID, RPCURL: url, ExplorerTx: url + "/tx/{hash}",
		Announcer: evm.CanonicalAnnouncer, Sender: n.deploys["StealthSender"], Names: n.deploys["VeilNames"],
		Tokens: n.tokens, DevnetFaucet: true,
		StuckAfter: 3 * time.Second, PollInterval: 20 * time.Millisecond,
	}
	log.Info("EVM devnet serving", "rpc", url, "chainId", chainID, "head", n.Head(), "persistent", dir != "")
	return n, nil
}

func (n *EVMNet) close() error {
	select {
	case <-n.quit:
		return nil
	default:
	}
	close(n.quit)
	<-n.stopped
	if n.http != nil {
		_ = n.http.Close()
		n.rpc.Stop()
	}
	if n.client != nil {
		n.client.Close()
	}
	err := n.beacon.Stop()
	return errors.Join(err, n.stack.Close())
}

// mineLoop seals blocks while the pool holds executable transactions: a
// block per batch of arrivals, as a network that mines on demand.
func (n *EVMNet) mineLoop(txs chan core.NewTxsEvent, sub event.Subscription) {
	defer close(n.stopped)
	defer sub.Unsubscribe()
	// A slow tick re-checks the pool, in case an arrival raced a seal.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-txs:
		case <-n.kick:
		case <-tick.C:
		}
		// Drain what is already queued: one block takes them all.
		for drained := false; !drained; {
			select {
			case <-txs:
			default:
				drained = true
			}
		}
		n.mineMu.Lock()
		paused := n.paused
		n.mineMu.Unlock()
		if paused {
			continue
		}
		n.sealPending()
	}
}

func (n *EVMNet) sealPending() {
	for range 64 {
		_ = n.eth.TxPool().Sync()
		if pending, _ := n.eth.TxPool().Stats(); pending == 0 {
			return
		}
		before := n.eth.BlockChain().CurrentBlock().Number.Uint64()
		n.sealMu.Lock()
		n.beacon.Commit()
		_ = n.eth.TxPool().Sync()
		if n.persistent {
			// geth writes without fsync; a sealed block must survive a
			// killed process before any client can see it.
			if err := n.eth.ChainDb().SyncKeyValue(); err != nil {
				n.log.Error("devnet: sync chain database", "err", err)
			}
		}
		n.sealMu.Unlock()
		head := n.eth.BlockChain().CurrentBlock()
		if head.Number.Uint64() == before {
			return
		}
		if b := n.eth.BlockChain().GetBlockByHash(head.Hash()); b != nil && len(b.Transactions()) == 0 {
			// Executable by nonce but not includable (fee below the base
			// fee): wait for a replacement instead of sealing empty blocks.
			return
		}
	}
}

// serveRPC serves the public JSON-RPC namespaces (eth, net, and veil for the
// faucet: no admin, debug or personal) and the explorer on addr.
func (n *EVMNet) serveRPC(addr string, backend *eth.Ethereum, fsys *filters.FilterSystem) (string, error) {
	srv := rpc.NewServer()
	srv.SetBatchLimits(1000, 25_000_000)
	for _, api := range backend.APIs() {
		if api.Namespace == "eth" || api.Namespace == "net" {
			if err := srv.RegisterName(api.Namespace, api.Service); err != nil {
				return "", err
			}
		}
	}
	if err := srv.RegisterName("eth", filters.NewFilterAPI(fsys)); err != nil {
		return "", err
	}
	if err := srv.RegisterName("veil", &faucetAPI{n: n}); err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/tx/", n.serveTx)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.sealMu.RLock()
		defer n.sealMu.RUnlock()
		srv.ServeHTTP(w, r)
	}))
	n.rpc = srv
	n.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = n.http.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// serveTx is the devnet's minimal explorer: GET /tx/<hash> answers the
// transaction and its receipt as JSON, so transaction links resolve.
func (n *EVMNet) serveTx(w http.ResponseWriter, r *http.Request) {
	h := strings.TrimPrefix(r.URL.Path, "/tx/")
	if len(h) != 66 || !strings.HasPrefix(h, "0x") {
		http.Error(w, "want /tx/0x<64 hex>", http.StatusBadRequest)
		return
	}
	hash := common.HexToHash(h)
	tx, pending, err := n.client.TransactionByHash(r.Context(), hash)
	if err != nil {
		http.Error(w, "transaction not found on the "+string(n.id)+" devnet", http.StatusNotFound)
		return
	}
	out := map[string]any{"chain": n.id, "chainId": n.cfg.ChainID, "pending": pending, "transaction": tx}
	if rc, err := n.client.TransactionReceipt(r.Context(), hash); err == nil {
		out["receipt"] = rc
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
}
