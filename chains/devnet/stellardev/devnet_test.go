//go:build !nodevnet

package stellardev_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains/devnet/stellardev"
)

func start(t *testing.T, dir string) (*stellardev.Devnet, *horizonclient.Client) {
	t.Helper()
	d, err := stellardev.Start(context.Background(), stellardev.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return d, &horizonclient.Client{HorizonURL: d.URL() + "/"}
}

func key(label string) *keypair.Full {
	k, err := keypair.FromRawSeed(sha256.Sum256([]byte(label)))
	if err != nil {
		panic(err)
	}
	return k
}

type txOpts struct {
	seqDelta int64
	fee      int64
	tb       txnbuild.TimeBounds
	signers  []*keypair.Full
}

// submit builds a transaction of src's account with ops and submits it.
func submit(t *testing.T, hc *horizonclient.Client, src *keypair.Full, o txOpts, ops ...txnbuild.Operation) (hProtocol.Transaction, error) {
	t.Helper()
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: src.Address()})
	if err != nil {
		t.Fatal(err)
	}
	acc.Sequence += o.seqDelta
	if o.fee == 0 {
		o.fee = 100
	}
	if o.tb == (txnbuild.TimeBounds{}) {
		o.tb = txnbuild.NewTimeout(60)
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &acc, IncrementSequenceNum: true,
		Operations: ops, BaseFee: o.fee, Preconditions: txnbuild.Preconditions{TimeBounds: o.tb}})
	if err != nil {
		t.Fatal(err)
	}
	signers := o.signers
	if signers == nil {
		signers = []*keypair.Full{src}
	}
	if tx, err = tx.Sign(stellardev.Passphrase, signers...); err != nil {
		t.Fatal(err)
	}
	env, _ := tx.Base64()
	return hc.SubmitTransactionXDR(env)
}

func codes(t *testing.T, err error) (string, []string) {
	t.Helper()
	var he *horizonclient.Error
	if !errors.As(err, &he) {
		t.Fatalf("not a Horizon error: %v", err)
	}
	rc, rerr := he.ResultCodes()
	if rerr != nil {
		t.Fatalf("no result codes: %v (%+v)", rerr, he.Problem)
	}
	return rc.TransactionCode, rc.OperationCodes
}

func xlm(t *testing.T, hc *horizonclient.Client, id string) string {
	t.Helper()
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: id})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := acc.GetNativeBalance()
	return b
}

