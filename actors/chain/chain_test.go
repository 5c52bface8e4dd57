//go:build !nodevnet

package chain_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/persistence"
)

func quietLog() *slog.Logger {
	if os.Getenv("VEIL_TEST_VERBOSE") != "" {
		return slog.Default()
	}
	return slog.New(slog.DiscardHandler)
}

type env struct {
	dev    *devnet.EVM
	store  *persistence.Bolt
	system *actor.ActorSystem
	signer *evmtest.Signer
	alice  *evmtest.Agent
	bob    *evmtest.Agent
}

func newEnv(t testing.TB, ids ...chains.ID) *env {
	t.Helper()
	d, err := devnet.StartEVM(context.Background(), devnet.EVMOptions{Chains: ids, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	s, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	system := actor.NewActorSystem()
	t.Cleanup(func() { system.Shutdown() })
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	return &env{dev: d, store: s, system: system, signer: evmtest.NewSigner(alice, bob), alice: alice, bob: bob}
}

func (e *env) connector(t testing.TB, id chains.ID, mod func(*evm.Options)) *evm.Connector {
	t.Helper()
	cfg, ok := e.dev.Config(id)
	if !ok {
		t.Fatalf("no devnet for %s", id)
	}
	opts := evm.Options{Store: e.store, Signer: e.signer, Log: quietLog()}
	if mod != nil {
		mod(&opts)
	}
	c, err := evm.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (e *env) start(t testing.TB, c chains.Connector) *chain.Ref {
	t.Helper()
	r, err := chain.Start(context.Background(), e.system, c, chain.Options{Log: quietLog(), MaintainEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func waitMined(t testing.TB, c *evm.Connector, h string) *types.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.WaitMined(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("%s reverted", h)
	}
	return r
}

// nonceUse counts, per nonce, addr's transactions on chain.
func nonceUse(t testing.TB, c *evm.Connector, addr common.Address) map[uint64]int {
	t.Helper()
	ctx := context.Background()
	head, err := c.Client().BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(new(big.Int).SetUint64(c.Config().ChainID))
	seen := map[uint64]int{}
	for b := uint64(1); b <= head; b++ {
		blk, err := c.Client().BlockByNumber(ctx, new(big.Int).SetUint64(b))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range blk.Transactions() {
			if from, _ := types.Sender(signer, tx); from == addr {
				seen[tx.Nonce()]++
			}
		}
	}
	return seen
}

func assertNonces(t testing.TB, seen map[uint64]int, n int) {
	t.Helper()
	if len(seen) != n {
		t.Fatalf("%d distinct nonces, want %d", len(seen), n)
	}
	for i := range uint64(n) {
		if seen[i] != 1 {
			t.Fatalf("nonce %d used %d times (gap or reuse)", i, seen[i])
		}
	}
}

// The end-to-end test, through the chain actors: on each EVM chain
// agent A pays agent B's meta-address; B's scan (from its persisted cursor)
// finds exactly that payment and B withdraws it to A's address.
func TestPayScanWithdrawThroughActors(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range e.dev.Chains() {
		c := e.connector(t, id, nil)
		r := e.start(t, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(string(id), func(t *testing.T) {
				f, err := r.Fund(ctx, e.alice.Address.Hex())
				if err != nil {
					t.Fatal(err)
				}
				waitMined(t, c, f.TxHash)
				// B's scanner consumes from genesis: the faucet and deployment
				// leave no announcements.
				var mine []chains.Announcement
				deliver := func(_ context.Context, anns []chains.Announcement) error {
					for _, a := range anns {
						if ok, err := e.bob.Owns(a); err != nil {
							return err
						} else if ok {
							mine = append(mine, a)
						}
					}
					return nil
				}
				if n, err := r.ScanInto(ctx, e.store, "inbox", 10, deliver); err != nil || n != 0 {
					t.Fatalf("empty scan: %d %v", n, err)
				}
				pay, err := r.SendStealth(ctx, e.alice.Ref(id), e.alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r, ""), Amount: amt("2"), To: e.bob.Meta, IdempotencyKey: "p-" + string(id)})
				if err != nil {
					t.Fatal(err)
				}
				waitMined(t, c, pay.TxHash)
				if n, err := r.ScanInto(ctx, e.store, "inbox", 10, deliver); err != nil || n != 1 {
					t.Fatalf("scan: %d %v", n, err)
				}
				if len(mine) != 1 || mine[0].TxHash != pay.TxHash || mine[0].Amount != "2" || mine[0].Asset != id.NativeAsset() {
					t.Fatalf("bob's payments %+v", mine)
				}
				// The cursor persisted: scanning again finds nothing new.
				if n, err := r.ScanInto(ctx, e.store, "inbox", 10, deliver); err != nil || n != 0 {
					t.Fatalf("rescan: %d %v", n, err)
				}
				w, err := r.Withdraw(ctx, e.bob.StealthRef(id, mine[0].EphemeralPubKey), chains.WithdrawRequest{From: mine[0].StealthAddress, To: e.alice.Address.Hex(), Asset: chainstest.Asset(r, ""), All: true, IdempotencyKey: "w-" + string(id)})
				if err != nil {
					t.Fatal(err)
				}
				waitMined(t, c, w.TxHash)
				b, err := r.Balance(ctx, mine[0].StealthAddress)
				if err != nil || b.Native != "0" {
					t.Fatalf("stealth balance after withdraw %+v %v", b, err)
				}
			})
		}()
	}
	wg.Wait()
}

// 50 concurrent sends from one agent through its chain actor: every one
// succeeds, nonces 0..49 are each used once; balance reads run meanwhile.
func TestFiftyConcurrentSendsOneAgent(t *testing.T) {
	e := newEnv(t, chains.Base)
	c := e.connector(t, chains.Base, nil)
	r := e.start(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := r.Fund(ctx, e.alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, c, f.TxHash)
	const n = 50
	var wg sync.WaitGroup
	hashes := make([]string, n)
	errs := make([]error, n)
	var reads atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := r.Balance(ctx, e.alice.Address.Hex()); err == nil {
				reads.Add(1)
			}
		}
	}()
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			asset := ""
			if i%5 == 0 {
				asset = "USDC"
			}
			res, err := r.SendStealth(ctx, e.alice.Ref(chains.Base), e.alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r, asset), Amount: amt("0.01"), To: e.bob.Meta, IdempotencyKey: fmt.Sprintf("k%d", i)})
			hashes[i], errs[i] = res.TxHash, err
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	for _, h := range hashes {
		waitMined(t, c, h)
	}
	t.Logf("%d sends in %v (%.0f/s); %d balance reads meanwhile", n, took, n/took.Seconds(), reads.Load())
	// 50 payments + 1 USDC approval.
	assertNonces(t, nonceUse(t, c, e.alice.Address), n+1)
	anns, _, err := r.Scan(ctx, "", 1000)
	if err != nil || len(anns) != n {
		t.Fatalf("%d announcements, %v", len(anns), err)
	}
	if reads.Load() == 0 {
		t.Fatal("no balance read completed while sends were in flight")
	}
}

