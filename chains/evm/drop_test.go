//go:build !nodevnet

package evm_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/internal/fakeclock"
)

// A payment whose nonce another transaction took (the same key used
// outside Veil) is dropped, but only after Maintain has seen the nonce
// mined without a receipt of its own for DropAfter: a node that is still
// indexing answers no receipt for a transaction it mined, and dropping a
// mined payment would let a retry of its key pay twice.
func TestReplacedNonceIsDroppedOnlyAfterDropAfter(t *testing.T) {
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	clock := fakeclock.New(time.Now())
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), func(o *evm.Options) { o.Now = clock.Now })
	ctx := context.Background()
	f, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, f.TxHash)
	net := d.Net(chains.Ethereum)
	net.SetMining(false)
	if _, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.5"), To: bob.Meta, IdempotencyKey: "replaced"}); err != nil {
		t.Fatal(err)
	}
	// The same key, outside the ledger: a self-transfer at the same nonce
	// with a far higher fee replaces the payment in the pool.
	// geth's pool promotes a transaction in its background reorg loop, so
	// the pending nonce can lag the send on a loaded machine: wait for it.
	var nonce uint64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, err := c.Client().PendingNonceAt(ctx, alice.Address)
		if err != nil {
			t.Fatalf("pending nonce: %v", err)
		}
		if nonce = n; nonce != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the payment never reached the node's pending pool (pending nonce still 0)")
		}
	}
	gwei := big.NewInt(1_000_000_000)
	tx, err := types.SignNewTx(alice.Account, types.LatestSignerForChainID(new(big.Int).SetUint64(cfg.ChainID)), &types.DynamicFeeTx{
		ChainID: new(big.Int).SetUint64(cfg.ChainID), Nonce: nonce - 1, To: &alice.Address, Gas: 21000,
		GasTipCap: new(big.Int).Mul(gwei, big.NewInt(50)), GasFeeCap: new(big.Int).Mul(gwei, big.NewInt(500)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client().SendTransaction(ctx, tx); err != nil {
		t.Fatalf("replacement: %v", err)
	}
	net.SetMining(true)
	mustMined(t, c, tx.Hash().Hex())

	rep, err := c.MaintainOnce(ctx, false)
	if err != nil || rep.Dropped != 0 || rep.Pending != 1 {
		t.Fatalf("first sighting of the taken nonce: %+v %v; want it kept pending", rep, err)
	}
	clock.Advance(evm.DropAfter / 2)
	if rep, err = c.MaintainOnce(ctx, false); err != nil || rep.Dropped != 0 {
		t.Fatalf("within DropAfter: %+v %v; want it kept", rep, err)
	}
	clock.Advance(evm.DropAfter)
	if rep, err = c.MaintainOnce(ctx, false); err != nil || rep.Dropped != 1 {
		t.Fatalf("after DropAfter: %+v %v; want it dropped", rep, err)
	}
	if n, err := c.PendingCount(ctx); err != nil || n != 0 {
		t.Fatalf("pending after the drop: %d %v", n, err)
	}
}
