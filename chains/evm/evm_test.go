//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

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

func startDevnet(t testing.TB, ids ...chains.ID) *devnet.EVM {
	t.Helper()
	d, err := devnet.StartEVM(context.Background(), devnet.EVMOptions{Chains: ids, Log: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func openStore(t testing.TB, dir string) *persistence.Bolt {
	t.Helper()
	s, err := persistence.OpenBolt(filepath.Join(dir, "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func connect(t testing.TB, cfg evm.Config, store persistence.Store, signer chains.Signer, mod func(*evm.Options)) *evm.Connector {
	t.Helper()
	opts := evm.Options{Store: store, Signer: signer, Log: quietLog()}
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

func mustMined(t testing.TB, c *evm.Connector, hash string) *types.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.WaitMined(ctx, hash)
	if err != nil {
		t.Fatalf("wait %s: %v", hash, err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("%s reverted", hash)
	}
	return r
}

func wei(t testing.TB, c *evm.Connector, addr string) *big.Int {
	t.Helper()
	b, err := c.Client().BalanceAt(context.Background(), common.HexToAddress(addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func units(t testing.TB, s string, dec int) *big.Int {
	t.Helper()
	v, err := chains.ParseAmount(s, dec)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scanAll reads every announcement from genesis in pages of limit.
func scanAll(t testing.TB, c *evm.Connector, limit int) []chains.Announcement {
	t.Helper()
	var all []chains.Announcement
	cursor := ""
	for {
		anns, next, err := c.Scan(context.Background(), cursor, limit)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, anns...)
		if len(anns) < limit {
			return all
		}
		if next == cursor {
			t.Fatal("cursor did not advance")
		}
		cursor = next
	}
}

// Agent A pays agent B's meta-address in the native asset and in USDC on
// every EVM chain; B's scan finds exactly those payments and B withdraws
// them to A's address, everything, leaving nothing on the stealth address.
func TestPayScanWithdrawOnEveryChain(t *testing.T) {
	d := startDevnet(t)
	store := openStore(t, t.TempDir())
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	signer := evmtest.NewSigner(alice, bob)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range d.Chains() {
		cfg, _ := d.Config(id)
		c := connect(t, cfg, store, signer, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(string(id), func(t *testing.T) { payScanWithdraw(ctx, t, c, alice, bob) })
		}()
	}
	wg.Wait()
}

func payScanWithdraw(ctx context.Context, t *testing.T, c *evm.Connector, alice, bob *evmtest.Agent) {
	id := c.Chain()
	native := id.NativeAsset()
	fund, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, fund.TxHash)
	if fund.TxLink == "" || c.TxLink(fund.TxHash) != fund.TxLink {
		t.Fatalf("tx link %q", fund.TxLink)
	}
	bal, err := c.Balance(ctx, alice.Address.Hex())
	if err != nil || bal.Native != devnet.FaucetNative || bal.Tokens["USDC"] != devnet.FaucetUSDC {
		t.Fatalf("balance after faucet %+v %v", bal, err)
	}

	pay1, err := c.SendStealth(ctx, alice.Ref(id), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, native), Amount: amt("1.25"), To: bob.Meta, IdempotencyKey: "pay-native-" + string(id)})
	if err != nil {
		t.Fatal(err)
	}
	pay2, err := c.SendStealth(ctx, alice.Ref(id), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "usdc"), Amount: amt("25.5"), To: bob.Meta, IdempotencyKey: "pay-usdc-" + string(id)})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, pay1.TxHash)
	mustMined(t, c, pay2.TxHash)

	// B scans from genesis, in pages of one to exercise the cursor.
	var mine []chains.Announcement
	for _, a := range scanAll(t, c, 1) {
		ok, err := bob.Owns(a)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			mine = append(mine, a)
		}
		if other, _ := alice.Owns(a); other {
			t.Fatalf("announcement %+v matches alice too", a)
		}
	}
	if len(mine) != 2 {
		t.Fatalf("bob found %d payments, want 2: %+v", len(mine), mine)
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].Position < mine[j].Position })
	if mine[0].Asset != native || mine[0].Amount != "1.25" || mine[0].TxHash != pay1.TxHash {
		t.Fatalf("native announcement %+v", mine[0])
	}
	if mine[1].Asset != "USDC" || mine[1].Amount != "25.5" || mine[1].TxHash != pay2.TxHash {
		t.Fatalf("token announcement %+v", mine[1])
	}
	if got := wei(t, c, mine[0].StealthAddress); got.Cmp(units(t, "1.25", 18)) != 0 {
		t.Fatalf("stealth address holds %s wei", got)
	}

	// Withdraw the native payment entirely to alice: nothing stays behind.
	before := wei(t, c, alice.Address.Hex())
	w1, err := c.Withdraw(ctx, bob.StealthRef(id, mine[0].EphemeralPubKey), chains.WithdrawRequest{From: mine[0].StealthAddress, To: alice.Address.Hex(), Asset: chainstest.Asset(c, native), All: true, IdempotencyKey: "w-native-" + string(id)})
	if err != nil {
		t.Fatal(err)
	}
	r := mustMined(t, c, w1.TxHash)
	if left := wei(t, c, mine[0].StealthAddress); left.Sign() != 0 {
		t.Fatalf("withdraw-all left %s wei", left)
	}
	fee := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
	got := new(big.Int).Sub(wei(t, c, alice.Address.Hex()), before)
	if want := new(big.Int).Sub(units(t, "1.25", 18), fee); got.Cmp(want) != 0 {
		t.Fatalf("alice received %s, want 1.25 less the fee = %s", got, want)
	}

	// Withdraw part of the USDC (exact), then the rest, which takes the
	// payment's gas stipend along (no separate native sweep).
	ref := bob.StealthRef(id, mine[1].EphemeralPubKey)
	w2, err := c.Withdraw(ctx, ref, chains.WithdrawRequest{From: mine[1].StealthAddress, To: alice.Address.Hex(), Asset: chainstest.Asset(c, "USDC"), Amount: amt("0.5"), IdempotencyKey: "w-usdc-1-" + string(id)})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, w2.TxHash)
	sb, _ := c.Balance(ctx, mine[1].StealthAddress)
	if sb.Tokens["USDC"] != "25" {
		t.Fatalf("stealth USDC after partial withdrawal %+v", sb)
	}
	w3, err := c.Withdraw(ctx, ref, chains.WithdrawRequest{From: mine[1].StealthAddress, To: alice.Address.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "w-usdc-2-" + string(id)})
	if err != nil {
		t.Fatal(err)
	}
	r3 := mustMined(t, c, w3.TxHash)
	for i := 0; ; i++ {
		rep, err := c.MaintainOnce(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending == 0 {
			break
		}
		if i > 1000 {
			t.Fatalf("still pending %+v", rep)
		}
		time.Sleep(10 * time.Millisecond)
	}
	sb, _ = c.Balance(ctx, mine[1].StealthAddress)
	left := wei(t, c, mine[1].StealthAddress)
	if sb.Tokens["USDC"] != "0" || left.Cmp(new(big.Int).Mul(big.NewInt(21000), r3.EffectiveGasPrice)) >= 0 {
		t.Fatalf("stealth address after withdrawing everything %+v: %s wei is more than moving it costs", sb, left)
	}
	// A native sweep now has nothing worth moving.
	if _, err := c.Withdraw(ctx, ref, chains.WithdrawRequest{From: mine[1].StealthAddress, To: alice.Address.Hex(), Asset: chainstest.Asset(c, native), All: true, IdempotencyKey: "w-usdc-3-" + string(id)}); !errors.Is(err, chains.ErrInsufficientFunds) {
		t.Fatalf("sweeping the dust: %v", err)
	}
	ab, _ := c.Balance(ctx, alice.Address.Hex())
	if ab.Tokens["USDC"] != devnet.FaucetUSDC {
		t.Fatalf("alice USDC %s, want all back", ab.Tokens["USDC"])
	}
	// Nothing left unconfirmed after a maintenance pass, and nothing of
	// ours taken for a replacement (every receipt of the pass is read).
	rep, err := c.MaintainOnce(ctx, false)
	if err != nil || rep.Pending != 0 || rep.Dropped != 0 {
		t.Fatalf("maintenance %+v %v", rep, err)
	}
}

