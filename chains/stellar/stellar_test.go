//go:build !nodevnet

package stellar_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
)

type env struct {
	t     testing.TB
	dir   string
	dev   *stellardev.Devnet
	store persistence.Store
	enc   *software.Provider
	conn  *stellar.Connector
	fp    failpoint.Hook
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	var root [32]byte
	_, _ = rand.Read(root[:])
	enc, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	e.enc = enc
	e.startDevnet()
	s, err := persistence.OpenBolt(filepath.Join(e.dir, "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.store = s
	e.conn = e.connect()
	t.Cleanup(func() {
		e.dev.Close()
		e.store.Close()
	})
	return e
}

func (e *env) startDevnet() {
	dev, err := stellardev.Start(context.Background(), stellardev.Options{Dir: e.dir})
	if err != nil {
		e.t.Fatal(err)
	}
	e.dev = dev
}

func (e *env) connect() *stellar.Connector {
	c, err := stellar.New(context.Background(), e.dev.Config(), stellar.Options{
		Store: e.store, Signer: e.enc,
		Failpoint: func(p string) error { return e.fp.Hit(p) },
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

type agent struct {
	id   string
	keys enclave.PublicKeys
	ref  chains.KeyRef
}

func (e *env) agent(id string, fund bool) agent {
	e.t.Helper()
	k, err := e.enc.DeriveKeys(context.Background(), id, chains.Stellar, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	a := agent{id: id, keys: k, ref: chains.KeyRef{AgentID: id, Chain: chains.Stellar}}
	if fund {
		if _, err := e.conn.Fund(context.Background(), k.Address); err != nil {
			e.t.Fatal(err)
		}
	}
	return a
}

// find scans everything and returns the announcements that pay a.
func (e *env) find(a agent, cursor string) ([]chains.Announcement, string) {
	e.t.Helper()
	anns, next, err := e.conn.Scan(context.Background(), cursor, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	sk, err := e.enc.ScanKeys(context.Background(), a.id, chains.Stellar, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var mine []chains.Announcement
	for _, an := range anns {
		d, err := edstealth.DecodeAnnouncement(mustPub(e.t, an.StealthAddress), append([]byte{an.ViewTag}, an.EphemeralPubKey...))
		if err != nil {
			e.t.Fatal(err)
		}
		var spend [32]byte
		copy(spend[:], sk.SpendingPublicKey)
		if ok, _ := edstealth.Check(sk.ViewingPrivateKey, spend, d); ok {
			mine = append(mine, an)
		}
	}
	return mine, next
}

func mustPub(t testing.TB, addr string) []byte {
	p, err := edstealth.ParseStellarAddress(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p[:]
}

func bal(t testing.TB, c chains.Connector, addr string) chains.Balance {
	t.Helper()
	b, err := c.Balance(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var bg = context.Background()

func TestStellarStory(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", true)

	if b := bal(t, e.conn, alice.keys.Address); b.Native != "10000" || b.Tokens["USDC"] != "10000" {
		t.Fatalf("funded balance %+v", b)
	}
	_, head, err := e.conn.ScanTransfers(bg, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Names.
	if _, err := e.conn.RegisterName(bg, bob.ref, bob.keys.Address, "bob.veil", bob.keys.MetaAddress); err != nil {
		t.Fatal(err)
	}
	meta, err := e.conn.ResolveName(bg, "Bob")
	if err != nil || meta != bob.keys.MetaAddress {
		t.Fatalf("resolve bob = %q, %v", meta, err)
	}
	if _, err := e.conn.RegisterName(bg, alice.ref, alice.keys.Address, "bob", alice.keys.MetaAddress); !errors.Is(err, chains.ErrNameTaken) {
		t.Fatalf("register taken name: %v", err)
	}
	if _, err := e.conn.ResolveName(bg, "nobody"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("resolve unknown: %v", err)
	}

	// Alice pays Bob 25 XLM and 12.5 USDC.
	r1, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("25"), To: meta, IdempotencyKey: "pay-1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("25"), To: meta, IdempotencyKey: "pay-1"})
	if err != nil || again.TxHash != r1.TxHash {
		t.Fatalf("retry: %+v %v, first %s", again, err, r1.TxHash)
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "XLM"), Amount: amt("26"), To: meta, IdempotencyKey: "pay-1"}); !errors.Is(err, chains.ErrIdempotencyConflict) {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "USDC"), Amount: amt("12.5"), To: meta, IdempotencyKey: "pay-2"}); err != nil {
		t.Fatal(err)
	}
	mine, cursor := e.find(bob, "")
	if len(mine) != 2 || mine[0].Amount != "25" || mine[0].Asset != "XLM" || mine[1].Amount != "12.5" || mine[1].Asset != "USDC" {
		t.Fatalf("bob's announcements: %+v", mine)
	}
	tr, err := e.conn.TransfersIn(bg, mine[1].TxHash)
	if err != nil || !hasTransfer(tr, mine[1].StealthAddress, "USDC", "12.5") || !hasTransfer(tr, mine[1].StealthAddress, "XLM", "2") {
		t.Fatalf("TransfersIn(USDC payment) = %+v, %v", tr, err)
	}
	if _, err := e.conn.TransfersIn(bg, strings.Repeat("ab", 32)); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("TransfersIn(unknown) = %v", err)
	}
	// AnnouncementsIn reads a payment's announcement as Scan does (the
	// payee's instant notify relies on it).
	for _, m := range mine {
		in, err := e.conn.AnnouncementsIn(bg, m.TxHash)
		if err != nil || len(in) != 1 || in[0].StealthAddress != m.StealthAddress || !bytes.Equal(in[0].EphemeralPubKey, m.EphemeralPubKey) ||
			in[0].ViewTag != m.ViewTag || in[0].Asset != m.Asset || in[0].Amount != m.Amount || in[0].TxHash != m.TxHash {
			t.Fatalf("AnnouncementsIn(%s) = %+v %v, scanned %+v", m.TxHash, in, err, m)
		}
	}
	if _, err := e.conn.AnnouncementsIn(bg, strings.Repeat("ab", 32)); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("AnnouncementsIn(unknown) = %v", err)
	}
	if others, _ := e.find(alice, ""); len(others) != 0 {
		t.Fatalf("alice found %d payments", len(others))
	}
	if more, _ := e.find(bob, cursor); len(more) != 0 {
		t.Fatalf("scan from the cursor found %d again", len(more))
	}

	// Bob withdraws the USDC, then the XLM, to his account.
	usdc := mine[1]
	ref := bob.ref
	ref.EphemeralPub = usdc.EphemeralPubKey
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: usdc.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "XLM"), All: true, IdempotencyKey: "w-0"}); !errors.Is(err, chains.ErrInvalidAmount) {
		t.Fatalf("closing a one-time account that still holds USDC: %v", err)
	}
	if b := bal(t, e.conn, usdc.StealthAddress); b.Tokens["USDC"] != "12.5" || b.Native != "2" {
		t.Fatalf("one-time balance %+v", b)
	}
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: usdc.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "USDC"), All: true, IdempotencyKey: "w-1"}); !errors.Is(err, chains.ErrInvalidAddress) {
		t.Fatalf("withdraw USDC to an account without trustline: %v", err)
	}
	// Bob's account gets its trustline (and claims friendbot's USDC) with
	// a payment of his own.
	if _, err := e.conn.SendStealth(bg, bob.ref, bob.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "USDC"), Amount: amt("1"), To: alice.keys.MetaAddress, IdempotencyKey: "bob-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: usdc.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "USDC"), All: true, IdempotencyKey: "w-2"}); err != nil {
		t.Fatal(err)
	}
	if b := bal(t, e.conn, bob.keys.Address); b.Tokens["USDC"] != "10011.5" {
		t.Fatalf("bob after USDC withdrawal: %+v", b)
	}
	if b := bal(t, e.conn, usdc.StealthAddress); b.Native != "0" || b.Tokens["USDC"] != "0" {
		t.Fatalf("one-time account after withdrawal: %+v", b)
	}
	xlm := mine[0]
	ref.EphemeralPub = xlm.EphemeralPubKey
	before := bal(t, e.conn, bob.keys.Address)
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: xlm.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "XLM"), All: true, IdempotencyKey: "w-3"}); err != nil {
		t.Fatal(err)
	}
	after := bal(t, e.conn, bob.keys.Address)
	if d := sub(after.Native, before.Native); d != "24.99999" { // 25 less one operation's fee (100 stroops)
		t.Fatalf("withdrawal brought %s XLM", d)
	}
	if b := bal(t, e.conn, xlm.StealthAddress); b.Native != "0" {
		t.Fatalf("merged one-time account: %+v", b)
	}
	// Every transfer since the head: the payments, the merges into bob's
	// account, nothing from before.
	tr, _, err = e.conn.ScanTransfers(bg, head, 0)
	if err != nil || !hasTransfer(tr, xlm.StealthAddress, "XLM", "25") || !hasTransfer(tr, bob.keys.Address, "XLM", "24.99999") ||
		hasTransfer(tr, alice.keys.Address, "XLM", "10000") {
		t.Fatalf("ScanTransfers = %+v, %v", tr, err)
	}
}

func sub(a, b string) string {
	x, _ := chains.ParseAmount(a, 7)
	y, _ := chains.ParseAmount(b, 7)
	return chains.FormatAmount(x.Sub(x, y), 7)
}

var _ = time.Second

func hasTransfer(tr []chains.Transfer, to, asset, amount string) bool {
	for _, t := range tr {
		if t.To == to && t.Asset == asset && t.Amount == amount {
			return true
		}
	}
	return false
}

// amt is a test amount in whole units, parsed with 18 decimals: the
// connector rescales it exactly to its asset's decimals, or refuses it.
func amt(s string) chains.Amount {
	a, err := chains.ParseAmountOf(s, 18)
	if err != nil {
		panic(err)
	}
	return a
}
