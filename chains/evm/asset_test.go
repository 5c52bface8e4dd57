//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm/evmtest"
)

// countingSigner counts the signatures asked of the enclave.
type countingSigner struct {
	chains.Signer
	n atomic.Int64
}

func (s *countingSigner) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	s.n.Add(1)
	return s.Signer.Sign(ctx, req)
}

// A request's asset is the connector's own descriptor, checked by
// identity, never looked up by its symbol: a USDC descriptor carrying
// another configured token's contract (ZEN's, which alice holds), a native
// asset with a contract, other decimals or another chain are refused
// before anything is signed, for a payment and for a withdrawal.
func TestForeignAssetDescriptorRefused(t *testing.T) {
	d := startDevnet(t, chains.Ethereum)
	cfg, _ := d.Config(chains.Ethereum)
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	signer := &countingSigner{Signer: evmtest.NewSigner(alice, bob)}
	c := connect(t, cfg, openStore(t, t.TempDir()), signer, nil)
	ctx := context.Background()
	f, err := c.Fund(ctx, alice.Address.Hex())
	if err != nil {
		t.Fatal(err)
	}
	mustMined(t, c, f.TxHash)
	zen := chainstest.Asset(c, "ZEN")
	if zen.Native() {
		t.Fatal("the devnet has no ZEN token")
	}
	usdc := chainstest.Asset(c, "USDC")
	sixDecimalZen := usdc
	sixDecimalZen.Ref = zen.Ref
	nativeWithContract := chainstest.Asset(c, "ETH")
	nativeWithContract.Ref = zen.Ref
	otherDecimals := usdc
	otherDecimals.Decimals = 18
	otherChain := usdc
	otherChain.Chain = chains.Base
	cases := map[string]chains.Asset{
		"USDC with ZEN's contract":         sixDecimalZen,
		"USDC with another contract":       chainstest.Foreign(c, "USDC", "0x000000000000000000000000000000000000dEaD"),
		"the native asset with a contract": nativeWithContract,
		"USDC with other decimals":         otherDecimals,
		"USDC of another chain":            otherChain,
		"no asset":                         {},
	}
	for name, a := range cases {
		_, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: a, Amount: amt("1"), To: bob.Meta, IdempotencyKey: "send " + name})
		if !errors.Is(err, chains.ErrUnknownAsset) {
			t.Errorf("send in %s: %v; want ErrUnknownAsset", name, err)
		}
		_, err = c.Withdraw(ctx, alice.Ref(chains.Ethereum), chains.WithdrawRequest{From: alice.Address.Hex(), To: bob.Address.Hex(), Asset: a, Amount: amt("1"), IdempotencyKey: "withdraw " + name})
		if !errors.Is(err, chains.ErrUnknownAsset) {
			t.Errorf("withdrawal in %s: %v; want ErrUnknownAsset", name, err)
		}
	}
	if n := signer.n.Load(); n != 0 {
		t.Errorf("%d signatures were asked for requests in foreign assets, want none", n)
	}
	if n, _ := c.NextNonce(ctx, alice.Address); n != 0 {
		t.Errorf("refused requests moved the nonce to %d", n)
	}
	// Its own descriptor pays (the test can fail).
	if _, err := c.SendStealth(ctx, alice.Ref(chains.Ethereum), alice.Address.Hex(), chains.SendRequest{Asset: usdc, Amount: amt("1"), To: bob.Meta, IdempotencyKey: "own"}); err != nil {
		t.Fatalf("send in its own USDC: %v", err)
	}
	if signer.n.Load() == 0 {
		t.Fatal("a payment in its own USDC was not signed")
	}
	// The x402 token domain too takes only its own descriptors.
	if _, err := c.TokenDomain(ctx, sixDecimalZen); !errors.Is(err, chains.ErrUnknownAsset) {
		t.Errorf("TokenDomain(USDC with ZEN's contract) = %v; want ErrUnknownAsset", err)
	}
	if dom, err := c.TokenDomain(ctx, usdc); err != nil || dom.Contract != usdc.Ref || dom.Asset != "USDC" {
		t.Errorf("TokenDomain(its own USDC) = %+v, %v", dom, err)
	}
}