// Reads are not serialised behind a slow write of the same address.
func TestReadsDoNotWaitForWrites(t *testing.T) {
	e := newEnv(t, chains.Polygon)
	c := e.connector(t, chains.Polygon, nil)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	r := e.start(t, &slowConn{Connector: c, entered: entered, release: release})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.SendStealth(ctx, e.alice.Ref(chains.Polygon), e.alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r, ""), Amount: amt("1"), To: e.bob.Meta, IdempotencyKey: "slow"})
		done <- err
	}()
	<-entered
	if _, err := r.Balance(ctx, e.alice.Address.Hex()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ResolveName(ctx, "nobody"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; !errors.Is(err, chains.ErrInsufficientFunds) {
		t.Fatalf("unfunded send: %v", err)
	}
}

type slowConn struct {
	*evm.Connector
	entered chan struct{}
	release chan struct{}
}

func (s *slowConn) SendStealth(ctx context.Context, from chains.KeyRef, fromAddress string, req chains.SendRequest) (chains.TxResult, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Connector.SendStealth(ctx, from, fromAddress, req)
}

var errCrash = errors.New("simulated crash")

// A crash between persisting and broadcasting (the failpoint aborts the
// call there), then a restart of the actor on the same store: the start-up
// recovery broadcasts the persisted transaction, the retry returns it, the
// payment happens once and the next payment takes the next nonce.
func TestRestartRebroadcastsInsteadOfResigning(t *testing.T) {
	e := newEnv(t, chains.Ethereum)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crashing := e.connector(t, chains.Ethereum, func(o *evm.Options) {
		o.Failpoint = func(p string) error {
			if p == evm.FailBeforeBroadcast {
				return errCrash
			}
			return nil
		}
	})
	r1 := e.start(t, crashing)
	f, err := r1.Fund(ctx, e.alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, crashing, f.TxHash)
	if _, err := r1.SendStealth(ctx, e.alice.Ref(chains.Ethereum), e.alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r1, "ETH"), Amount: amt("1"), To: e.bob.Meta, IdempotencyKey: "once"}); !errors.Is(err, chains.ErrOutcomeUnknown) {
		t.Fatalf("want the unknown outcome of the simulated crash after the record, got %v", err)
	}
	r1.Stop()

	c := e.connector(t, chains.Ethereum, nil)
	r2, err := chain.Start(ctx, e.system, c, chain.Options{Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Stop()
	// Recovery already broadcast it: it is mined without any retry.
	deadline := time.Now().Add(10 * time.Second)
	for {
		anns, _, err := r2.Scan(ctx, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(anns) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the persisted payment was not rebroadcast at start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := r2.SendStealth(ctx, e.alice.Ref(chains.Ethereum), e.alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r2, "ETH"), Amount: amt("1"), To: e.bob.Meta, IdempotencyKey: "once"})
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, c, res.TxHash)
	next, err := r2.SendStealth(ctx, e.alice.Ref(chains.Ethereum), e.alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(r2, "ETH"), Amount: amt("1"), To: e.bob.Meta, IdempotencyKey: "twice"})
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, c, next.TxHash)
	assertNonces(t, nonceUse(t, c, e.alice.Address), 2)
	anns, _, _ := r2.Scan(ctx, "", 100)
	if len(anns) != 2 || anns[0].TxHash != res.TxHash {
		t.Fatalf("announcements %+v; recorded %s", anns, res.TxHash)
	}
}

func TestStopRefusesCalls(t *testing.T) {
	e := newEnv(t, chains.Horizen)
	r := e.start(t, e.connector(t, chains.Horizen, nil))
	r.Stop()
	if _, err := r.Balance(context.Background(), e.alice.Address.Hex()); !errors.Is(err, chain.ErrStopped) || !errors.Is(err, chains.ErrUnavailable) {
		t.Fatalf("after stop: %v", err)
	}
}

// amt is a test amount in whole units, parsed with 18 decimals: the
// connector rescales it exactly to its asset's decimals, or refuses it.
func amt(s string) chains.Amount {
	a, err := chains.ParseAmountOf(s, 18)
	if err != nil {
		panic(err)
	}
	return a
}