func TestNamesRegisterResolveReverse(t *testing.T) {
	d := startDevnet(t, chains.Polygon)
	cfg, _ := d.Config(chains.Polygon)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), nil)
	ctx := context.Background()
	for _, a := range []*evmtest.Agent{alice, bob} {
		f, err := c.Fund(ctx, a.Address.Hex())
		if err != nil {
			t.Fatal(err)
		}
		mustMined(t, c, f.TxHash)
	}
	if _, err := c.ResolveName(ctx, "alice.veil"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("unregistered: %v", err)
	}
	r, err := c.RegisterName(ctx, alice.Ref(chains.Polygon), alice.Address.Hex(), "alice.veil", alice.Meta)
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, r.TxHash)
	for _, n := range []string{"alice", "alice.veil", "Alice.Veil"} {
		got, err := c.ResolveName(ctx, n)
		if err != nil || got != alice.Meta {
			t.Fatalf("resolve %q = %q, %v", n, got, err)
		}
	}
	if n, err := c.NameOf(ctx, alice.Address.Hex()); err != nil || n != "alice.veil" {
		t.Fatalf("reverse = %q %v", n, err)
	}
	// Same registration again: the original transaction, nothing new.
	again, err := c.RegisterName(ctx, alice.Ref(chains.Polygon), alice.Address.Hex(), "alice", alice.Meta)
	if err != nil || again.TxHash != r.TxHash {
		t.Fatalf("re-register = %+v %v, want %s", again, err, r.TxHash)
	}
	if _, err := c.RegisterName(ctx, bob.Ref(chains.Polygon), bob.Address.Hex(), "alice", bob.Meta); !errors.Is(err, chains.ErrNameTaken) {
		t.Fatalf("taken: %v", err)
	}
	for _, bad := range []string{"ab", "a_b", "UPPER!", "0123456789012345678901234567890123", "é-name", ""} {
		if _, err := c.RegisterName(ctx, bob.Ref(chains.Polygon), bob.Address.Hex(), bad, bob.Meta); !errors.Is(err, chains.ErrInvalidName) {
			t.Fatalf("name %q: %v", bad, err)
		}
	}
	rb, err := c.RegisterName(ctx, bob.Ref(chains.Polygon), bob.Address.Hex(), "bob-2", bob.Meta)
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, rb.TxHash)
	if got, _ := c.ResolveName(ctx, "bob-2.veil"); got != bob.Meta {
		t.Fatalf("bob-2 = %q", got)
	}
	// An owner holds one name.
	if _, err := c.RegisterName(ctx, bob.Ref(chains.Polygon), bob.Address.Hex(), "bob-3", bob.Meta); !errors.Is(err, chains.ErrNameTaken) {
		t.Fatalf("second name: %v", err)
	}
}

