//go:build !nodevnet

package evm_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/evm/evmdeploy"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// The interop suite runs the connector against nodes Veil did not write:
// the embedded devnet (geth) and a Hardhat 2 node from npm (EDR: its own
// error wordings, no eth_getBlockReceipts, automine, chain id 31337), with
// the contracts deployed by evmdeploy (what `veild contracts deploy` runs).

// backend is a node with Veil's contracts and a way to fund accounts.
type backend struct {
	name string
	cfg  evm.Config
	// fund gives addr 10 native units and 10,000 USDC.
	fund func(t testing.TB, addr common.Address)
}

func interopBackends(t *testing.T) []backend {
	t.Helper()
	d := startDevnet(t, chains.Ethereum)
	dcfg, _ := d.Config(chains.Ethereum)
	dev := backend{name: "devnet", cfg: dcfg, fund: func(t testing.TB, a common.Address) {
		c := connect(t, dcfg, openStore(t, t.TempDir()), nil, nil)
		mustMined(t, c, mustFund(t, c, a).TxHash)
	}}
	return []backend{dev, hardhatBackend(t)}
}

func TestMain(m *testing.M) {
	code := m.Run()
	evmtest.StopHardhat()
	os.Exit(code)
}

// hardhatBackend is the test binary's Hardhat node (evmtest.StartHardhat:
// npm ci when needed, port 0, contracts deployed by evmdeploy).
func hardhatBackend(t *testing.T) backend {
	t.Helper()
	n := evmtest.StartHardhat(t)
	cfg := n.Deployed.Config()
	cfg.PollInterval = 20 * time.Millisecond
	cfg.StuckAfter = time.Hour
	return backend{name: "hardhat", cfg: cfg, fund: n.Fund}
}

// sharedNames counts the agents' names handed out by onSharedNode in this
// process.
var sharedNames = struct {
	sync.Mutex
	uses map[string]int
}{uses: map[string]int{}}

// onSharedNode returns name the first time this process asks for it and a
// new name each time after. The Hardhat node lives as long as the test
// binary, so a test run again in the same process (go test -count=N)
// would find its accounts' nonces, balances and names from the run before.
func onSharedNode(name string) string {
	sharedNames.Lock()
	defer sharedNames.Unlock()
	sharedNames.uses[name]++
	if n := sharedNames.uses[name]; n > 1 {
		return fmt.Sprintf("%s-run%d", name, n)
	}
	return name
}

// TestInterop runs the connector's main paths on every backend.
func TestInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Hardhat node")
	}
	for _, b := range interopBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("pay, scan, withdraw", func(t *testing.T) { interopPay(t, b) })
			t.Run("invoice paid by plain transfers", func(t *testing.T) { interopInvoice(t, b) })
			t.Run("tokens withdrawn from an address without gas", func(t *testing.T) { interopGas(t, b) })
			t.Run("wrong contract refused at start", func(t *testing.T) { interopWrongContract(t, b) })
			t.Run("restart", func(t *testing.T) { interopRestart(t, b) })
			t.Run("names", func(t *testing.T) { interopNames(t, b) })
		})
	}
}

// agents returns two agents unique to this test (a shared node keeps
// every earlier test's state).
func agents(t *testing.T) (*evmtest.Agent, *evmtest.Agent, *evmtest.Signer) {
	id := onSharedNode(strings.NewReplacer("/", "-", " ", "-", ",", "").Replace(t.Name()))
	alice, bob := evmtest.NewAgent(id+"-alice"), evmtest.NewAgent(id+"-bob")
	return alice, bob, evmtest.NewSigner(alice, bob)
}

