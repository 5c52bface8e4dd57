//go:build !nodevnet

package evm_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
)

// indexingNode forwards JSON-RPC to a real node but answers single
// eth_getTransactionReceipt calls with null while lagging is set: a node
// (or one behind a load balancer) that mined a transaction and has not
// indexed it yet. Batches pass through.
func indexingNode(t *testing.T, target string, lagging *atomic.Bool) string {
	return stubbedNode(t, target, "eth_getTransactionReceipt", lagging, map[string]any{"result": nil})
}

// A payment whose recorded transaction another process broadcast first
// (a cluster member restarting runs the restart pass over the shared
// store, rebroadcasting every pending intent) is mined before its own
// broadcast, which the node then refuses with "nonce too low". One
// receipt lookup that finds nothing (the node is still indexing the block)
// is no proof that another transaction took the nonce: the payment stays
// recorded and is not sent again under a new nonce. Sending it again paid
// twice (the partition test of issue 25 saw one payment reach its payee
// in two transactions).
func TestOwnTransactionMinedByAnotherProcessIsNotSentAgain(t *testing.T) {
	m := newSharedStoreMember(t, "rebroadcast")
	cfg, store, alice, bob, signer := m.cfg, m.store, m.alice, m.bob, m.signer
	restarted := m.other // the other member, same store
	ctx := context.Background()

	var lagging atomic.Bool
	var raced atomic.Bool
	lcfg := cfg
	lcfg.RPCURL = indexingNode(t, cfg.RPCURL, &lagging)
	payer := connect(t, lcfg, store, signer, func(o *evm.Options) {
		o.Failpoint = func(p string) error {
			if p != evm.FailBeforeBroadcast || !raced.CompareAndSwap(false, true) {
				return nil
			}
			// Between this process's write of the intent and its
			// broadcast, the other one's restart pass sends it and the
			// chain mines it.
			rep, err := restarted.MaintainOnce(ctx, true)
			if err != nil || rep.Rebroadcast != 1 {
				t.Errorf("restart pass: %+v %v; want one rebroadcast", rep, err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				n, err := restarted.Client().NonceAt(ctx, alice.Address, nil)
				if err == nil && n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("the rebroadcast payment was never mined (nonce %d, %v)", n, err)
					break
				}
				time.Sleep(10 * time.Millisecond) // polling a condition, not timing it
			}
			lagging.Store(true)
			return nil
		}
	})
	r, err := payer.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(payer, "ETH"), Amount: amt("0.5"), To: bob.Meta, IdempotencyKey: "pay-once"})
	lagging.Store(false)
	if !raced.Load() {
		t.Fatal("the failpoint never ran")
	}
	t.Logf("payment answered %s, %v", r.TxHash, err)
	// Whatever the answer said, the chain holds one transaction of alice.
	n, nerr := restarted.Client().PendingNonceAt(ctx, alice.Address)
	if nerr != nil {
		t.Fatal(nerr)
	}
	if n != 1 {
		t.Fatalf("alice sent %d transactions for one payment: paid twice", n)
	}
	// A retry of the key answers the recorded payment, and maintenance
	// confirms it once the node has indexed it.
	r2, err := payer.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(payer, "ETH"), Amount: amt("0.5"), To: bob.Meta, IdempotencyKey: "pay-once"})
	if err != nil {
		t.Fatalf("retry of the key: %v", err)
	}
	mustMined(t, payer, r2.TxHash)
	if n, _ := restarted.Client().PendingNonceAt(ctx, alice.Address); n != 1 {
		t.Fatalf("after the retry alice sent %d transactions", n)
	}
}
