//go:build !nodevnet

package evm_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/internal/fakeclock"
)

// A transaction stuck in the pool is resubmitted at the same nonce with a
// higher fee; the replacement is mined, the payment happens once.
func TestStuckTransactionIsBumped(t *testing.T) {
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	clock := fakeclock.New(time.Now())
	signer := &recordingSigner{Signer: evmtest.NewSigner(alice, bob)}
	c := connect(t, cfg, openStore(t, t.TempDir()), signer, func(o *evm.Options) { o.Now = clock.Now })
	ctx := context.Background()
	f, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, f.TxHash)
	net := d.Net(chains.Ethereum)
	net.SetMining(false)
	r, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.5"), To: bob.Meta, IdempotencyKey: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.MaintainOnce(ctx, false)
	if err != nil || rep.Bumped != 0 || rep.Pending != 1 {
		t.Fatalf("fresh tx: %+v %v", rep, err)
	}
	clock.Advance(cfg.StuckAfter + time.Second)
	rep, err = c.MaintainOnce(ctx, false)
	if err != nil || rep.Bumped != 1 {
		t.Fatalf("stuck tx: %+v %v", rep, err)
	}
	// The fee bump was signed under the payment's own spend again (the
	// enclave counts it once, by its key), not as an unlabelled re-sign.
	reqs := signer.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d signatures, want the payment and its bump", len(reqs))
	}
	for i, q := range reqs {
		sp := q.Spend
		if sp == nil || sp.Key != "stuck" || sp.AgentID != alice.ID || sp.Asset != "ETH" || sp.Recipient != bob.Meta ||
			sp.Amount.Units().Cmp(units(t, "0.5", 18)) != 0 || sp.Amount.Decimals() != 18 {
			t.Fatalf("signature %d: spend %+v", i, sp)
		}
	}
	net.SetMining(true)
	waitSettled(t, c)
	// The retry of the key now answers the mined replacement.
	r2, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.5"), To: bob.Meta, IdempotencyKey: "stuck"})
	if err != nil || r2.TxHash == r.TxHash {
		t.Fatalf("after bump the record says %+v (first %s), %v", r2, r.TxHash, err)
	}
	rc := mustMined(t, c, r2.TxHash)
	if _, err := c.Client().TransactionReceipt(ctx, common.HexToHash(r.TxHash)); err == nil {
		t.Fatal("the replaced transaction was mined too")
	}
	_ = rc
	anns := scanAll(t, c, 100)
	if len(anns) != 1 {
		t.Fatalf("%d announcements, want 1", len(anns))
	}
	checkNonces(t, c, alice.Address, 0, 1)
}

// recordingSigner records every sign request it passes on.
type recordingSigner struct {
	chains.Signer
	mu   sync.Mutex
	reqs []chains.SignRequest
}

func (r *recordingSigner) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.Signer.Sign(ctx, req)
}

func (r *recordingSigner) requests() []chains.SignRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chains.SignRequest(nil), r.reqs...)
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

// A restarted process sends an unconfirmed transaction again as it is, even
// when it is older than StuckAfter (the node may have lost it with the
// crash), and bumps its fee only when it stays unconfirmed for StuckAfter
// after that. Bumping on the restart pass replaced the transaction whose
// hash the caller had already been given (an approved payment's record
// named a transaction that was never mined).
func TestRestartSendsAgainBeforeBumping(t *testing.T) {
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	alice, bob := evmtest.NewAgent("restart-alice"), evmtest.NewAgent("restart-bob")
	clock := fakeclock.New(time.Now())
	signer := evmtest.NewSigner(alice, bob)
	dir := t.TempDir()
	store := openStore(t, dir)
	t.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	first := connect(t, cfg, store, signer, func(o *evm.Options) { o.Now = clock.Now })
	f, err := first.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, first, f.TxHash)
	net := d.Net(chains.Ethereum)
	net.SetMining(false)
	if _, err := first.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(first, "ETH"), Amount: amt("0.5"), To: bob.Meta, IdempotencyKey: "restart-no-bump"}); err != nil {
		t.Fatal(err)
	}
	first.Close()

	// The restart comes after StuckAfter.
	clock.Advance(cfg.StuckAfter + time.Second)
	restarted := connect(t, cfg, store, signer, func(o *evm.Options) { o.Now = clock.Now })
	rep, err := restarted.MaintainOnce(ctx, true)
	if err != nil || rep.Rebroadcast != 1 || rep.Bumped != 0 {
		t.Fatalf("restart pass: %+v %v; want the transaction sent again, not bumped", rep, err)
	}
	if rep, err = restarted.MaintainOnce(ctx, false); err != nil || rep.Bumped != 0 || rep.Pending != 1 {
		t.Fatalf("right after the restart pass: %+v %v; want it pending, not bumped", rep, err)
	}
	clock.Advance(cfg.StuckAfter + time.Second)
	if rep, err = restarted.MaintainOnce(ctx, false); err != nil || rep.Bumped != 1 {
		t.Fatalf("StuckAfter after the restart pass: %+v %v; want one bump", rep, err)
	}
	// Mined without the bump's help: the first transaction or its
	// replacement, once.
	net.SetMining(true)
	waitSettled(t, restarted)
	checkNonces(t, restarted, alice.Address, 0, 1)
}
