package enclave_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/txcheck"
)

// authorization is an EIP-3009 transfer of 0.0009 USDC from from to payTo.
func authorization(from, payTo string) chains.TransferAuthorization {
	return chains.TransferAuthorization{
		Name: "USDC (Veil test token)", Version: "2", ChainID: big.NewInt(84532),
		Contract: "0x00000000000000000000000000000000000000c0", Asset: "USDC",
		From: from, To: payTo, Value: big.NewInt(900),
		ValidAfter: big.NewInt(0), ValidBefore: big.NewInt(2_000_000_000), Nonce: [32]byte{1, 2, 3},
	}
}

func usdcSpend(payTo string, units int64) chains.Spend {
	return chains.Spend{Key: "x402-1", AgentID: alice, Chain: chains.Base, Asset: "USDC",
		Amount: chains.NewAmount(big.NewInt(units), 6), Recipient: payTo}
}

// TestAuthorizationMustBeItsSpend: an EIP-3009 authorization is signed only
// as a spend whose asset, amount and recipient are the authorization's, over
// exactly its EIP-712 digest; the signature recovers to the agent's address
// and the policy sees the spend. Every disagreement is refused before the
// policy is asked, so nothing is counted.
func TestAuthorizationMustBeItsSpend(t *testing.T) {
	ctx := context.Background()
	p, rec := provider(t)
	keys, err := p.DeriveKeys(ctx, alice, chains.Base, 0)
	if err != nil {
		t.Fatal(err)
	}
	const payTo = "0x00000000000000000000000000000000000000b0"
	key := chains.KeyRef{AgentID: alice, Chain: chains.Base}
	good := authorization(keys.Address, payTo)
	digest, err := eip3009.Digest(good)
	if err != nil {
		t.Fatal(err)
	}

	raw, err := p.Sign(ctx, chains.AuthorizationRequest(key, digest[:], good, usdcSpend(payTo, 900)))
	if err != nil {
		t.Fatalf("a matching authorization was refused: %v", err)
	}
	sig, err := eip3009.ParseSignature(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := eip3009.Verify(good, sig); err != nil {
		t.Fatalf("the signature does not verify as the agent's: %v", err)
	}
	if len(rec.asked) != 1 || rec.asked[0].Recipient != payTo {
		t.Fatalf("policy asked %+v, want the one spend", rec.asked)
	}

	other := good
	other.To = "0x00000000000000000000000000000000000000e1"
	otherDigest, _ := eip3009.Digest(other)
	more := good
	more.Value = big.NewInt(9_000_000)
	moreDigest, _ := eip3009.Digest(more)
	zen := good
	zen.Asset = "ZEN"
	zenDigest, _ := eip3009.Digest(zen)
	for _, tc := range []struct {
		name string
		req  chains.SignRequest
		want error
	}{
		{"recipient differs", chains.AuthorizationRequest(key, otherDigest[:], other, usdcSpend(payTo, 900)), txcheck.ErrAuthorizationMismatch},
		{"amount differs", chains.AuthorizationRequest(key, moreDigest[:], more, usdcSpend(payTo, 900)), txcheck.ErrAuthorizationMismatch},
		{"asset differs", chains.AuthorizationRequest(key, zenDigest[:], zen, usdcSpend(payTo, 900)), txcheck.ErrAuthorizationMismatch},
		{"payload is another digest", chains.AuthorizationRequest(key, moreDigest[:], good, usdcSpend(payTo, 900)), txcheck.ErrAuthorizationMismatch},
		{"no-value request carrying one", chains.SignRequest{Key: key, Payload: digest[:], NoValue: true, Authorization: &good}, chains.ErrUnlabelled},
		{"spend-less request carrying one", chains.SignRequest{Key: key, Payload: digest[:], Authorization: &good}, chains.ErrUnlabelled},
		{"not an EVM chain", chains.AuthorizationRequest(chains.KeyRef{AgentID: alice, Chain: chains.Solana}, digest[:], good,
			chains.Spend{Key: "k", AgentID: alice, Chain: chains.Solana, Asset: "USDC", Amount: chains.NewAmount(big.NewInt(900), 6), Recipient: payTo}), txcheck.ErrAuthorizationMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.asked)
			_, err := p.Sign(ctx, tc.req)
			if !errors.Is(err, enclave.ErrUnauthorized) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want ErrUnauthorized and %v", err, tc.want)
			}
			if len(rec.asked) != before {
				t.Fatalf("the policy was asked (counted) for a refused authorization")
			}
		})
	}

	// Over the policy: well formed, refused by the owner's rule.
	big1 := authorization(keys.Address, payTo)
	big1.Value = big.NewInt(5_000)
	d, _ := eip3009.Digest(big1)
	if _, err := p.Sign(ctx, chains.AuthorizationRequest(key, d[:], big1, usdcSpend(payTo, 5_000))); !errors.Is(err, enclave.ErrPolicy) {
		t.Fatalf("over the policy: err = %v, want ErrPolicy", err)
	}
}

// TestAuthorizationMalformed: a malformed field is refused, never hashed.
func TestAuthorizationMalformed(t *testing.T) {
	a := authorization("0x00000000000000000000000000000000000000a1", "0xnotanaddress")
	if _, err := eip3009.Digest(a); !errors.Is(err, eip3009.ErrMalformed) || !strings.Contains(err.Error(), "to") {
		t.Fatalf("err = %v", err)
	}
	a = authorization("0x00000000000000000000000000000000000000a1", "0x00000000000000000000000000000000000000b0")
	a.Value = big.NewInt(-1)
	if _, err := eip3009.Digest(a); !errors.Is(err, eip3009.ErrMalformed) {
		t.Fatalf("negative value: err = %v", err)
	}
}
