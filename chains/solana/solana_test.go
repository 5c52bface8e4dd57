//go:build !nodevnet

package solana_test

import (
	"context"
	"crypto/rand"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
)

type env struct {
	t     testing.TB
	dir   string
	dev   *solanadev.Devnet
	store persistence.Store
	enc   *software.Provider
	conn  *solana.Connector
	fp    failpoint.Hook
	// now is the devnet's clock (nil: the wall clock), kept for restarts.
	now func() time.Time
}

func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvAt(t, nil)
}

// newEnvAt is newEnv with the devnet on the clock now.
func newEnvAt(t testing.TB, now func() time.Time) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), now: now}
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
	dev, err := solanadev.Start(context.Background(), solanadev.Options{Dir: e.dir, Now: e.now})
	if err != nil {
		e.t.Fatal(err)
	}
	e.dev = dev
}

func (e *env) connect() *solana.Connector {
	c, err := solana.New(context.Background(), e.dev.Config(), solana.Options{
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
	k, err := e.enc.DeriveKeys(context.Background(), id, chains.Solana, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	a := agent{id: id, keys: k, ref: chains.KeyRef{AgentID: id, Chain: chains.Solana}}
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
	sk, err := e.enc.ScanKeys(context.Background(), a.id, chains.Solana, 0)
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
	p, err := edstealth.ParseSolanaAddress(addr)
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

func TestSolanaStory(t *testing.T) {
	e := newEnv(t)
	alice := e.agent("00000000-0000-0000-0000-00000000000a", true)
	bob := e.agent("00000000-0000-0000-0000-00000000000b", true)

	if b := bal(t, e.conn, alice.keys.Address); b.Native != "10" || b.Tokens["USDC"] != "10000" {
		t.Fatalf("funded balance %+v", b)
	}
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

	r1, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("1.5"), To: meta, IdempotencyKey: "pay-1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("1.5"), To: meta, IdempotencyKey: "pay-1"})
	if err != nil || again.TxHash != r1.TxHash {
		t.Fatalf("retry: %+v %v, first %s", again, err, r1.TxHash)
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "SOL"), Amount: amt("2"), To: meta, IdempotencyKey: "pay-1"}); !errors.Is(err, chains.ErrIdempotencyConflict) {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := e.conn.SendStealth(bg, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(e.conn, "USDC"), Amount: amt("12.5"), To: meta, IdempotencyKey: "pay-2"}); err != nil {
		t.Fatal(err)
	}
	mine, cursor := e.find(bob, "")
	if len(mine) != 2 || mine[0].Amount != "1.5" || mine[0].Asset != "SOL" || mine[1].Amount != "12.5" || mine[1].Asset != "USDC" {
		t.Fatalf("bob's announcements: %+v", mine)
	}
	tr, err := e.conn.TransfersIn(bg, mine[1].TxHash)
	if err != nil || !hasTransfer(tr, mine[1].StealthAddress, "USDC", "12.5") {
		t.Fatalf("TransfersIn(USDC payment) = %+v, %v", tr, err)
	}
	if tr, err := e.conn.TransfersIn(bg, mine[0].TxHash); err != nil || !hasTransfer(tr, mine[0].StealthAddress, "SOL", "1.5") {
		t.Fatalf("TransfersIn(SOL payment) = %+v, %v", tr, err)
	}
	if _, err := e.conn.TransfersIn(bg, "1111111111111111111111111111111111111111111111111111111111111111"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("TransfersIn(unknown) = %v", err)
	}
	if others, _ := e.find(alice, ""); len(others) != 0 {
		t.Fatalf("alice found %d payments", len(others))
	}
	if more, _ := e.find(bob, cursor); len(more) != 0 {
		t.Fatalf("scan from the cursor found %d again", len(more))
	}

	// Bob withdraws the USDC (token account closed, every lamport out),
	// then the SOL, to his account.
	usdc := mine[1]
	ref := bob.ref
	ref.EphemeralPub = usdc.EphemeralPubKey
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: usdc.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "SOL"), All: true, IdempotencyKey: "w-0"}); !errors.Is(err, chains.ErrInvalidAmount) {
		t.Fatalf("closing a one-time account that still holds USDC: %v", err)
	}
	if b := bal(t, e.conn, usdc.StealthAddress); b.Tokens["USDC"] != "12.5" {
		t.Fatalf("one-time balance %+v", b)
	}
	before := bal(t, e.conn, bob.keys.Address)
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: usdc.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "USDC"), All: true, IdempotencyKey: "w-1"}); err != nil {
		t.Fatal(err)
	}
	after := bal(t, e.conn, bob.keys.Address)
	if after.Tokens["USDC"] != "10012.5" {
		t.Fatalf("bob after USDC withdrawal: %+v", after)
	}
	// The stipend and the closed token account's rent come back, less the
	// fee: rent(0) + rent(165) + 20000 + rent(165) - 5000 lamports.
	if d := sub(after.Native, before.Native, 9); d != "0.00498444" {
		t.Fatalf("USDC withdrawal brought %s SOL", d)
	}
	if b := bal(t, e.conn, usdc.StealthAddress); b.Native != "0" || b.Tokens["USDC"] != "0" {
		t.Fatalf("one-time account after withdrawal: %+v", b)
	}
	sol := mine[0]
	ref.EphemeralPub = sol.EphemeralPubKey
	before = after
	if _, err := e.conn.Withdraw(bg, ref, chains.WithdrawRequest{From: sol.StealthAddress, To: bob.keys.Address, Asset: chainstest.Asset(e.conn, "SOL"), All: true, IdempotencyKey: "w-2"}); err != nil {
		t.Fatal(err)
	}
	after = bal(t, e.conn, bob.keys.Address)
	if d := sub(after.Native, before.Native, 9); d != "1.499995" {
		t.Fatalf("withdrawal brought %s SOL", d)
	}
	if b := bal(t, e.conn, sol.StealthAddress); b.Native != "0" {
		t.Fatalf("one-time address after withdrawal: %+v", b)
	}
}

func sub(a, b string, dec int) string {
	x, _ := chains.ParseAmount(a, dec)
	y, _ := chains.ParseAmount(b, dec)
	return chains.FormatAmount(x.Sub(x, y), dec)
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