// TestRejections: the devnet refuses what stellar-core refuses, with its
// result codes, and charges the fee of a transaction that failed in the
// ledger.
func TestRejections(t *testing.T) {
	d, hc := start(t, t.TempDir())
	defer d.Close()
	a, b, stranger := key("a"), key("b"), key("stranger")
	if _, err := hc.Fund(a.Address()); err != nil {
		t.Fatal(err)
	}
	pay := func(to string, amt string) txnbuild.Operation {
		return &txnbuild.Payment{Destination: to, Amount: amt, Asset: txnbuild.NativeAsset{}}
	}
	cases := []struct {
		name   string
		o      txOpts
		ops    []txnbuild.Operation
		tx     string
		ops0   string
		charge bool
	}{
		{"bad signature", txOpts{signers: []*keypair.Full{stranger}}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "1")}, "tx_bad_auth", "", false},
		{"extra signature", txOpts{signers: []*keypair.Full{a, stranger}}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "1")}, "tx_bad_auth_extra", "", false},
		{"sequence too high", txOpts{seqDelta: 1}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "1")}, "tx_bad_seq", "", false},
		{"sequence used", txOpts{seqDelta: -1}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "1")}, "tx_bad_seq", "", false},
		{"fee below base", txOpts{fee: 50}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "1")}, "tx_insufficient_fee", "", false},
		{"expired", txOpts{tb: txnbuild.NewTimebounds(0, time.Now().Add(-time.Minute).Unix())}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "1")}, "tx_too_late", "", false},
		{"below reserve", txOpts{}, []txnbuild.Operation{&txnbuild.CreateAccount{Destination: b.Address(), Amount: "0.9999999"}}, "tx_failed", "op_low_reserve", true},
		{"underfunded", txOpts{}, []txnbuild.Operation{pay(stellardev.RootKey.Address(), "9999.5")}, "tx_failed", "op_underfunded", true},
		{"no destination", txOpts{}, []txnbuild.Operation{pay(b.Address(), "1")}, "tx_failed", "op_no_destination", true},
		{"no trust", txOpts{}, []txnbuild.Operation{&txnbuild.Payment{Destination: stellardev.RootKey.Address(), Amount: "1",
			Asset: txnbuild.CreditAsset{Code: "USDC", Issuer: stellardev.IssuerKey.Address()}}}, "tx_failed", "op_src_no_trust", true},
		// CAP-33 sponsorship: an end without a begin, a begin never
		// ended, an account created empty without a sponsor.
		{"end not sponsored", txOpts{}, []txnbuild.Operation{&txnbuild.EndSponsoringFutureReserves{}}, "tx_failed", "op_not_sponsored", true},
		{"sponsorship never ended", txOpts{}, []txnbuild.Operation{&txnbuild.BeginSponsoringFutureReserves{SponsoredID: b.Address()}}, "tx_bad_sponsorship", "op_success", true},
		{"empty account unsponsored", txOpts{}, []txnbuild.Operation{&txnbuild.CreateAccount{Destination: b.Address(), Amount: "0"}}, "tx_failed", "op_low_reserve", true},
	}
	for _, c := range cases {
		before := xlm(t, hc, a.Address())
		_, err := submit(t, hc, a, c.o, c.ops...)
		if err == nil {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		tc, oc := codes(t, err)
		if tc != c.tx || c.ops0 != "" && (len(oc) != 1 || oc[0] != c.ops0) {
			t.Errorf("%s: %s %v, want %s %s", c.name, tc, oc, c.tx, c.ops0)
		}
		after := xlm(t, hc, a.Address())
		if charged := before != after; charged != c.charge {
			t.Errorf("%s: balance %s → %s (fee charged: %v, want %v)", c.name, before, after, charged, c.charge)
		}
	}
	// A source account that does not exist.
	if _, err := submit(t, hc, a, txOpts{}, &txnbuild.Payment{Destination: a.Address(), Amount: "1", Asset: txnbuild.NativeAsset{}, SourceAccount: stranger.Address()}); err == nil {
		t.Error("operation with a missing, unsigned source accepted")
	}
	// A success, then the same envelope again: Horizon answers it from
	// the ledger; nothing is applied twice.
	acc, _ := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()})
	tx, _ := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &acc, IncrementSequenceNum: true, BaseFee: 100,
		Operations:    []txnbuild.Operation{&txnbuild.CreateAccount{Destination: b.Address(), Amount: "5"}},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)}})
	tx, _ = tx.Sign(stellardev.Passphrase, a)
	env, _ := tx.Base64()
	r1, err := hc.SubmitTransactionXDR(env)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := hc.SubmitTransactionXDR(env)
	if err != nil || r2.Hash != r1.Hash || r2.Ledger != r1.Ledger {
		t.Fatalf("resubmission: %+v, %v", r2, err)
	}
	if got := xlm(t, hc, b.Address()); got != "5.0000000" {
		t.Fatalf("b holds %s after a resubmitted creation", got)
	}
}

// TestPersists: accounts, sequence numbers and history survive a restart.
func TestPersists(t *testing.T) {
	dir := t.TempDir()
	d, hc := start(t, dir)
	a := key("a")
	if _, err := hc.Fund(a.Address()); err != nil {
		t.Fatal(err)
	}
	r, err := submit(t, hc, a, txOpts{}, &txnbuild.CreateAccount{Destination: key("b").Address(), Amount: "12"})
	if err != nil {
		t.Fatal(err)
	}
	acc1, _ := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, hc = start(t, dir)
	defer d.Close()
	acc2, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()})
	if err != nil {
		t.Fatal(err)
	}
	if acc2.Sequence != acc1.Sequence || xlm(t, hc, a.Address()) != "9987.9999900" { // 10000 − 12 − one fee
		t.Fatalf("after restart: seq %d (was %d), %s XLM", acc2.Sequence, acc1.Sequence, xlm(t, hc, a.Address()))
	}
	if got, err := hc.TransactionDetail(r.Hash); err != nil || got.Ledger != r.Ledger {
		t.Fatalf("transaction after restart: %+v, %v", got, err)
	}
	page, err := hc.Transactions(horizonclient.TransactionRequest{ForAccount: key("b").Address()})
	if err != nil || len(page.Embedded.Records) != 1 || page.Embedded.Records[0].Hash != r.Hash {
		t.Fatalf("history of b after restart: %+v, %v", page.Embedded.Records, err)
	}
	// And it keeps accepting transactions at the next sequence number.
	if _, err := submit(t, hc, a, txOpts{}, &txnbuild.Payment{Destination: key("b").Address(), Amount: "1", Asset: txnbuild.NativeAsset{}}); err != nil {
		t.Fatal(err)
	}
}
