package txcheck_test

import (
	"errors"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave/txcheck"
)

// TestStellarActivation: only the exact sponsored activation of the
// one-time account passes; any other shape is refused.
func TestStellarActivation(t *testing.T) {
	const passphrase = "Veil Stellar Devnet ; 2025"
	s, p, other := keypair.MustRandom().Address(), keypair.MustRandom().Address(), keypair.MustRandom().Address()
	usdc := txnbuild.ChangeTrustAssetWrapper{Asset: txnbuild.CreditAsset{Code: "USDC", Issuer: other}}
	begin := &txnbuild.BeginSponsoringFutureReserves{SponsoredID: p}
	create := &txnbuild.CreateAccount{Destination: p, Amount: "0"}
	trust := &txnbuild.ChangeTrust{Line: usdc, Limit: "1000", SourceAccount: p}
	end := &txnbuild.EndSponsoringFutureReserves{SourceAccount: p}
	key := chains.KeyRef{AgentID: "a", Chain: chains.Stellar, EphemeralPub: make([]byte, 32)}
	req := func(src string, ops ...txnbuild.Operation) chains.SignRequest {
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &txnbuild.SimpleAccount{AccountID: src, Sequence: 1},
			IncrementSequenceNum: true, BaseFee: 100, Operations: ops, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewInfiniteTimeout()}})
		if err != nil {
			t.Fatal(err)
		}
		h, _ := tx.Hash(passphrase)
		raw, _ := tx.MarshalBinary()
		return chains.NoValueRequest(key, h[:], raw, passphrase)
	}
	for _, tc := range []struct {
		name string
		req  chains.SignRequest
		ok   bool
	}{
		{"XLM activation", req(s, begin, create, end), true},
		{"USDC activation", req(s, begin, create, trust, end), true},
		{"P is the transaction's source (it would pay the fee)", req(p, &txnbuild.BeginSponsoringFutureReserves{SponsoredID: p, SourceAccount: s}, &txnbuild.CreateAccount{Destination: p, Amount: "0", SourceAccount: s}, end), false},
		{"a starting balance", req(s, begin, &txnbuild.CreateAccount{Destination: p, Amount: "1"}, end), false},
		{"another account created", req(s, begin, &txnbuild.CreateAccount{Destination: other, Amount: "0"}, end), false},
		{"P pays", req(s, begin, create, &txnbuild.Payment{Destination: s, Amount: "1", Asset: txnbuild.NativeAsset{}, SourceAccount: p}, end), false},
		{"P merges", req(s, begin, create, &txnbuild.AccountMerge{Destination: s, SourceAccount: p}, end), false},
		{"no end", req(s, begin, create, trust), false},
		{"trust by the sponsor", req(s, begin, create, &txnbuild.ChangeTrust{Line: usdc, Limit: "1000"}, end), false},
	} {
		_, err := txcheck.StellarActivation(tc.req)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, txcheck.ErrNotActivation) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if nv := txcheck.NoValue(tc.req); (nv == nil) != tc.ok {
			t.Errorf("%s: NoValue: %v", tc.name, nv)
		}
	}
	// Another payload than the envelope's hash.
	r := req(s, begin, create, end)
	r.Payload = make([]byte, 32)
	if _, err := txcheck.StellarActivation(r); err == nil {
		t.Error("a payload that is not the envelope's hash passed")
	}
	// The account key (no one-time key) never signs it without a spend.
	r = req(s, begin, create, end)
	r.Key.EphemeralPub = nil
	if txcheck.NoValue(r) == nil {
		t.Error("an account key's no-value request passed an activation")
	}
}