func interopPay(t *testing.T, b backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, bob, signer := agents(t)
	b.fund(t, alice.Address)
	c := connect(t, b.cfg, openStore(t, t.TempDir()), signer, nil)
	cursor := scanHead(t, c)
	p1, err := c.SendStealth(ctx, alice.Ref(c.Chain()), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("1.5"), To: bob.Meta, IdempotencyKey: "pay-eth"})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := c.SendStealth(ctx, alice.Ref(c.Chain()), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "USDC"), Amount: amt("12.25"), To: bob.Meta, IdempotencyKey: "pay-usdc"})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, p1.TxHash)
	mustMined(t, c, p2.TxHash)
	anns, _, err := c.Scan(ctx, cursor, 100)
	if err != nil {
		t.Fatal(err)
	}
	var mine []chains.Announcement
	for _, a := range anns {
		if ok, _ := bob.Owns(a); ok {
			mine = append(mine, a)
		}
	}
	if len(mine) != 2 || mine[0].Amount != "1.5" || mine[0].Asset != "ETH" || mine[1].Amount != "12.25" || mine[1].Asset != "USDC" {
		t.Fatalf("bob's announcements %+v", mine)
	}
	// Everything back out: the native payment swept to zero, then the
	// tokens, which take the token payment's gas stipend along.
	w1, err := c.Withdraw(ctx, bob.StealthRef(c.Chain(), mine[0].EphemeralPubKey), chains.WithdrawRequest{From: mine[0].StealthAddress, To: alice.Address.Hex(), Asset: chainstest.Asset(c, "ETH"), All: true, IdempotencyKey: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, w1.TxHash)
	ref := bob.StealthRef(c.Chain(), mine[1].EphemeralPubKey)
	w2, err := c.Withdraw(ctx, ref, chains.WithdrawRequest{From: mine[1].StealthAddress, To: alice.Address.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "w2"})
	if err != nil {
		t.Fatal(err)
	}
	r2 := mustMined(t, c, w2.TxHash)
	waitSettled(t, c)
	for i, a := range mine {
		bal, err := c.Balance(ctx, a.StealthAddress)
		if err != nil || bal.Tokens["USDC"] != "0" || i == 0 && bal.Native != "0" {
			t.Fatalf("%s after withdrawing everything: %+v %v", a.StealthAddress, bal, err)
		}
	}
	assertNoMovableDust(t, c, common.HexToAddress(mine[1].StealthAddress), r2.EffectiveGasPrice)
	ab, _ := c.Balance(ctx, alice.Address.Hex())
	if ab.Tokens["USDC"] != "10000" {
		t.Fatalf("alice's USDC %s, want all 10000 back", ab.Tokens["USDC"])
	}
}

