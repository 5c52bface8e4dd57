//go:build !nodevnet

package stellar_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stellar"
)

// oneTime derives a fresh one-time address of a (an invoice's) and the
// KeyRef that signs for it.
func oneTime(t *testing.T, a agent) (string, chains.KeyRef) {
	t.Helper()
	ma, err := edstealth.ParseMetaAddressFor(edstealth.Stellar, a.keys.MetaAddress)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := edstealth.Generate(ma, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ref := a.ref
	ref.EphemeralPub = ann.EphemeralPub[:]
	return edstealth.Address(edstealth.Stellar, ann.OneTimePub), ref
}

// walletPay pays dest amount of asset with a plain payment operation,
// signed by kp, as a SEP-7 wallet that only sends payment does.
func walletPay(t *testing.T, hc *horizonclient.Client, passphrase string, kp *keypair.Full, dest, amount string, asset txnbuild.Asset) error {
	t.Helper()
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: kp.Address()})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &acc, IncrementSequenceNum: true, BaseFee: 100,
		Operations:    []txnbuild.Operation{&txnbuild.Payment{Destination: dest, Amount: amount, Asset: asset}},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)}})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(passphrase, kp); err != nil {
		t.Fatal(err)
	}
	_, err = hc.SubmitTransactionWithOptions(tx, horizonclient.SubmitTxOpts{SkipMemoRequiredCheck: true})
	return err
}

// TestSponsoredDestinations: the sponsor activates an invoice's one-time
// account (CAP-33) so that a wallet's plain payment reaches it, in XLM
// and in USDC; the enclave signs the activation with the one-time key
// only; the withdrawal (fee paid by the sponsor) closes the account and
// the sponsor's reserve comes back.
func TestSponsoredDestinations(t *testing.T) {
	bg := context.Background()
	e := newEnv(t)
	alice := e.agent("alice", false)
	bob := e.agent("bob", true)
	cfg := e.conn.Config()
	hc := e.conn.Client()
	usdc := txnbuild.CreditAsset{Code: "USDC", Issuer: cfg.Assets[0].Issuer}

	p0, ref0 := oneTime(t, alice)
	if _, err := e.conn.PrepareDestination(bg, ref0, p0, "USDC", "act-0"); !errors.Is(err, chains.ErrUnavailable) {
		t.Fatalf("activation without a sponsor: %v", err)
	}
	var seed [32]byte
	seed[0] = 7
	sp := stellar.KeySponsor(seed)
	e.conn.SetSponsor(sp)
	if _, err := e.conn.Fund(bg, sp.Address()); err != nil {
		t.Fatal(err)
	}
	sponsorXLM := func() string { return bal(t, e.conn, sp.Address()).Native }
	before := sponsorXLM()

	wallet := keypair.MustRandom()
	if _, err := e.conn.Fund(bg, wallet.Address()); err != nil {
		t.Fatal(err)
	}
	// The wallet claims friendbot's USDC (a trustline and the claim).
	claimFriendbotUSDC(t, e, wallet, usdc)

	// Another agent's one-time key cannot sign alice's activation, nor can
	// alice's account key (it would be its consent to sponsor).
	pA, refA := oneTime(t, alice)
	wrong := bob.ref
	wrong.EphemeralPub = refA.EphemeralPub
	if _, err := e.conn.PrepareDestination(bg, wrong, pA, "USDC", "act-wrong"); err == nil {
		t.Fatal("bob's one-time key signed the activation of alice's address")
	}
	if _, err := e.conn.PrepareDestination(bg, alice.ref, pA, "USDC", "act-account-key"); err == nil {
		t.Fatal("activation without a one-time key")
	}

	for _, tc := range []struct {
		asset  string
		amount string
		pay    txnbuild.Asset
	}{
		{"USDC", "2.5", usdc},
		{"XLM", "0.25", txnbuild.NativeAsset{}}, // below the 1 XLM an unsponsored account needs
	} {
		p, ref := oneTime(t, alice)
		if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, p, tc.amount, tc.pay); err == nil || !strings.Contains(fmt.Sprint(resultCodes(err)), "op_no_destination") {
			t.Fatalf("%s: a plain payment to an account that does not exist: %v %v", tc.asset, err, resultCodes(err))
		}
		key := "act-" + tc.asset
		res, err := e.conn.PrepareDestination(bg, ref, p, tc.asset, key)
		if err != nil {
			t.Fatalf("activate for %s: %v", tc.asset, err)
		}
		again, err := e.conn.PrepareDestination(bg, ref, p, tc.asset, key)
		if err != nil || again.TxHash != res.TxHash {
			t.Fatalf("activation retried: %v %+v, first %+v", err, again, res)
		}
		acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: p})
		if err != nil {
			t.Fatal(err)
		}
		if acc.Sponsor != sp.Address() || bal(t, e.conn, p).Native != "0" {
			t.Fatalf("%s: activated account %+v", tc.asset, acc)
		}
		if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, p, tc.amount, tc.pay); err != nil {
			t.Fatalf("%s: plain payment to the activated account: %v", tc.asset, err)
		}
		b := bal(t, e.conn, p)
		got := b.Native
		if tc.asset != "XLM" {
			got = b.Tokens[tc.asset]
		}
		if got != tc.amount {
			t.Fatalf("%s: the one-time account holds %+v", tc.asset, b)
		}
		// The withdrawal of everything: the sponsor pays the fee, the
		// account closes, the sponsor's reserve comes back.
		// To the wallet, which trusts USDC.
		destBefore := bal(t, e.conn, wallet.Address())
		if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: p, To: wallet.Address(), Asset: chainstest.Asset(e.conn, tc.asset), All: true, IdempotencyKey: "w-" + tc.asset}); err != nil {
			t.Fatalf("%s: withdraw: %v", tc.asset, err)
		}
		if _, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: p}); !horizonclient.IsNotFoundError(err) {
			t.Fatalf("%s: the one-time account is still open: %v", tc.asset, err)
		}
		destAfter := bal(t, e.conn, wallet.Address())
		if tc.asset == "USDC" && sub(destAfter.Tokens["USDC"], destBefore.Tokens["USDC"]) != "2.5" ||
			tc.asset == "XLM" && sub(destAfter.Native, destBefore.Native) != "0.25" {
			t.Fatalf("%s: the destination got %+v (had %+v)", tc.asset, destAfter, destBefore)
		}
	}
	// The sponsor paid only fees: its locked reserves came back. Fees:
	// activations (4 + 3 operations), withdrawals (3 + 1), 100 stroops each.
	if got, want := sub(before, sponsorXLM()), "0.00011"; got != want {
		t.Fatalf("the sponsor spent %s XLM, want %s (fees only)", got, want)
	}
	sa, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: sp.Address()})
	if err != nil || sa.NumSponsoring != 0 {
		t.Fatalf("the sponsor still sponsors %d entries: %v", sa.NumSponsoring, err)
	}
}

