//go:build !nodevnet

package solana_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/token"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/solanadev"
	"github.com/veilhq/veil/chains/payuri"
	"github.com/veilhq/veil/chains/solana"
	"github.com/veilhq/veil/chains/solana/solanapaytest"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/enclave/software"
	"github.com/veilhq/veil/persistence"
)

// TestBankrunDifferential (issue 35 item 7): every kind of transaction the
// Solana connector builds — stealth SOL and USDC payments with their
// announcement, the associated token account it creates, name
// registration, SOL and USDC withdrawals (partial, everything with the
// token account closed), withdrawals with the relayer as fee payer, a
// wallet's Solana Pay payments with a reference key — and the failure
// cases (below rent, insufficient SOL or tokens, an unfunded payer, a
// wrong token owner, closing a token account that holds tokens, failures
// landed with skipPreflight) runs on Veil's devnet and, from the same
// account state, on the real Solana runtime (solana-bankrun, from npm);
// the result (success, or the error's Display form) and every account the
// transaction names (lamports, owner, data) must be the same after both.
func TestBankrunDifferential(t *testing.T) {
	b := startBankrun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var root [32]byte
	_, _ = rand.Read(root[:])
	enc, err := software.New(root)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := solanadev.Start(ctx, solanadev.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dev.Close() })
	signer := &recSigner{Signer: enc, reqs: map[string][]chains.SignRequest{}}
	p := newProxy(t, dev.URL(), b, signer)
	cfg := dev.Config()
	cfg.RPCURL = p.srv.URL
	connect := func(name string) *solana.Connector {
		s, err := persistence.OpenBolt(filepath.Join(dir, name+".db"), persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		c, err := solana.New(ctx, cfg, solana.Options{Store: s, Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	conn := connect("veil")
	e := &env{t: t, dir: dir, dev: dev, enc: enc, conn: conn}
	// rconn has the relayer (the fee payer of one-time addresses' token
	// withdrawals).
	rconn := connect("relayed")
	rel, err := enc.DeriveKeys(ctx, chains.RelayerID, chains.Solana, 0)
	if err != nil {
		t.Fatal(err)
	}
	rconn.UseRelayer(&chains.Relayer{Chain: chains.Solana, Key: chains.RelayerKey(chains.Solana), Address: rel.Address, Fees: map[string]string{"USDC": "0.01"}})
	if _, err := conn.Fund(ctx, rel.Address); err != nil {
		t.Fatal(err)
	}
	alice := e.agent("00000000-0000-0000-0000-0000000000a1", true)
	bob := e.agent("00000000-0000-0000-0000-0000000000b1", true)
	carol := e.agent("00000000-0000-0000-0000-0000000000c1", false) // never funded
	wallet := solanago.NewWallet().PrivateKey
	p.wallet(wallet)
	if _, err := conn.Fund(ctx, wallet.PublicKey().String()); err != nil {
		t.Fatal(err)
	}
	stranger := solanago.NewWallet().PrivateKey
	p.wallet(stranger)
	if _, err := conn.Fund(ctx, stranger.PublicKey().String()); err != nil {
		t.Fatal(err)
	}
	mint := solanadev.USDCMint
	fresh := func() string { return solanago.NewWallet().PublicKey().String() }

	// step runs f with its transactions labelled; want is the result both
	// runtimes must give ("" = success), so that each step is the case it
	// claims to be.
	compared := 0
	step := func(label, want string, f func() error) {
		t.Helper()
		p.mu.Lock()
		p.label = label
		first := len(p.outcomes)
		p.mu.Unlock()
		ferr := f()
		p.mu.Lock()
		got := append([]outcome(nil), p.outcomes[first:]...)
		errs := p.errs
		p.errs = nil
		p.mu.Unlock()
		for _, err := range errs {
			t.Errorf("%s: the differential proxy: %v", label, err)
		}
		if len(got) == 0 {
			t.Errorf("%s: no transaction was sent (%v)", label, ferr)
			return
		}
		for _, o := range got {
			// A failure landed with skipPreflight is a sent transaction.
			if (want == "" || o.skip) != (ferr == nil) {
				t.Errorf("%s: the sender answered %v", label, ferr)
			}
			compared++
			if d := o.diffs(); len(d) > 0 {
				t.Errorf("%s: %s differs between Veil's devnet and bankrun (the real runtime):\n  %s\n  bankrun logs:\n    %s", label, o.signature, strings.Join(d, "\n  "), strings.Join(o.logs, "\n    "))
			}
			if o.devnetErr != want {
				t.Errorf("%s: devnet result %q, want %q", label, orOK(o.devnetErr), orOK(want))
			}
			t.Logf("%s: devnet %s, bankrun %s (%d accounts compared)", label, orOK(o.devnetErr), orOK(o.bankErr), len(o.keys))
		}
	}
	ignore := func(_ chains.TxResult, err error) error { return err }
	pay := func(asset, amount string) func() error {
		return func() error {
			return ignore(conn.SendStealth(ctx, alice.ref, alice.keys.Address, chains.SendRequest{Asset: chainstest.Asset(conn, asset), Amount: amt(amount), To: bob.keys.MetaAddress}))
		}
	}
	withdraw := func(c *solana.Connector, a chains.Announcement, to, asset, amount string) func() error {
		return func() error {
			ref := bob.ref
			ref.EphemeralPub = a.EphemeralPubKey
			req := chains.WithdrawRequest{From: a.StealthAddress, To: to, Asset: chainstest.Asset(c, asset), All: amount == ""}
			if amount != "" {
				req.Amount = amt(amount)
			}
			return ignore(c.Withdraw(ctx, ref, req))
		}
	}
	const (
		rentFail0 = "Transaction results in an account (0) with insufficient funds for rent"
		rentFail1 = "Transaction results in an account (1) with insufficient funds for rent"
		custom1   = "custom program error: 0x1"
	)

	step("name registration (memo signed by the owner, 0-lamport transfer to the registry)", "", func() error {
		return ignore(conn.RegisterName(ctx, bob.ref, bob.keys.Address, "bob", bob.keys.MetaAddress))
	})
	step("stealth SOL payment with its announcement", "", pay("SOL", "1.5"))
	step("stealth USDC payment: stipend, ATA CreateIdempotent, TransferChecked, announcement", "", pay("USDC", "12.5"))
	mine, _ := e.find(bob, "")
	if len(mine) != 2 || mine[0].Asset != "SOL" || mine[1].Asset != "USDC" {
		t.Fatalf("bob's payments: %+v", mine)
	}
	sol, usdc := mine[0], mine[1]
	d1 := fresh()
	step("USDC withdrawal of part to a destination without a token account (created, paid by the one-time address)", "", withdraw(conn, usdc, d1, "USDC", "2.5"))
	// The harness dies as bankrun sometimes does (a segmentation fault):
	// a new one runs the next transaction's twin with its own blockhash.
	before := b.restarted()
	b.kill()
	step("USDC withdrawal of everything: token account closed, every lamport out", "", withdraw(conn, usdc, bob.keys.Address, "USDC", ""))
	if b.restarted() == before {
		t.Error("the killed harness was not started again")
	}
	step("SOL withdrawal leaving the one-time address below rent", rentFail0, withdraw(conn, sol, fresh(), "SOL", "1.4999"))
	step("SOL withdrawal of part to a new account", "", withdraw(conn, sol, fresh(), "SOL", "0.5"))
	step("SOL withdrawal of everything (the address deleted)", "", withdraw(conn, sol, bob.keys.Address, "SOL", ""))

	// A wallet pays invoices from their Solana Pay URIs (a reference key
	// each); the USDC invoice's address then withdraws with the relayer
	// as fee payer: it holds no SOL at all.
	walletPay := func(to, amount, token string, dec int) func() error {
		return func() error {
			uri, err := payuri.SolanaPay(payuri.Request{PayTo: to, Amount: amount, Decimals: dec, Token: token, Reference: fresh()})
			if err != nil {
				return err
			}
			_, err = solanapaytest.Pay(ctx, conn.Client(), wallet, uri, dec)
			return err
		}
	}
	meta, err := edstealth.ParseMetaAddress(bob.keys.MetaAddress)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := edstealth.Generate(meta, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inv := chains.Announcement{StealthAddress: edstealth.SolanaAddress(ann.OneTimePub), EphemeralPubKey: ann.EphemeralPub[:]}
	step("Solana Pay SOL payment with a reference key", "", walletPay(fresh(), "0.05", "", 9))
	step("Solana Pay USDC payment with a reference key (the wallet creates the invoice's token account)", "", walletPay(inv.StealthAddress, "3", mint.String(), 6))
	d3 := fresh()
	step("relayed USDC withdrawal of part: relayer fee payer, creates the destination's and its own token account, takes its fee", "", withdraw(rconn, inv, d3, "USDC", "1"))
	step("relayed USDC withdrawal of everything: token account closed to the destination", "", withdraw(rconn, inv, d3, "USDC", ""))

	// CreateIdempotent on an account that exists (a no-op), and a USDC
	// withdrawal of everything to a destination without a token account
	// (the one-time address pays its rent, closes its own, sends the rest).
	step("Solana Pay USDC payment to an account whose token account exists (CreateIdempotent no-op)", "", walletPay(bob.keys.Address, "1.25", mint.String(), 6))
	cursor := ""
	if _, cursor = e.find(bob, ""); cursor == "" {
		t.Fatal("no scan cursor")
	}
	step("another stealth USDC payment", "", pay("USDC", "7"))
	more, _ := e.find(bob, cursor)
	if len(more) != 1 || more[0].Asset != "USDC" {
		t.Fatalf("bob's new payments: %+v", more)
	}
	step("USDC withdrawal of everything to a destination without a token account", "", withdraw(conn, more[0], fresh(), "USDC", ""))

	// Failures.
	step("stealth SOL payment below rent exemption", rentFail1, pay("SOL", "0.0001"))
	step("stealth SOL payment of more than the payer holds", "Error processing Instruction 0: "+custom1, pay("SOL", "50"))
	step("stealth SOL payment from an account that does not exist", "Attempt to debit an account but found no record of a prior credit.", func() error {
		return ignore(conn.SendStealth(ctx, carol.ref, carol.keys.Address, chains.SendRequest{Asset: chainstest.Asset(conn, "SOL"), Amount: amt("1"), To: bob.keys.MetaAddress}))
	})
	send := func(key solanago.PrivateKey, skip bool, ixs ...solanago.Instruction) func() error {
		return func() error {
			_, err := solanapaytest.Send(ctx, conn.Client(), key, skip, ixs...)
			return err
		}
	}
	walletIxs := func(to, amount string, token solanago.PublicKey, dec int) []solanago.Instruction {
		r := solanapaytest.Request{Recipient: solanago.MustPublicKeyFromBase58(to), Amount: amount, Token: token, References: []solanago.PublicKey{solanago.NewWallet().PublicKey()}}
		ixs, err := r.Instructions(wallet.PublicKey(), dec)
		if err != nil {
			t.Fatal(err)
		}
		return ixs
	}
	step("wallet USDC payment of more than it holds, landed with skipPreflight (fee charged)", "Error processing Instruction 1: "+custom1, send(wallet, true, walletIxs(fresh(), "20000", mint, 6)...))
	step("wallet SOL payment below rent exemption, landed with skipPreflight", rentFail1, send(wallet, true, walletIxs(fresh(), "0.0001", solanago.PublicKey{}, 9)...))
	wata, _, _ := solanago.FindAssociatedTokenAddress(wallet.PublicKey(), mint)
	sata, _, _ := solanago.FindAssociatedTokenAddress(stranger.PublicKey(), mint)
	step("token transfer signed by an account that does not own the tokens", "Error processing Instruction 0: custom program error: 0x4",
		send(stranger, false, token.NewTransferCheckedInstruction(1, 6, wata, mint, sata, stranger.PublicKey(), nil).Build()))
	step("closing a token account that still holds tokens", "Error processing Instruction 0: custom program error: 0xb",
		send(wallet, false, token.NewCloseAccountInstruction(wata, wallet.PublicKey(), wallet.PublicKey(), nil).Build()))

	if compared < 22 {
		t.Errorf("compared %d transactions, want at least one per step (22)", compared)
	}

	// A control: bankrun given one lamport more on the payer than the
	// devnet had; the comparison must see it.
	p.mu.Lock()
	p.label, p.tamper = "control", true
	p.mu.Unlock()
	if err := pay("SOL", "0.01")(); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	last := p.outcomes[len(p.outcomes)-1]
	p.mu.Unlock()
	if last.label != "control" || len(last.diffs()) == 0 {
		t.Errorf("control: a payer with one lamport more in bankrun was not reported as a difference (%+v)", last.diffs())
	}
}
