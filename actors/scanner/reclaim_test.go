//go:build !nodevnet

package scanner_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/devnet/stellardev"
	"github.com/veilhq/veil/chains/stellar"
	"github.com/veilhq/veil/chains/stellar/stellartest"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
)

// failInvoiceCommit fails the next batch that stores an invoice, once
// armed: the create_invoice whose commit fails after the activation.
type failInvoiceCommit struct {
	persistence.Store
	armed atomic.Bool
}

var errCommit = errors.New("test: the invoice's commit failed")

func (f *failInvoiceCommit) Apply(ctx context.Context, ops ...persistence.Op) ([]uint64, error) {
	for _, op := range ops {
		if op.Table == state.TableInvoices && f.armed.CompareAndSwap(true, false) {
			return nil, errCommit
		}
	}
	return f.Store.Apply(ctx, ops...)
}

// TestReclaimStellarDestinations: the Stellar relayer (the enclave's key)
// sponsors invoices' one-time accounts, and the scanner's maintenance
// gives its reserves back: a create_invoice whose commit fails after the
// activation is retried under its key and reuses the same account (one
// sponsored account); one without a key leaves an orphan, reclaimed after
// state.OrphanAfter; an expired and a cancelled invoice's accounts are
// closed into the relayer; a paid invoice's account once the agent
// withdrew its money; a late payment to an expired invoice keeps its
// account open (the agent's money). The relayer spends only fees.
func TestReclaimStellarDestinations(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	clock := moneytest.NewClock(time.Now())
	var conn *stellar.Connector
	env := moneytest.NewEnvOn(t, clock, func(store persistence.Store, signer chains.Signer) chains.Connector {
		d, err := stellardev.Start(context.Background(), stellardev.Options{Dir: t.TempDir(), Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		if conn, err = stellar.New(context.Background(), d.Config(), stellar.Options{Store: store, Signer: signer, Log: quiet}); err != nil {
			t.Fatal(err)
		}
		return conn
	})
	hc := conn.Client()
	cfg := conn.Config()
	pub, err := env.Enclave.DeriveKeys(ctx, chains.RelayerID, chains.Stellar, 0)
	if err != nil {
		t.Fatal(err)
	}
	rel := pub.Address
	conn.UseRelayer(&chains.Relayer{Chain: chains.Stellar, Key: chains.RelayerKey(chains.Stellar), Address: rel})
	if _, err := conn.Fund(ctx, rel); err != nil {
		t.Fatal(err)
	}
	// sponsoring: the relayer's sponsored reserves (2 per account, 1 per
	// trustline); spendable: its balance less its minimum balance.
	relayer := func() (sponsoring int, spendable *big.Int) {
		t.Helper()
		a, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: rel})
		if err != nil {
			t.Fatal(err)
		}
		v := new(big.Int)
		for _, b := range a.Balances {
			if b.Type == "native" {
				x, _ := chains.ParseAmount(b.Balance, 7)
				v.Set(x)
			}
		}
		n := int64(2 + int64(a.SubentryCount) + int64(a.NumSponsoring) - int64(a.NumSponsored))
		return int(a.NumSponsoring), v.Sub(v, big.NewInt(n*stellar.BaseReserve))
	}
	_, before := relayer()
	gone := func(addr string) bool {
		_, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: addr})
		return horizonclient.IsNotFoundError(err)
	}

	env.Configure = func(d *agent.Deps) {
		d.Models = func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) }
	}
	env.Restart()
	alice := env.CreateAgent("alice")
	fs := &failInvoiceCommit{Store: env.Store}
	gen := state.StealthAddresses(map[chains.ID]string{chains.Stellar: alice.MetaAddresses["stellar"]}, rand.Reader)
	// As actors/agent's chainOps.prepareDestination.
	prep := func(ctx context.Context, c chains.ID, asset, addr string, eph []byte) error {
		key := chains.KeyRef{AgentID: alice.ID, Chain: c, Epoch: agent.KeyEpoch, EphemeralPub: eph}
		_, err := env.Ref.PrepareDestination(ctx, key, addr, asset, "activate/"+alice.ID+"/"+addr)
		return err
	}
	invs := state.NewInvoices(fs, alice.ID, clock.Now, "alice", "http://veil.test", gen).WithPrep(prep).WithPrepares(func(chains.ID) bool { return true })
	invoice := func(amount, asset string, expires *time.Time) tools.Invoice {
		return tools.Invoice{Invoice: client.Invoice{Amount: amount, Asset: asset, Memo: "m"}, Chain: chains.Stellar, ExpiresAt: expires}
	}
	s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave), Log: quiet, Now: clock.Now})
	pass := func() scanner.Report {
		t.Helper()
		clock.Advance(scanner.ReclaimEvery) // the destinations are read at most this often
		rep, err := s.ScanOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	pass() // the transfer watch starts at the latest transaction

	// 1. The commit fails after the activation; the retry under the same
	// key reuses the account: one sponsored account.
	fs.armed.Store(true)
	if _, err := invs.Create(ctx, invoice("5", "USDC", nil), "create_invoice/k1"); !errors.Is(err, errCommit) {
		t.Fatalf("create with a failing commit: %v", err)
	}
	if n, _ := relayer(); n != 3 {
		t.Fatalf("after the failed create the relayer sponsors %d reserves, want 3 (an account and a trustline)", n)
	}
	paid, err := invs.Create(ctx, invoice("5", "USDC", nil), "create_invoice/k1")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := relayer(); n != 3 {
		t.Fatalf("after the retry the relayer sponsors %d reserves, want 3 (the same account)", n)
	}
	ds, err := state.Destinations(ctx, env.Store, chains.Stellar)
	if err != nil || len(ds) != 1 || ds[0].Address != paid.PayTo || ds[0].InvoiceID != paid.ID {
		t.Fatalf("destinations %+v %v; invoice %s at %s", ds, err, paid.ID, paid.PayTo)
	}

	// 2. Without a key the retry cannot know the first attempt: its
	// account is an orphan, kept for OrphanAfter, then reclaimed.
	fs.armed.Store(true)
	if _, err := invs.Create(ctx, invoice("2", "XLM", nil), ""); !errors.Is(err, errCommit) {
		t.Fatalf("create with a failing commit: %v", err)
	}
	ds, _ = state.Destinations(ctx, env.Store, chains.Stellar)
	var orphan string
	for _, d := range ds {
		if d.InvoiceID == "" {
			orphan = d.Address
		}
	}
	if n, _ := relayer(); n != 5 || orphan == "" {
		t.Fatalf("the relayer sponsors %d reserves (want 5), orphan %q", n, orphan)
	}
	if rep := pass(); rep.Reclaimed != 0 || gone(orphan) {
		t.Fatalf("orphan reclaimed before OrphanAfter: %+v", rep)
	}
	clock.Advance(state.OrphanAfter + time.Minute)
	if rep := pass(); rep.Reclaimed != 1 || !gone(orphan) {
		t.Fatalf("the orphan after OrphanAfter: %+v, closed %v", rep, gone(orphan))
	}
	if n, _ := relayer(); n != 3 {
		t.Fatalf("after the orphan's reclaim the relayer sponsors %d reserves, want 3", n)
	}

	// 3. An expired and a cancelled invoice: closed at the next pass after.
	exp := clock.Now().Add(30 * time.Minute)
	expired, err := invs.Create(ctx, invoice("1", "XLM", &exp), "create_invoice/k2")
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := invs.Create(ctx, invoice("3", "USDC", nil), "create_invoice/k3")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := relayer(); n != 8 {
		t.Fatalf("the relayer sponsors %d reserves, want 8", n)
	}
	if rep := pass(); rep.Reclaimed != 0 {
		t.Fatalf("open invoices reclaimed: %+v", rep)
	}
	if _, _, err := invs.Cancel(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	// The cancelled one is looked at again within RecheckAfter, the
	// expired one at its expiry.
	clock.Advance(state.RecheckAfter + time.Minute)
	if rep := pass(); rep.Reclaimed != 2 || !gone(expired.PayTo) || !gone(cancelled.PayTo) {
		t.Fatalf("expired and cancelled: %+v (closed %v %v)", rep, gone(expired.PayTo), gone(cancelled.PayTo))
	}
	if n, _ := relayer(); n != 3 {
		t.Fatalf("the relayer sponsors %d reserves, want 3 (the pending invoice)", n)
	}

	// 4. The pending invoice is paid by a wallet; its account is kept
	// while it holds the money and closed once the agent withdrew it.
	wallet := keypair.MustRandom()
	stellartest.TrustUSDC(ctx, t, conn, wallet)
	stellartest.Pay(t, hc, cfg.NetworkPassphrase, wallet, paid.PayTo, "5", stellartest.USDC(conn))
	if rep := pass(); rep.InvoicesPaid != 1 || rep.Reclaimed != 0 || gone(paid.PayTo) {
		t.Fatalf("paid invoice: %+v", rep)
	}
	rec, err := invs.Record(ctx, paid.ID)
	if err != nil {
		t.Fatal(err)
	}
	eph, _ := hexDecode(rec.EphemeralPubKey)
	from := chains.KeyRef{AgentID: alice.ID, Chain: chains.Stellar, EphemeralPub: eph}
	if _, err := env.Ref.Withdraw(ctx, from, chains.WithdrawRequest{Chain: chains.Stellar, From: paid.PayTo, To: wallet.Address(), Asset: chainstest.Asset(env.Ref, "USDC"), Amount: amount(t, "5"), IdempotencyKey: "w-5"}); err != nil {
		t.Fatalf("withdraw: %v", err)
	}
	if gone(paid.PayTo) {
		t.Fatal("a withdrawal of an amount closed the account")
	}
	clock.Advance(state.RecheckAfter + time.Minute)
	if rep := pass(); rep.Reclaimed != 1 || !gone(paid.PayTo) {
		t.Fatalf("the emptied paid invoice's account: %+v", rep)
	}

	// 5. A late payment to an expired invoice is the agent's money: it is
	// recorded and its account stays open.
	exp = clock.Now().Add(10 * time.Minute)
	late, err := invs.Create(ctx, invoice("1", "XLM", &exp), "create_invoice/k4")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Minute)
	stellartest.Pay(t, hc, cfg.NetworkPassphrase, wallet, late.PayTo, "0.3", txnbuild.NativeAsset{})
	if rep := pass(); rep.New != 1 || rep.Reclaimed != 0 || gone(late.PayTo) {
		t.Fatalf("late payment: %+v", rep)
	}
	ds, _ = state.Destinations(ctx, env.Store, chains.Stellar)
	if len(ds) != 1 || ds[0].Address != late.PayTo || ds[0].LastError == "" || !ds[0].NextAt.After(clock.Now()) {
		t.Fatalf("destinations after the late payment: %+v", ds)
	}

	// create_invoice in a chat (actors/agent's wiring): its address is
	// recorded before the activation and linked to the invoice.
	v, err := env.Host.Request(ctx, alice.ID, &agent.Chat{AccountID: moneytest.Account, Message: "create an invoice for 2 xlm for lunch", IdempotencyKey: "chat-inv"})
	if err != nil {
		t.Fatal(err)
	}
	if reply := v.(*agent.ChatReply); len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Status != "success" {
		t.Fatalf("create_invoice in a chat: %+v", reply)
	}
	ds, _ = state.Destinations(ctx, env.Store, chains.Stellar)
	var chatInv state.Destination
	for _, d := range ds {
		if d.Address != late.PayTo {
			chatInv = d
		}
	}
	if len(ds) != 2 || chatInv.InvoiceID == "" || chatInv.Key == "" || gone(chatInv.Address) {
		t.Fatalf("destinations after create_invoice in a chat: %+v", ds)
	}
	if _, _, err := invs.Cancel(ctx, chatInv.InvoiceID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(state.RecheckAfter)
	if rep := pass(); rep.Reclaimed != 1 || !gone(chatInv.Address) {
		t.Fatalf("the chat's cancelled invoice: %+v", rep)
	}

	// Every reserve but the late-paid account's is back; the relayer
	// spent fees only (100 stroops an operation, well under 0.001 XLM).
	n, after := relayer()
	if n != 2 {
		t.Fatalf("the relayer sponsors %d reserves, want 2 (the late-paid account)", n)
	}
	spent := new(big.Int).Sub(before, after)
	spent.Sub(spent, big.NewInt(2*stellar.BaseReserve)) // the late-paid account's reserve
	if spent.Sign() <= 0 || spent.Cmp(big.NewInt(10_000)) > 0 {
		t.Fatalf("the relayer spent %s stroops beyond the locked reserve, want fees only", spent)
	}
}

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

func amount(t *testing.T, s string) chains.Amount {
	t.Helper()
	v, err := chains.ParseAmount(s, 7)
	if err != nil {
		t.Fatal(err)
	}
	return chains.NewAmount(v, 7)
}