func TestInputErrors(t *testing.T) {
	d := startDevnet(t, chains.Horizen)
	cfg, _ := d.Config(chains.Horizen)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), nil)
	ctx := context.Background()
	f, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, f.TxHash)
	// The caller parses the amount (chains.ParseAmountOf); the connector
	// refuses what its asset cannot hold ("1.0000001" USDC) and a zero.
	send := func(amount, asset, meta string) error {
		var v chains.Amount
		if amount != "0" {
			var err error
			if v, err = chains.ParseAmountOf(amount, 18); err != nil {
				return err
			}
		}
		_, err := c.SendStealth(ctx, alice.Ref(chains.Horizen), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, asset), Amount: v, To: meta})
		return err
	}
	cases := []struct {
		amount, asset, meta string
		want                error
	}{
		{"1.0000001", "USDC", bob.Meta, chains.ErrInvalidAmount},
		{"-1", "ZEN", bob.Meta, chains.ErrInvalidAmount},
		{"0", "ZEN", bob.Meta, chains.ErrInvalidAmount},
		{"1e3", "ZEN", bob.Meta, chains.ErrInvalidAmount},
		{"1", "ETH", bob.Meta, chains.ErrUnknownAsset}, // horizen's native is ZEN
		{"1", "DOGE", bob.Meta, chains.ErrUnknownAsset},
		{"1", "ZEN", "st:eth:0x1234", chains.ErrInvalidAddress},
		{"1000", "ZEN", bob.Meta, chains.ErrInsufficientFunds},
		{"20000", "USDC", bob.Meta, chains.ErrInsufficientFunds},
	}
	for _, cs := range cases {
		if err := send(cs.amount, cs.asset, cs.meta); !errors.Is(err, cs.want) {
			t.Errorf("send %s %s to %.20s: %v, want %v", cs.amount, cs.asset, cs.meta, err, cs.want)
		}
	}
	if _, err := c.Balance(ctx, "0xnope"); !errors.Is(err, chains.ErrInvalidAddress) {
		t.Errorf("balance of bad address: %v", err)
	}
	if n, _ := c.NextNonce(ctx, alice.Address); n != 0 {
		t.Errorf("failed sends moved the nonce to %d", n)
	}
	// Idempotency: the same key returns the same payment; another amount
	// under it is refused.
	r1, err := c.SendStealth(ctx, alice.Ref(chains.Horizen), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ZEN"), Amount: amt("1"), To: bob.Meta, IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := c.SendStealth(ctx, alice.Ref(chains.Horizen), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "zen"), Amount: amt("1"), To: bob.Meta, IdempotencyKey: "k1"})
	if err != nil || r2 != r1 {
		t.Fatalf("retry = %+v %v, want %+v", r2, err, r1)
	}
	if _, err := c.SendStealth(ctx, alice.Ref(chains.Horizen), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ZEN"), Amount: amt("2"), To: bob.Meta, IdempotencyKey: "k1"}); !errors.Is(err, chains.ErrIdempotencyConflict) {
		t.Fatalf("reused key: %v", err)
	}
	mustMined(t, c, r1.TxHash)
	if n, _ := c.NextNonce(ctx, alice.Address); n != 1 {
		t.Fatalf("nonce %d after one payment", n)
	}
}

