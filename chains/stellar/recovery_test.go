//go:build !nodevnet

package stellar_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/stellar"
)

// bumpFrom submits a transaction from a's account outside the connector
// (another client of the same account): it consumes a sequence number.
func (e *env) bumpFrom(a agent) {
	e.t.Helper()
	hc := e.conn.Client()
	acc, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.keys.Address})
	if err != nil {
		e.t.Fatal(err)
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &acc, IncrementSequenceNum: true, BaseFee: 100,
		Operations:    []txnbuild.Operation{&txnbuild.BumpSequence{BumpTo: 0}},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	h, _ := tx.Hash(stellardev.Passphrase)
	unsigned, err := tx.MarshalBinary()
	if err != nil {
		e.t.Fatal(err)
	}
	sig, err := e.enc.Sign(bg, chains.NoValueRequest(a.ref, h[:], unsigned, stellardev.Passphrase))
	if err != nil {
		e.t.Fatal(err)
	}
	pub, _ := strkey.Decode(strkey.VersionByteAccountID, a.keys.Address)
	var hint [4]byte
	copy(hint[:], pub[28:])
	tx, _ = tx.AddSignatureDecorated(xdr.DecoratedSignature{Hint: hint, Signature: sig})
	env, _ := tx.Base64()
	if _, err := hc.SubmitTransactionXDR(env); err != nil {
		e.t.Fatal(err)
	}
}

// TestBadSeqRebuilt: another transaction of the sender lands between the
// connector's sequence read and its submission; Horizon answers tx_bad_seq
// and the connector rebuilds and re-signs, and the payment happens once.
func TestBadSeqRebuilt(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	var once sync.Once
	bumped := false
	e.fp = func(p string) error {
		if p == stellar.FailAfterSign {
			once.Do(func() { e.bumpFrom(alice); bumped = true })
		}
		return nil
	}
	before := bal(t, e.conn, alice.keys.Address)
	r, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("7"), To: bob.keys.MetaAddress, IdempotencyKey: "badseq-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !bumped {
		t.Fatal("the failpoint did not run")
	}
	e.fp = nil
	mine, _ := e.find(bob, "")
	if len(mine) != 1 || mine[0].Amount != "7" || mine[0].TxHash != r.TxHash {
		t.Fatalf("announcements: %+v (result %s)", mine, r.TxHash)
	}
	if b := bal(t, e.conn, mine[0].StealthAddress); b.Native != "7" {
		t.Fatalf("one-time account holds %s", b.Native)
	}
	// 7 XLM, the send's 4 operations and the bump's 1, 1 stroop to the
	// announcement account.
	after := bal(t, e.conn, alice.keys.Address)
	if d := sub(before.Native, after.Native); d != "7.0000501" {
		t.Fatalf("alice spent %s", d)
	}
	// A retry with the key answers the rebuilt transaction.
	again, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("7"), To: bob.keys.MetaAddress, IdempotencyKey: "badseq-1"})
	if err != nil || again.TxHash != r.TxHash {
		t.Fatalf("retry: %+v, %v", again, err)
	}
}

// TestCrashAfterSubmit: the process dies after Horizon accepted the
// transaction; the retry with the same key finds it and pays nothing more.
func TestCrashAfterSubmit(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	crash := errors.New("crash")
	for _, fp := range []string{stellar.FailAfterSign, stellar.FailBeforeSubmit, stellar.FailAfterSubmit} {
		key := "crash-" + string(fp)
		e.fp = func(p string) error {
			if p == fp {
				return crash
			}
			return nil
		}
		if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("3"), To: bob.keys.MetaAddress, IdempotencyKey: key}); !errors.Is(err, crashAnswer(fp, stellar.FailAfterSign, crash)) {
			t.Fatalf("%s: %v", fp, err)
		}
		e.fp = nil
		// A new process (new connector, same store) retries.
		c2 := e.connect()
		if _, err := c2.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(c2, "XLM"), Amount: amt("3"), To: bob.keys.MetaAddress, IdempotencyKey: key}); err != nil {
			t.Fatalf("%s: retry: %v", fp, err)
		}
	}
	mine, _ := e.find(bob, "")
	if len(mine) != 3 {
		t.Fatalf("%d payments for 3 keys", len(mine))
	}
}

// TestSendErrors: what the network rejects comes back as Veil's errors.
func TestSendErrors(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	poor := e.agent("00000000-0000-0000-0000-00000000000c", false)
	cases := []struct {
		name      string
		from      agent
		meta, amt string
		asset     string
		want      error
	}{
		{"below reserve", alice, bob.keys.MetaAddress, "0.5", "XLM", chains.ErrInvalidAmount},
		{"underfunded", alice, bob.keys.MetaAddress, "20000", "XLM", chains.ErrInsufficientFunds},
		{"no account", poor, bob.keys.MetaAddress, "1", "XLM", chains.ErrInsufficientFunds},
		{"token underfunded", alice, bob.keys.MetaAddress, "10001", "USDC", chains.ErrInsufficientFunds},
		{"unknown asset", alice, bob.keys.MetaAddress, "1", "EURC", chains.ErrUnknownAsset},
		{"bad amount", alice, bob.keys.MetaAddress, "1.00000001", "XLM", chains.ErrInvalidAmount},
		{"solana meta", alice, "st:sol:" + bob.keys.MetaAddress[7:], "1", "XLM", chains.ErrInvalidAddress},
	}
	for _, c := range cases {
		_, err := e.conn.SendStealth(bg, c.from.ref, c.from.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, c.asset), Amount: amt(c.amt), To: c.meta, IdempotencyKey: "err-" + c.name})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A rejected key can be used again once the cause is fixed.
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("1"), To: bob.keys.MetaAddress, IdempotencyKey: "err-below reserve"}); err != nil {
		t.Fatalf("reuse of a rejected key: %v", err)
	}
	// Withdrawing with another agent's key is refused before submission.
	mine, _ := e.find(bob, "")
	ref := alice.ref
	ref.EphemeralPub = mine[0].EphemeralPubKey
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: mine[0].StealthAddress, To: alice.keys.Address, Asset: chainstest.Asset(e.conn, "XLM"), All: true, IdempotencyKey: "steal"}); err == nil {
		t.Fatal("withdrawal with the wrong key succeeded")
	}
}

// TestMaintainSettles: after a crash past submission, the restart pass of
// the chain actor marks the intent done without a retry of the caller.
func TestMaintainSettles(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	e.fp = func(p string) error {
		if p == stellar.FailAfterSubmit {
			return errors.New("crash")
		}
		return nil
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("2"), To: bob.keys.MetaAddress, IdempotencyKey: "m-1"}); err == nil {
		t.Fatal("no crash")
	}
	e.fp = nil
	if !strings.Contains(intentState(t, e, "m-1"), `"state":"pending"`) {
		t.Fatal("intent not pending after the crash")
	}
	if err := e.connect().Maintain(bg, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(intentState(t, e, "m-1"), `"state":"done"`) {
		t.Fatalf("intent after Maintain: %s", intentState(t, e, "m-1"))
	}
}

func intentState(t *testing.T, e *env, key string) string {
	r, err := e.store.Get(bg, stellar.TableIntents, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(r.Value)
}

// crashAnswer is what a call that stops at failpoint fp answers: before
// its intent is recorded (at or before recorded, the failpoint after
// signing), the failpoint's own error; after, an unknown outcome.
func crashAnswer(fp, afterSign string, crash error) error {
	if fp == afterSign {
		return crash
	}
	return chains.ErrOutcomeUnknown
}
