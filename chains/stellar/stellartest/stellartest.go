// Package stellartest holds test helpers for tests that run against a
// Stellar devnet (chains/stellar): a wallet's own transactions, signed
// with its key and sent to Horizon directly, not through the connector
// under test. It is for tests only.
package stellartest

import (
	"context"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains/stellar"
)

// USDC is the devnet's USDC on c (its first configured asset).
func USDC(c *stellar.Connector) txnbuild.CreditAsset {
	return txnbuild.CreditAsset{Code: "USDC", Issuer: c.Config().Assets[0].Issuer}
}

// TrustUSDC funds kp with c's friendbot and has it trust the devnet's
// USDC, claiming the USDC friendbot left it. It fails t when friendbot
// left kp no claimable balance.
func TrustUSDC(ctx context.Context, t testing.TB, c *stellar.Connector, kp *keypair.Full) {
	t.Helper()
	if _, err := c.Fund(ctx, kp.Address()); err != nil {
		t.Fatal(err)
	}
	hc := c.Client()
	cbs, err := hc.ClaimableBalances(horizonclient.ClaimableBalanceRequest{Claimant: kp.Address()})
	if err != nil || len(cbs.Embedded.Records) == 0 {
		t.Fatalf("friendbot's USDC: %v %+v", err, cbs)
	}
	ops := []txnbuild.Operation{&txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: USDC(c)}, Limit: "1000000"}}
	for _, cb := range cbs.Embedded.Records {
		ops = append(ops, &txnbuild.ClaimClaimableBalance{BalanceID: cb.BalanceID})
	}
	Submit(t, hc, c.Config().NetworkPassphrase, kp, ops...)
}

// Pay is a SEP-7 wallet's plain payment of amount asset from kp to dest.
func Pay(t testing.TB, hc *horizonclient.Client, passphrase string, kp *keypair.Full, dest, amount string, asset txnbuild.Asset) {
	t.Helper()
	Submit(t, hc, passphrase, kp, &txnbuild.Payment{Destination: dest, Amount: amount, Asset: asset})
}

// Submit signs ops from kp's account, as a wallet does, and sends them to
// Horizon; it fails t unless Horizon accepts the transaction.
func Submit(t testing.TB, hc *horizonclient.Client, passphrase string, kp *keypair.Full, ops ...txnbuild.Operation) {
	t.Helper()
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: kp.Address()})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &acc, IncrementSequenceNum: true, BaseFee: 100,
		Operations: ops, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)}})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(passphrase, kp); err != nil {
		t.Fatal(err)
	}
	if _, err := hc.SubmitTransactionWithOptions(tx, horizonclient.SubmitTxOpts{SkipMemoRequiredCheck: true}); err != nil {
		t.Fatalf("submit %T…: %v", ops[0], err)
	}
}