// claimFriendbotUSDC gives the wallet a USDC trustline and claims the
// USDC friendbot left it as a claimable balance.
func claimFriendbotUSDC(t *testing.T, e *env, kp *keypair.Full, usdc txnbuild.CreditAsset) {
	t.Helper()
	hc := e.conn.Client()
	cbs, err := hc.ClaimableBalances(horizonclient.ClaimableBalanceRequest{Claimant: kp.Address()})
	if err != nil || len(cbs.Embedded.Records) == 0 {
		t.Fatalf("friendbot's USDC: %v %+v", err, cbs)
	}
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: kp.Address()})
	if err != nil {
		t.Fatal(err)
	}
	ops := []txnbuild.Operation{&txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: usdc}, Limit: "1000000"}}
	for _, cb := range cbs.Embedded.Records {
		ops = append(ops, &txnbuild.ClaimClaimableBalance{BalanceID: cb.BalanceID})
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &acc, IncrementSequenceNum: true, BaseFee: 100,
		Operations: ops, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)}})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(e.conn.Config().NetworkPassphrase, kp); err != nil {
		t.Fatal(err)
	}
	if _, err := hc.SubmitTransactionWithOptions(tx, horizonclient.SubmitTxOpts{SkipMemoRequiredCheck: true}); err != nil {
		t.Fatal(err)
	}
}

// resultCodes are Horizon's result codes of a refused submission.
func resultCodes(err error) []string {
	var he *horizonclient.Error
	if !errors.As(err, &he) {
		return nil
	}
	rc, rerr := he.ResultCodes()
	if rerr != nil || rc == nil {
		return nil
	}
	return append([]string{rc.TransactionCode}, rc.OperationCodes...)
}

// TestRelayerSponsor: the server's relayer (its key in the enclave,
// chains.RelayerUser) is the sponsor: it activates a USDC invoice's
// account, a wallet's plain payment reaches it, and the withdrawal it pays
// the fee of gives its reserves back; what it signed were its own spends.
func TestRelayerSponsor(t *testing.T) {
	bg := context.Background()
	e := newEnv(t)
	alice := e.agent("alice", false)
	cfg := e.conn.Config()
	hc := e.conn.Client()
	usdc := txnbuild.CreditAsset{Code: "USDC", Issuer: cfg.Assets[0].Issuer}
	pub, err := e.enc.DeriveKeys(bg, chains.RelayerID, chains.Stellar, 0)
	if err != nil {
		t.Fatal(err)
	}
	var paid int64
	e.conn.UseRelayer(&chains.Relayer{Chain: chains.Stellar, Key: chains.RelayerKey(chains.Stellar), Address: pub.Address,
		Spent: func(v *big.Int) { paid += v.Int64() }})
	if _, err := e.conn.Fund(bg, pub.Address); err != nil {
		t.Fatal(err)
	}
	wallet := keypair.MustRandom()
	if _, err := e.conn.Fund(bg, wallet.Address()); err != nil {
		t.Fatal(err)
	}
	claimFriendbotUSDC(t, e, wallet, usdc)
	before := bal(t, e.conn, pub.Address).Native
	p, ref := oneTime(t, alice)
	if _, err := e.conn.PrepareDestination(bg, ref, p, "USDC", "act-r"); err != nil {
		t.Fatalf("activation by the relayer: %v", err)
	}
	if err := walletPay(t, hc, cfg.NetworkPassphrase, wallet, p, "3", usdc); err != nil {
		t.Fatalf("plain payment: %v", err)
	}
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: p, To: wallet.Address(), Asset: chainstest.Asset(e.conn, "USDC"), All: true, IdempotencyKey: "w-r"}); err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	if got := sub(before, bal(t, e.conn, pub.Address).Native); got != "0.00007" || paid != 700 {
		t.Fatalf("the relayer spent %s XLM (reported %d stroops), want fees only (0.00007)", got, paid)
	}
}