// scanHead is a Scan cursor at the current head (a shared node has every
// earlier test's announcements).
func scanHead(t *testing.T, c *evm.Connector) string {
	t.Helper()
	n, err := c.Client().BlockNumber(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(n + 1)
}

// interopInvoice: an invoice's one-time address paid by plain transfers
// (a wallet, no announcement) is found by ScanTransfers and TransfersIn.
func interopInvoice(t *testing.T, b backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, bob, signer := agents(t)
	b.fund(t, alice.Address)
	c := connect(t, b.cfg, openStore(t, t.TempDir()), signer, nil)
	_, cursor, err := c.ScanTransfers(ctx, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	inv := invoiceAddress(t, bob)
	wallet := walletOf(t, c, alice.Account)
	usdc := b.cfg.Tokens[0].Address
	if _, err := wallet.Send(ctx, inv, units(t, "0.25", 18), nil); err != nil {
		t.Fatal(err)
	}
	r, err := wallet.Send(ctx, usdc, nil, bindings.NewTestToken().PackTransfer(inv, units(t, "42", 6)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i := 0; i < 100 && len(got) < 2; i++ {
		page, next, err := c.ScanTransfers(ctx, cursor, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range page {
			if strings.EqualFold(tr.To, inv.Hex()) {
				got[tr.Asset] = tr.Amount
			}
		}
		cursor = next
	}
	if got["ETH"] != "0.25" || got["USDC"] != "42" {
		t.Fatalf("transfers to the invoice address: %v", got)
	}
	ts, err := c.TransfersIn(ctx, r.TxHash.Hex())
	if err != nil || len(ts) != 1 || ts[0].Asset != "USDC" || ts[0].Amount != "42" || !strings.EqualFold(ts[0].To, inv.Hex()) {
		t.Fatalf("TransfersIn %+v %v", ts, err)
	}
}

// invoiceAddress is a fresh one-time address of agent's, as an invoice
// shows it.
func invoiceAddress(t *testing.T, a *evmtest.Agent) common.Address {
	t.Helper()
	m, err := secp256k1.ParseMetaAddress(a.Meta)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := secp256k1.Generate(m, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return common.Address(ann.StealthAddress)
}

// walletOf sends plain transactions from key, as a wallet would.
func walletOf(t *testing.T, c *evm.Connector, key *ecdsa.PrivateKey) *evmdeploy.Account {
	t.Helper()
	id, err := c.Client().ChainID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := evmdeploy.NewAccount(c.Client(), key, id)
	w.Poll = 20 * time.Millisecond
	return w
}

func interopWrongContract(t *testing.T, b backend) {
	alice, _, _ := agents(t)
	for _, mod := range []struct {
		variable string
		set      func(*evm.Config)
	}{
		{"VEIL_EVM_ETHEREUM_SENDER", func(c *evm.Config) { c.Sender = alice.Address }},
		{"VEIL_EVM_ETHEREUM_NAMES", func(c *evm.Config) { c.Names = alice.Address }},
		{"VEIL_EVM_ETHEREUM_TOKENS", func(c *evm.Config) {
			c.Tokens = []evm.Token{{Symbol: "USDC", Address: c.Tokens[0].Address, Decimals: 18}}
		}},
	} {
		cfg := b.cfg
		mod.set(&cfg)
		c, err := evm.New(context.Background(), cfg, evm.Options{Store: openStore(t, t.TempDir()), Log: quietLog()})
		if err == nil {
			c.Close()
			t.Fatalf("%s: connected", mod.variable)
		}
		if !errors.Is(err, evm.ErrMisconfigured) || !strings.Contains(err.Error(), mod.variable) {
			t.Fatalf("%s: %v", mod.variable, err)
		}
	}
}

// interopRestart: a payment persisted but not broadcast when the process
// stopped is broadcast by the next process's restart pass, and the caller's
// retry gets that transaction, not a second payment.
func interopRestart(t *testing.T, b backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, bob, signer := agents(t)
	b.fund(t, alice.Address)
	dir := t.TempDir()
	cursor := ""
	{
		store := openStore(t, dir)
		c := connect(t, b.cfg, store, signer, func(o *evm.Options) {
			o.Failpoint = func(p string) error {
				if p == evm.FailBeforeBroadcast {
					return errors.New("stopped before broadcast")
				}
				return nil
			}
		})
		cursor = scanHead(t, c)
		if _, err := c.SendStealth(ctx, alice.Ref(c.Chain()), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.75"), To: bob.Meta, IdempotencyKey: "restart-key"}); err == nil {
			t.Fatal("the failpoint did not stop the send")
		}
		c.Close()
		_ = store.Close()
	}
	store := openStore(t, dir)
	defer store.Close()
	c := connect(t, b.cfg, store, signer, nil)
	rep, err := c.MaintainOnce(ctx, true)
	if err != nil || rep.Rebroadcast != 1 {
		t.Fatalf("restart pass %+v %v", rep, err)
	}
	r, err := c.SendStealth(ctx, alice.Ref(c.Chain()), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.75"), To: bob.Meta, IdempotencyKey: "restart-key"})
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, r.TxHash)
	// A second rebroadcast of a mined transaction is harmless (each node's
	// "known"/"nonce too low" wording is understood).
	if _, err := c.MaintainOnce(ctx, true); err != nil {
		t.Fatal(err)
	}
	anns, _, err := c.Scan(ctx, cursor, 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range anns {
		if ok, _ := bob.Owns(a); ok {
			n++
			if a.TxHash != r.TxHash || a.Amount != "0.75" {
				t.Fatalf("payment %+v, retry answered %s", a, r.TxHash)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d payments for one key", n)
	}
}

// waitSettled runs maintenance until nothing of c's is unconfirmed.
func waitSettled(t *testing.T, c *evm.Connector) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		rep, err := c.MaintainOnce(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still pending: %+v", rep)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertNoMovableDust: what a is left with costs more to move (a 21,000
// gas transfer at price) than it is worth.
func assertNoMovableDust(t *testing.T, c *evm.Connector, a common.Address, price *big.Int) {
	t.Helper()
	left := wei(t, c, a.Hex())
	if limit := new(big.Int).Mul(big.NewInt(21000), price); left.Cmp(limit) >= 0 {
		t.Fatalf("%s keeps %s wei, which a transfer costing %s could have moved", a.Hex(), left, limit)
	}
}

// spendLog records the spends a signer is asked to sign, and refuses
// those deny matches (a policy that says no).
type spendLog struct {
	inner chains.Signer
	mu    sync.Mutex
	seen  []chains.Spend
	deny  func(chains.Spend) bool
}

func (s *spendLog) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	if req.Spend != nil {
		s.mu.Lock()
		s.seen = append(s.seen, *req.Spend)
		deny := s.deny != nil && s.deny(*req.Spend)
		s.mu.Unlock()
		if deny {
			return nil, errors.New("policy: this spend needs the owner's approval")
		}
	}
	return s.inner.Sign(ctx, req)
}

func (s *spendLog) spends(key string) []chains.Spend {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []chains.Spend
	for _, sp := range s.seen {
		if sp.Key == key {
			out = append(out, sp)
		}
	}
	return out
}

// interopGas: tokens paid to an invoice's one-time address (no native
// asset there) are withdrawn with the gas paid from the agent's main
// account in the same call, signed under its own explicit spend; exactly
// the gas is sent, nothing movable stays behind, a retry pays nothing
// twice, and without a payer (or with a payer the policy refuses, or one
// that cannot pay) nothing moves.
func interopGas(t *testing.T, b backend) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, bob, inner := agents(t)
	b.fund(t, alice.Address)
	signer := &spendLog{inner: inner}
	c := connect(t, b.cfg, openStore(t, t.TempDir()), signer, nil)
	id := c.Chain()

	// An invoice address of bob's, paid 42 USDC by alice's wallet.
	m, _ := secp256k1.ParseMetaAddress(bob.Meta)
	ann, err := secp256k1.Generate(m, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inv := common.Address(ann.StealthAddress)
	ref := bob.StealthRef(id, ann.EphemeralPub[:])
	if _, err := walletOf(t, c, alice.Account).Send(ctx, b.cfg.Tokens[0].Address, nil, bindings.NewTestToken().PackTransfer(inv, units(t, "42", 6))); err != nil {
		t.Fatal(err)
	}
	// The payer's record of each gas transfer (the agent's gas_funding
	// payment): called before the transfer is signed, wrapping it.
	type recorded struct {
		g   chains.GasFunding
		r   chains.TxResult
		err error
	}
	var records []recorded
	payer := chains.GasPayer{Key: bob.Ref(id), Address: bob.Address.Hex(),
		Record: func(ctx context.Context, g chains.GasFunding, send func(context.Context) (chains.TxResult, error)) (chains.TxResult, error) {
			if n := len(signer.spends(g.IdempotencyKey)); n != 0 {
				t.Errorf("gas transfer %s signed %d times before its record", g.IdempotencyKey, n)
			}
			r, err := send(ctx)
			records = append(records, recorded{g, r, err})
			return r, err
		}}
	dest := evmtest.NewAgent(onSharedNode(t.Name() + "-dest")).Address

	// Without a payer: refused, pointing at the agent's account.
	if _, err := c.Withdraw(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "plain"}); !errors.Is(err, chains.ErrInsufficientFunds) || !strings.Contains(err.Error(), "main account") {
		t.Fatalf("withdraw without gas: %v", err)
	}
	// A payer that holds nothing: refused, naming it; nothing signed.
	if _, err := c.WithdrawWithGas(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "poor"}, payer); !errors.Is(err, chains.ErrInsufficientFunds) || !strings.Contains(err.Error(), bob.Address.Hex()) {
		t.Fatalf("withdraw with an unfunded payer: %v", err)
	}
	b.fund(t, bob.Address)
	// The policy refuses the gas transfer: nothing moves.
	signer.deny = func(s chains.Spend) bool { return strings.HasPrefix(s.Key, "gas/") }
	if _, err := c.WithdrawWithGas(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "denied"}, payer); err == nil || !strings.Contains(err.Error(), "policy") {
		t.Fatalf("withdraw with the gas spend refused: %v", err)
	}
	if got := wei(t, c, inv.Hex()); got.Sign() != 0 {
		t.Fatalf("the invoice address received %s wei although the policy refused", got)
	}
	// The unfunded payer was refused before any transfer: no record; the
	// refused one was recorded, and its record saw the refusal.
	if len(records) != 1 || records[0].g.IdempotencyKey != "gas/denied" || records[0].err == nil || records[0].r.TxHash != "" {
		t.Fatalf("gas records after the refusals: %+v", records)
	}
	signer.deny = nil

	before := wei(t, c, bob.Address.Hex())
	w, err := c.WithdrawWithGas(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "with-gas"}, payer)
	if err != nil {
		t.Fatal(err)
	}
	r := mustMined(t, c, w.TxHash)
	// The gas transfer was signed as a spend of the native asset to the
	// one-time address, under its own key.
	gs := signer.spends("gas/with-gas")
	if len(gs) != 1 || gs[0].Asset != id.NativeAsset() || !strings.EqualFold(gs[0].Recipient, inv.Hex()) || gs[0].AgentID != bob.ID || gs[0].Amount.Sign() <= 0 {
		t.Fatalf("gas spends %+v", gs)
	}
	ws := signer.spends("with-gas")
	if len(ws) != 1 || ws[0].Asset != "USDC" || ws[0].Amount.String() != "42" || !strings.EqualFold(ws[0].Recipient, dest.Hex()) {
		t.Fatalf("withdrawal spends %+v", ws)
	}
	bal, _ := c.Balance(ctx, dest.Hex())
	if bal.Tokens["USDC"] != "42" {
		t.Fatalf("destination holds %+v", bal)
	}
	// Exactly the gas: the payer lost the funding and its fee, the
	// address kept less than it would cost to move.
	assertNoMovableDust(t, c, inv, r.EffectiveGasPrice)
	funded := gs[0].Amount.Units()
	paid := new(big.Int).Sub(before, wei(t, c, bob.Address.Hex()))
	if fee := new(big.Int).Sub(paid, funded); fee.Sign() <= 0 || new(big.Int).Mod(fee, big.NewInt(21000)).Sign() != 0 {
		t.Fatalf("payer paid %s for a funding of %s", paid, funded)
	}
	if used := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice); used.Cmp(funded) > 0 {
		t.Fatalf("the withdrawal cost %s, more than the %s sent", used, funded)
	}
	// The gas transfer had its own record: what it sent, from whom to
	// whom, linked to the withdrawal's key, with its transaction.
	if len(records) != 2 {
		t.Fatalf("gas records %+v; want the refused one and this one", records)
	}
	g := records[1]
	if g.err != nil || g.r.TxHash == "" || g.g.IdempotencyKey != "gas/with-gas" || g.g.For != "with-gas" || g.g.Chain != id ||
		!strings.EqualFold(g.g.To, inv.Hex()) || g.g.Asset != id.NativeAsset() || g.g.Amount.Units().Cmp(funded) != 0 {
		t.Fatalf("gas record %+v; want gas/with-gas of %s to %s", g, funded, inv.Hex())
	}
	// A retry returns the same withdrawal and funds nothing again.
	again, err := c.WithdrawWithGas(ctx, ref, chains.WithdrawRequest{From: inv.Hex(), To: dest.Hex(), Asset: chainstest.Asset(c, "USDC"), All: true, IdempotencyKey: "with-gas"}, payer)
	if err != nil || again.TxHash != w.TxHash || len(signer.spends("gas/with-gas")) != 1 {
		t.Fatalf("retry %+v %v, gas spends %d", again, err, len(signer.spends("gas/with-gas")))
	}
	if len(records) != 2 {
		t.Fatalf("the retry recorded a gas transfer again: %+v", records)
	}
}

// interopNames: a name registers, resolves both ways, is refused to
// another owner, and the same registration again answers the first.
func interopNames(t *testing.T, b backend) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice, bob, signer := agents(t)
	b.fund(t, alice.Address)
	b.fund(t, bob.Address)
	c := connect(t, b.cfg, openStore(t, t.TempDir()), signer, nil)
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("interop-%x", rnd)
	r, err := c.RegisterName(ctx, alice.Ref(c.Chain()), alice.Address.Hex(), name, alice.Meta)
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, r.TxHash)
	waitSettled(t, c)
	if m, err := c.ResolveName(ctx, name+".veil"); err != nil || m != alice.Meta {
		t.Fatalf("resolve: %q %v", m, err)
	}
	if n, err := c.NameOf(ctx, alice.Address.Hex()); err != nil || n != name+".veil" {
		t.Fatalf("reverse: %q %v", n, err)
	}
	if _, err := c.RegisterName(ctx, bob.Ref(c.Chain()), bob.Address.Hex(), name, bob.Meta); !errors.Is(err, chains.ErrNameTaken) {
		t.Fatalf("taken name: %v", err)
	}
	again, err := c.RegisterName(ctx, alice.Ref(c.Chain()), alice.Address.Hex(), name, alice.Meta)
	if err != nil || again.TxHash != r.TxHash {
		t.Fatalf("again: %+v %v, want %s", again, err, r.TxHash)
	}
}
