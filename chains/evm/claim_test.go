//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/persistence"
)

// A payment whose broadcast the node refused is not reported failed once
// another process has taken its recorded transaction up while the first
// attempt was still waiting for the node: the caller's retry under the
// same key, through another member, was answered with the transaction's
// hash, or another member's restart pass sent it again. The writer's
// rollback then finds the intent claimed and keeps it; its caller is told
// to retry, not that the payment failed; the transaction is sent, and the
// one payment lands once. Before, the rollback deleted the intent: a
// payment acknowledged and never made, or made after its caller was told
// it failed, with its nonce handed out again (issue 25).
func TestRefusedPaymentTakenUpByAnotherMemberIsKept(t *testing.T) {
	for _, takeUp := range []string{"retry", "restart pass"} {
		t.Run(takeUp, func(t *testing.T) { refusedAndTakenUp(t, takeUp) })
	}
}

func refusedAndTakenUp(t *testing.T, takeUp string) {
	m := newSharedStoreMember(t, "claim")
	cfg, store, alice, bob, signer, other := m.cfg, m.store, m.alice, m.bob, m.signer, m.other
	ctx := context.Background()
	pay := func(c *evm.Connector) (chains.TxResult, error) {
		return c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, "ETH"), Amount: amt("0.25"), To: bob.Meta, IdempotencyKey: "taken-up"})
	}

	var refusing atomic.Bool
	var retried chains.TxResult
	var retryErr error
	wcfg := cfg
	wcfg.RPCURL = refusingNode(t, cfg.RPCURL, &refusing)
	writer := connect(t, wcfg, store, signer, func(o *evm.Options) {
		o.Failpoint = func(p string) error {
			if p != evm.FailAfterBroadcast || !refusing.Load() {
				return nil
			}
			// The node has refused; before the rollback, another member
			// takes the payment up.
			if takeUp == "retry" {
				retried, retryErr = pay(other)
				return nil
			}
			var rep evm.MaintainReport
			if rep, retryErr = other.MaintainOnce(ctx, true); retryErr == nil && rep.Rebroadcast != 1 {
				t.Errorf("restart pass %+v; want one rebroadcast", rep)
			}
			// Its hash is the one recorded (the retry below reads it).
			return nil
		}
	})
	refusing.Store(true)
	r, err := pay(writer)
	refusing.Store(false)
	if takeUp == "restart pass" && retryErr == nil {
		retried, retryErr = r, nil
	}
	if retryErr != nil || retried.TxHash == "" {
		t.Fatalf("the retry through the other member: %+v %v; want the recorded transaction", retried, retryErr)
	}
	if err == nil || !errors.Is(err, chains.ErrOutcomeUnknown) || r.TxHash != retried.TxHash {
		t.Fatalf("the refused first attempt answered %+v, %v; want the recorded transaction and a retriable error, not a failure", r, err)
	}
	if n, err := other.PendingCount(ctx); err != nil || n != 1 {
		t.Fatalf("pending %d (%v); want the payment still recorded", n, err)
	}
	// The other member's restart pass sends it; it is mined once.
	if _, err := other.MaintainOnce(ctx, true); err != nil {
		t.Fatal(err)
	}
	mustMined(t, other, retried.TxHash)
	waitSettled(t, other)
	checkNonces(t, other, alice.Address, 0, 1)
	if again, err := pay(other); err != nil || again.TxHash != retried.TxHash {
		t.Fatalf("a later retry: %+v %v; want the mined transaction", again, err)
	}
}

// sharedStoreMember starts an Ethereum devnet and one connector on a fresh
// store, as another cluster member would run it, and funds a new agent
// (name-alice) with a transfer it waits to be mined. Tests then connect a
// second member to the same store with their own node or failpoints.
type sharedStoreMember struct {
	cfg        evm.Config
	store      *persistence.Bolt
	alice, bob *evmtest.Agent
	signer     chains.Signer
	other      *evm.Connector
}

func newSharedStoreMember(t *testing.T, name string) sharedStoreMember {
	t.Helper()
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	store := openStore(t, t.TempDir())
	t.Cleanup(func() { _ = store.Close() })
	alice, bob := evmtest.NewAgent(name+"-alice"), evmtest.NewAgent(name+"-bob")
	signer := evmtest.NewSigner(alice, bob)
	other := connect(t, cfg, store, signer, nil)
	f, err := other.Fund(context.Background(), alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, other, f.TxHash)
	return sharedStoreMember{cfg: cfg, store: store, alice: alice, bob: bob, signer: signer, other: other}
}
