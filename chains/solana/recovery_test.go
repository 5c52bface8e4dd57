//go:build !nodevnet

package solana_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	solanago "github.com/gagliardetto/solana-go"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/solana"
)

// TestExpiredBlockhashRebuilt: the blockhash of the signed transaction
// expires before it is sent (the node answers BlockhashNotFound); the
// connector rebuilds with a fresh blockhash, re-signs, and the payment
// happens once.
func TestExpiredBlockhashRebuilt(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	var once sync.Once
	expired := false
	e.fp = func(p string) error {
		if p == solana.FailAfterSign {
			once.Do(func() {
				if err := e.dev.ExpireBlockhashes(bg); err != nil {
					t.Error(err)
				}
				expired = true
			})
		}
		return nil
	}
	before := bal(t, e.conn, alice.keys.Address)
	r, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.25"), To: bob.keys.MetaAddress, IdempotencyKey: "expired-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !expired {
		t.Fatal("the failpoint did not run")
	}
	e.fp = nil
	mine, _ := e.find(bob, "")
	if len(mine) != 1 || mine[0].Amount != "0.25" || mine[0].TxHash != r.TxHash {
		t.Fatalf("announcements: %+v (result %s)", mine, r.TxHash)
	}
	if b := bal(t, e.conn, mine[0].StealthAddress); b.Native != "0.25" {
		t.Fatalf("one-time address holds %s", b.Native)
	}
	after := bal(t, e.conn, alice.keys.Address)
	if d := sub(before.Native, after.Native, 9); d != "0.250005" { // one fee
		t.Fatalf("alice spent %s", d)
	}
	again, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.25"), To: bob.keys.MetaAddress, IdempotencyKey: "expired-1"})
	if err != nil || again.TxHash != r.TxHash {
		t.Fatalf("retry: %+v, %v", again, err)
	}
}

// TestCrashThenRetry: the process dies at each step of a send; a new
// connector on the same store retries the key (for a persisted attempt
// after its blockhash expired too) and the payment happens once per key.
func TestCrashThenRetry(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	crash := errors.New("crash")
	steps := []struct {
		fp     string
		expire bool
	}{{solana.FailAfterSign, false}, {solana.FailBeforeSend, false}, {solana.FailBeforeSend, true}, {solana.FailAfterSend, false}, {solana.FailAfterSend, true}}
	for i, s := range steps {
		key := "crash-" + string(s.fp) + map[bool]string{true: "-expired"}[s.expire]
		e.fp = func(p string) error {
			if p == s.fp {
				return crash
			}
			return nil
		}
		if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.01"), To: bob.keys.MetaAddress, IdempotencyKey: key}); !errors.Is(err, crashAnswer(s.fp, crash)) {
			t.Fatalf("step %d: %v", i, err)
		}
		e.fp = nil
		if s.expire {
			if err := e.dev.ExpireBlockhashes(bg); err != nil {
				t.Fatal(err)
			}
		}
		c2 := e.connect()
		if _, err := c2.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(c2, "SOL"), Amount: amt("0.01"), To: bob.keys.MetaAddress, IdempotencyKey: key}); err != nil {
			t.Fatalf("step %d: retry: %v", i, err)
		}
	}
	mine, _ := e.find(bob, "")
	if len(mine) != len(steps) {
		t.Fatalf("%d payments for %d keys", len(mine), len(steps))
	}
}

// TestSendErrors: what the cluster rejects comes back as Veil's errors.
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
		{"below rent-exempt minimum", alice, bob.keys.MetaAddress, "0.0001", "SOL", chains.ErrInvalidAmount},
		{"insufficient", alice, bob.keys.MetaAddress, "11", "SOL", chains.ErrInsufficientFunds},
		{"no account", poor, bob.keys.MetaAddress, "1", "SOL", chains.ErrInsufficientFunds},
		{"token insufficient", alice, bob.keys.MetaAddress, "10001", "USDC", chains.ErrInsufficientFunds},
		{"unknown asset", alice, bob.keys.MetaAddress, "1", "EURC", chains.ErrUnknownAsset},
		{"bad amount", alice, bob.keys.MetaAddress, "0.0000000001", "SOL", chains.ErrInvalidAmount},
		{"stellar meta", alice, "st:xlm:" + bob.keys.MetaAddress[7:], "1", "SOL", chains.ErrInvalidAddress},
	}
	for _, c := range cases {
		_, err := e.conn.SendStealth(bg, c.from.ref, c.from.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, c.asset), Amount: amt(c.amt), To: c.meta, IdempotencyKey: "err-" + c.name})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.001"), To: bob.keys.MetaAddress, IdempotencyKey: "err-below rent-exempt minimum"}); err != nil {
		t.Fatalf("reuse of a rejected key: %v", err)
	}
	mine, _ := e.find(bob, "")
	ref := alice.ref
	ref.EphemeralPub = mine[0].EphemeralPubKey
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: mine[0].StealthAddress, To: alice.keys.Address, Asset: chainstest.Asset(e.conn, "SOL"), All: true, IdempotencyKey: "steal"}); err == nil {
		t.Fatal("withdrawal with the wrong key succeeded")
	}
	// Withdrawing part of a one-time balance must leave it rent-exempt or empty.
	ref.EphemeralPub = mine[0].EphemeralPubKey
	ref.AgentID = bob.id
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: mine[0].StealthAddress, To: alice.keys.Address, Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.0005"), IdempotencyKey: "dust"}); !errors.Is(err, chains.ErrInvalidAmount) {
		t.Fatalf("withdrawal leaving dust: %v", err)
	}
	_ = solanago.PublicKey{}
}

// TestMaintainSettles: after a crash past submission, the restart pass of
// the chain actor marks the intent done without a retry of the caller.
func TestMaintainSettles(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", false)
	e.fp = func(p string) error {
		if p == solana.FailAfterSend {
			return errors.New("crash")
		}
		return nil
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("0.002"), To: bob.keys.MetaAddress, IdempotencyKey: "m-1"}); err == nil {
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
	r, err := e.store.Get(bg, solana.TableIntents, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(r.Value)
}

// crashAnswer is what a call that stops at failpoint fp answers: before
// its intent is recorded (the failpoint after signing), the failpoint's
// own error; after, an unknown outcome.
func crashAnswer(fp string, crash error) error {
	if fp == solana.FailAfterSign {
		return crash
	}
	return chains.ErrOutcomeUnknown
}
