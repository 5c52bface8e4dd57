//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/internal/settletest"
	"github.com/veilhq/veil/internal/faultproxy"
)

// faults are the node faults every connector's payment is tested under
// (issue 32 item 7), with faultproxy.HTTP between connector and node.
var faults = []struct {
	name  string
	fault faultproxy.Fault
}{
	{"answer lost", faultproxy.AnswerLost},
	{"request dropped", faultproxy.RequestDropped},
	{"node hangs", faultproxy.Hang},
}

// TestPaymentFaults: on the devnet and on Hardhat, the broadcast of a
// payment meets a fault. The caller is told the outcome is unknown with
// the recorded hash (never ErrUnavailable, "nothing was done"); the next
// maintenance pass sends the same transaction again, mines it once and
// reports its settlement once; a retry under the key answers that
// transaction and sends nothing new: exactly one transfer on chain.
func TestPaymentFaults(t *testing.T) {
	for _, b := range interopBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, f := range faults {
				t.Run(f.name, func(t *testing.T) { paymentFault(t, b, f.name, f.fault) })
			}
		})
	}
}

func paymentFault(t *testing.T, b backend, name string, fault faultproxy.Fault) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	key := onSharedNode("fault-" + b.name + "-" + name)
	alice, bob := evmtest.NewAgent(key+"-alice"), evmtest.NewAgent(key+"-bob")
	b.fund(t, alice.Address)
	proxy, err := faultproxy.NewHTTP(b.cfg.RPCURL)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	cfg := b.cfg
	cfg.RPCURL = proxy.URL()
	cfg.StuckAfter = time.Hour // no fee bump: the same bytes go again
	var settled settletest.Recorder
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), func(o *evm.Options) { o.OnSettled = settled.On })
	req := chains.SendRequest{Asset: chainstest.Asset(c, ""), Amount: amt("0.1"), To: bob.Meta, IdempotencyKey: key}
	pay := func() (chains.TxResult, error) {
		return c.SendStealth(ctx, alice.Ref(cfg.Chain), alice.Address.Hex(), req)
	}

	hit, done := proxy.Arm(fault, faultproxy.BodyContains("eth_sendRawTransaction"))
	type answer struct {
		r   chains.TxResult
		err error
	}
	first := make(chan answer, 1)
	go func() { r, err := pay(); first <- answer{r, err} }()
	<-hit
	if fault == faultproxy.Hang {
		proxy.Release()
	}
	<-done
	a := <-first
	var ou *chains.OutcomeUnknownError
	if !errors.As(a.err, &ou) || errors.Is(a.err, chains.ErrUnavailable) || ou.TxHash == "" || ou.TxHash != a.r.TxHash || ou.IdempotencyKey != key {
		t.Fatalf("payment = %+v, %v; want ErrOutcomeUnknown with the recorded hash", a.r, a.err)
	}
	if got := settled.Of(key); len(got) != 0 {
		t.Fatalf("settled before anything was mined: %+v", got)
	}

	// The next pass sends it again (the node may never have had it), then
	// one records its receipt and reports it.
	for i := 0; len(settled.Of(key)) == 0; i++ {
		if i == 200 {
			t.Fatalf("never settled")
		}
		if _, err := c.MaintainOnce(ctx, false); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			mustMined(t, c, ou.TxHash)
		}
	}
	for range 2 {
		if _, err := c.MaintainOnce(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	got := settled.Of(key)
	if len(got) != 1 || got[0].Status != chains.SettlementConfirmed || got[0].TxHash != ou.TxHash || got[0].Confirmations < 1 || got[0].AgentID != alice.ID {
		t.Fatalf("settlements %+v; want one confirmed of %s", got, ou.TxHash)
	}

	// The retry answers the same transaction; exactly one left alice.
	if r, err := pay(); err != nil || r.TxHash != ou.TxHash {
		t.Fatalf("retry = %+v, %v; want %s", r, err, ou.TxHash)
	}
	if n, err := c.Client().NonceAt(ctx, alice.Address, nil); err != nil || n != 1 {
		t.Fatalf("alice sent %d transactions (%v); want exactly one", n, err)
	}
	if len(settled.Of(key)) != 1 {
		t.Fatalf("the retry settled again: %+v", settled.Of(key))
	}
}

// TestPaymentNodeRestart: the node took a payment's transaction and
// restarts before mining it. The devnet keeps its chain on disk and its
// pool in memory (as geth --dev and Hardhat do), so the restarted node has
// forgotten the transaction. The next maintenance pass sees the node no
// longer holds it and sends the recorded signed bytes again (same nonce,
// same hash, no fee bump); it is mined once and settles once, confirmed,
// under the hash the caller was given; a retry under the key answers that
// transaction: exactly one transfer on chain.
func TestPaymentNodeRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := func() *devnet.EVM {
		d, err := devnet.StartEVM(ctx, devnet.EVMOptions{Dir: dir, Chains: []chains.ID{chains.Ethereum}, Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d
	}
	d := start()
	cfg, _ := d.Config(chains.Ethereum)
	proxy, err := faultproxy.NewHTTP(cfg.RPCURL)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	cfg.RPCURL = proxy.URL()
	cfg.StuckAfter = time.Hour // no fee bump: only the same bytes may go again
	alice, bob := evmtest.NewAgent("node-restart-alice"), evmtest.NewAgent("node-restart-bob")
	var settled settletest.Recorder
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), func(o *evm.Options) { o.OnSettled = settled.On })
	mustMined(t, c, mustFund(t, c, alice.Address).TxHash)

	const key = "node-restart"
	pay := func() (chains.TxResult, error) {
		return c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, ""), Amount: amt("0.1"), To: bob.Meta, IdempotencyKey: key})
	}
	d.Net(chains.Ethereum).SetMining(false)
	r, err := pay()
	if err != nil {
		t.Fatalf("payment: %v; want it broadcast", err)
	}
	if _, _, err := c.Client().TransactionByHash(ctx, common.HexToHash(r.TxHash)); err != nil {
		t.Fatalf("the node does not hold the payment before its restart: %v", err)
	}

	// The node restarts on the same chain, at a new address, its pool empty.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = start()
	restarted, _ := d.Config(chains.Ethereum)
	if err := proxy.SetTarget(restarted.RPCURL); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Client().TransactionByHash(ctx, common.HexToHash(r.TxHash)); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("the restarted node still knows the payment (%v): the fault did not happen", err)
	}

	var total evm.MaintainReport
	for i := 0; len(settled.Of(key)) == 0; i++ {
		if i == 200 {
			t.Fatalf("never settled (passes so far: %+v)", total)
		}
		rep, err := c.MaintainOnce(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		total.Rebroadcast += rep.Rebroadcast
		total.Bumped += rep.Bumped
		if i == 0 {
			if rep.Rebroadcast != 1 {
				t.Fatalf("first pass after the restart: %+v; want the recorded transaction sent again", rep)
			}
			mustMined(t, c, r.TxHash)
		}
	}
	for range 2 {
		if _, err := c.MaintainOnce(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if total.Bumped != 0 {
		t.Fatalf("maintenance bumped the fee (%+v): the caller's hash would no longer be the payment's", total)
	}
	got := settled.Of(key)
	if len(got) != 1 || got[0].Status != chains.SettlementConfirmed || got[0].TxHash != r.TxHash || got[0].AgentID != alice.ID {
		t.Fatalf("settlements %+v; want one confirmed of %s", got, r.TxHash)
	}
	if again, err := pay(); err != nil || again.TxHash != r.TxHash {
		t.Fatalf("retry = %+v, %v; want %s", again, err, r.TxHash)
	}
	if n, err := c.Client().NonceAt(ctx, alice.Address, nil); err != nil || n != 1 {
		t.Fatalf("alice sent %d transactions (%v); want exactly one", n, err)
	}
	if len(settled.Of(key)) != 1 {
		t.Fatalf("the retry settled again: %+v", settled.Of(key))
	}
}