// checkNonces asserts that addr's transactions in blocks [from, head] use
// exactly the nonces first..first+n-1, each once.
func checkNonces(t testing.TB, c *evm.Connector, addr common.Address, first uint64, n int) {
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
	if len(seen) != n {
		t.Fatalf("%d distinct nonces on chain, want %d: %v", len(seen), n, seen)
	}
	for i := first; i < first+uint64(n); i++ {
		if seen[i] != 1 {
			t.Fatalf("nonce %d used %d times", i, seen[i])
		}
	}
}

// Even without the chain actor's per-address serialisation, concurrent
// sends from one address get distinct, gap-free nonces: the ledger's
// version check makes a loser re-reserve.
func TestConcurrentSendsWithoutActor(t *testing.T) {
	d := startDevnet(t, chains.Base)
	cfg, _ := d.Config(chains.Base)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), nil)
	ctx := context.Background()
	f, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, f.TxHash)
	const n = 20
	hashes := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.SendStealth(ctx, alice.Ref(chains.Base), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, ""), Amount: amt("0.01"), To: bob.Meta, IdempotencyKey: fmt.Sprintf("c%d", i)})
			hashes[i] = r.TxHash
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hashes {
		mustMined(t, c, h)
	}
	checkNonces(t, c, alice.Address, 0, n)
}
