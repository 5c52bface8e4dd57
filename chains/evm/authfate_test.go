//go:build !nodevnet

package evm_test

import (
	"context"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/evm/x402"
	"github.com/veilhq/veil/chains/internal/settletest"
)

// TestAuthorizationFate: an x402 authorization the payee holds is followed
// until its fate is known, and reported once as a settlement under its key
// (the payer's x402 payment record), only once validBefore has passed by
// the connector's clock (a fake one here):
//   - never submitted, and the chain is past validBefore: failed, with the
//     reason (it can provably never be settled);
//   - submitted by the payee while valid (the payer never heard it):
//     confirmed, with the transaction that used it;
//   - never submitted, but the chain's clock still before validBefore: not
//     reported yet (it could still be settled).
func TestAuthorizationFate(t *testing.T) {
	d := startDevnet(t, chains.Base)
	cfg, _ := d.Config(chains.Base)
	alice, bob := evmtest.NewAgent("fate-alice"), evmtest.NewAgent("fate-bob")
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	var settled settletest.Recorder
	c := connect(t, cfg, openStore(t, t.TempDir()), evmtest.NewSigner(alice, bob), func(o *evm.Options) { o.Now = now; o.OnSettled = settled.On })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, a := range []*evmtest.Agent{alice, bob} {
		mustMined(t, c, mustFund(t, c, a.Address).TxHash)
	}
	payTo := crypto.PubkeyToAddress(evmtest.NewAgent("fate-payee").Account.PublicKey)
	head, err := c.Client().HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	chainNow := time.Unix(int64(head.Time), 0)

	for _, tc := range []struct {
		name        string
		validBefore time.Time // relative to the chain's head
		submit      bool      // the payee settles it while valid
		want        chains.SettlementStatus
		wantText    string // in the reason
	}{
		{"expired, never submitted", chainNow, false, chains.SettlementFailed, "expired"},
		{"submitted by the payee", chainNow.Add(time.Hour), true, chains.SettlementConfirmed, ""},
		{"chain still before validBefore", chainNow.Add(time.Hour), false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "x402/fate-" + tc.name
			auth, err := c.AuthorizationDomain(ctx, "USDC")
			if err != nil {
				t.Fatal(err)
			}
			auth.From, auth.To = alice.Address.Hex(), payTo.Hex()
			auth.Value, auth.ValidAfter, auth.ValidBefore = units(t, "0.25", 6), big.NewInt(0), big.NewInt(tc.validBefore.Unix())
			auth.Nonce = x402.NonceFor(alice.ID, key)
			sig, err := c.SignAuthorization(ctx, alice.Ref(chains.Base), auth, key)
			if err != nil {
				t.Fatal(err)
			}
			var used string
			if tc.submit {
				r, err := c.SettleAuthorization(ctx, bob.Ref(chains.Base), bob.Address.Hex(), auth, sig, "settle/"+key)
				if err != nil {
					t.Fatalf("the payee's settlement: %v", err)
				}
				used = r.TxHash
			}
			// Before validBefore by our clock: nothing is reported.
			set(tc.validBefore.Add(-time.Minute))
			if rep, err := c.MaintainOnce(ctx, false); err != nil || rep.Authorizations != 0 || len(settled.Of(key)) != 0 {
				t.Fatalf("before validBefore: %+v %v, settlements %+v", rep, err, settled.Of(key))
			}
			// Past it: the fate, once.
			set(tc.validBefore.Add(time.Second))
			for range 2 {
				if _, err := c.MaintainOnce(ctx, false); err != nil {
					t.Fatal(err)
				}
			}
			got := settled.Of(key)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("reported %+v while the chain could still settle it", got)
				}
				return
			}
			if len(got) != 1 || got[0].Status != tc.want || got[0].TxHash != used || got[0].AgentID != alice.ID ||
				!strings.Contains(got[0].Reason, tc.wantText) {
				t.Fatalf("settlements %+v; want one %s (tx %q, reason with %q)", got, tc.want, used, tc.wantText)
			}
		})
	}
}
