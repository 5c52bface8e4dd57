//go:build !nodevnet

package evm_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/evm/x402"
	"github.com/veilhq/veil/enclave"
)

// TestTransferWithAuthorization: the devnet USDC implements EIP-3009 like
// the real token. Alice's key signs an authorization (as a spend) through
// the connector; x402.Verify accepts its payload; bob's account settles it
// (paying gas only) and the tokens move from alice to the payee. Replaying
// it, an expired one, a tampered one and one for another chain are each
// refused and move nothing.
func TestTransferWithAuthorization(t *testing.T) {
	d := startDevnet(t, chains.Base)
	store := openStore(t, t.TempDir())
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	cfg, _ := d.Config(chains.Base)
	c := connect(t, cfg, store, evmtest.NewSigner(alice, bob), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, a := range []*evmtest.Agent{alice, bob} {
		r, err := c.Fund(ctx, a.Address.Hex())
		if err != nil {
			t.Fatal(err)
		}
		mustMined(t, c, r.TxHash)
	}
	payTo := crypto.PubkeyToAddress(evmtest.NewAgent("payee").Account.PublicKey)

	auth, err := c.AuthorizationDomain(ctx, "usdc")
	if err != nil {
		t.Fatal(err)
	}
	if auth.Version != "2" || auth.Asset != "USDC" || auth.ChainID.Cmp(new(big.Int).SetUint64(cfg.ChainID)) != 0 {
		t.Fatalf("domain %+v", auth)
	}
	now := time.Now()
	auth.From, auth.To = alice.Address.Hex(), payTo.Hex()
	auth.Value, auth.ValidAfter, auth.ValidBefore = units(t, "1.5", 6), big.NewInt(0), big.NewInt(now.Add(10*time.Minute).Unix())
	auth.Nonce = x402.NonceFor(alice.ID, "pay-1")
	sig, err := c.SignAuthorization(ctx, alice.Ref(chains.Base), auth, "pay-1")
	if err != nil {
		t.Fatal(err)
	}

	req := x402.Requirements{Scheme: x402.SchemeExact, Network: x402.Network(auth.ChainID), Amount: "1500000", Asset: auth.Contract,
		PayTo: payTo.Hex(), MaxTimeoutSeconds: 600, Extra: &x402.Extra{Name: auth.Name, Version: auth.Version}}
	header, err := x402.Encode(x402.PayloadOf(req, nil, auth, sig))
	if err != nil {
		t.Fatal(err)
	}
	var p x402.Payload
	if err := x402.Decode(header, &p); err != nil {
		t.Fatal(err)
	}
	typed, vsig, err := x402.Verify(p, req, now)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}

	before := tokenUnits(t, c, alice.Address)
	if used, err := c.AuthorizationUsed(ctx, typed); err != nil || used {
		t.Fatalf("used before settlement: %v %v", used, err)
	}
	res, err := c.SettleAuthorization(ctx, bob.Ref(chains.Base), bob.Address.Hex(), typed, vsig[:], "settle-1")
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	if got := tokenUnits(t, c, payTo); got.Cmp(units(t, "1.5", 6)) != 0 {
		t.Fatalf("payee holds %s units, want 1.5 USDC", got)
	}
	if got := new(big.Int).Sub(before, tokenUnits(t, c, alice.Address)); got.Cmp(units(t, "1.5", 6)) != 0 {
		t.Fatalf("alice paid %s units", got)
	}
	if used, err := c.AuthorizationUsed(ctx, typed); err != nil || !used {
		t.Fatalf("not used after settlement: %v %v", used, err)
	}
	// The same settlement key answers the same transaction.
	again, err := c.SettleAuthorization(ctx, bob.Ref(chains.Base), bob.Address.Hex(), typed, vsig[:], "settle-1")
	if err != nil || again.TxHash != res.TxHash {
		t.Fatalf("settle again with its key: %+v %v, want %s", again, err, res.TxHash)
	}

	expired := auth
	expired.Nonce, expired.ValidBefore = x402.NonceFor(alice.ID, "pay-2"), big.NewInt(now.Add(-time.Minute).Unix())
	expiredSig, err := c.SignAuthorization(ctx, alice.Ref(chains.Base), expired, "pay-2")
	if err != nil {
		t.Fatal(err)
	}
	tampered := auth
	tampered.Nonce = x402.NonceFor(alice.ID, "pay-3")
	tamperedSig, err := c.SignAuthorization(ctx, alice.Ref(chains.Base), tampered, "pay-3")
	if err != nil {
		t.Fatal(err)
	}
	tampered.Value = units(t, "15", 6)
	for _, tc := range []struct {
		name string
		auth chains.TransferAuthorization
		sig  []byte
	}{
		{"replay with a new key", typed, vsig[:]},
		{"expired", expired, expiredSig},
		{"tampered value", tampered, tamperedSig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payee := tokenUnits(t, c, payTo)
			_, err := c.SettleAuthorization(ctx, bob.Ref(chains.Base), bob.Address.Hex(), tc.auth, tc.sig, "settle-"+tc.name)
			if !errors.Is(err, evm.ErrAuthorizationRefused) {
				t.Fatalf("err = %v, want ErrAuthorizationRefused", err)
			}
			if got := tokenUnits(t, c, payTo); got.Cmp(payee) != 0 {
				t.Fatalf("the payee's balance moved: %s → %s", payee, got)
			}
		})
	}

	other := auth
	other.ChainID = big.NewInt(1)
	if _, err := c.SignAuthorization(ctx, alice.Ref(chains.Base), other, "pay-4"); !errors.Is(err, evm.ErrAuthorizationRefused) {
		t.Fatalf("another chain's authorization: err = %v", err)
	}
	// The enclave's check runs under the connector: bob's key cannot sign
	// alice's authorization (the signature would not be from `from`).
	if _, err := c.SignAuthorization(ctx, bob.Ref(chains.Base), auth, "pay-5"); err == nil || errors.Is(err, enclave.ErrUnauthorized) {
		t.Fatalf("bob signing alice's authorization: err = %v", err)
	}
}

func tokenUnits(t *testing.T, c *evm.Connector, a common.Address) *big.Int {
	t.Helper()
	b, err := c.Balance(context.Background(), a.Hex())
	if err != nil {
		t.Fatal(err)
	}
	return units(t, b.Tokens["USDC"], 6)
}
