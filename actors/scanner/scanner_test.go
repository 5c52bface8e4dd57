package scanner_test

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/persistence"
)

var ctx = context.Background()

// pay builds the announcement of amount ETH to meta (a payment anybody
// could make).
func pay(t testing.TB, meta, amount, tx string) chains.Announcement {
	t.Helper()
	m, err := secp256k1.ParseMetaAddress(meta)
	if err != nil {
		t.Fatal(err)
	}
	a, err := secp256k1.Generate(m, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return chains.Announcement{
		StealthAddress: common.BytesToAddress(a.StealthAddress[:]).Hex(), EphemeralPubKey: a.EphemeralPub[:],
		ViewTag: a.ViewTag, Asset: "ETH", Amount: amount, TxHash: tx,
	}
}

func stranger(t testing.TB) string {
	t.Helper()
	var s, v [32]byte
	_, _ = rand.Read(s[:])
	_, _ = rand.Read(v[:])
	k, err := secp256k1.KeysFromSeeds(s, v)
	if err != nil {
		t.Fatal(err)
	}
	return k.Meta.String()
}

// flaky fails the deliveries to one agent while fail is set.
type flaky struct {
	scanner.Agents
	mu   sync.Mutex
	fail string
}

func (f *flaky) Request(ctx context.Context, id string, msg any) (any, error) {
	f.mu.Lock()
	fail := f.fail == id
	f.mu.Unlock()
	if fail {
		return nil, errors.New("agent unavailable")
	}
	return f.Agents.Request(ctx, id, msg)
}

func newScanner(env *moneytest.Env, agents scanner.Agents) *scanner.Scanner {
	if agents == nil {
		agents = env.Host
	}
	return scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: agents, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log, PageSize: 4})
}

func scan(t *testing.T, s *scanner.Scanner) scanner.Report {
	t.Helper()
	rep, err := s.ScanOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestDeliverOnce: the payments of a chain's agents are found among
// strangers' with one batch scan, each delivered once with one
// payment_received, across passes, restarts and a lost cursor.
func TestDeliverOnce(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
	alice, bob := env.CreateAgent("alice"), env.CreateAgent("bob")
	carol := env.CreateAgent("carol")
	var anns []chains.Announcement
	for i := range 5 {
		anns = append(anns, pay(t, stranger(t), "9", "0xs"+string(rune('a'+i))))
	}
	anns = append(anns, pay(t, alice.MetaAddresses["ethereum"], "0.5", "0xa1"), pay(t, bob.MetaAddresses["ethereum"], "2", "0xb1"))
	anns = append(anns, pay(t, stranger(t), "1", "0xs9"), pay(t, alice.MetaAddresses["ethereum"], "0.25", "0xa2"))
	env.Chain.Announce(anns...)

	s := newScanner(env, nil)
	rep := scan(t, s)
	if rep.Agents != 3 || rep.Announcements != 9 || rep.Matches != 3 || rep.New != 3 {
		t.Fatalf("first pass: %+v", rep)
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			rec  *agent.Record
			want int
		}{{alice, 2}, {bob, 1}, {carol, 0}} {
			in := env.Inbox(c.rec.ID)
			if n := moneytest.Count(in, agent.NotePaymentReceived); n != c.want {
				t.Fatalf("%s: %s has %d payment_received, want %d", when, c.rec.Name, n, c.want)
			}
			ps, err := state.NewPayments(env.Store, c.rec.ID, nil).Received(ctx, chains.Ethereum)
			if err != nil || len(ps) != c.want {
				t.Fatalf("%s: %s has %d payments (%v), want %d", when, c.rec.Name, len(ps), err, c.want)
			}
		}
	}
	check("first pass")
	in := env.Inbox(alice.ID)
	if b := in.Notifications[0].Body; !strings.Contains(b, "stealth address") || !strings.Contains(b, "0.25 ETH") {
		t.Fatalf("notification body %q", b)
	}
	if rep := scan(t, s); rep.Announcements != 0 || rep.New != 0 {
		t.Fatalf("second pass: %+v", rep)
	}
	// A restarted node (new host, new scanner) resumes from the cursor.
	env.Restart()
	s = newScanner(env, nil)
	if rep := scan(t, s); rep.Announcements != 0 || rep.New != 0 {
		t.Fatalf("after restart: %+v", rep)
	}
	// A crash between delivery and the cursor write: the pages come again,
	// nothing is notified twice.
	if err := scanner.ForgetCursors(ctx, env.Store, "ethereum"); err != nil {
		t.Fatal(err)
	}
	if rep := scan(t, s); rep.Announcements != 9 || rep.Matches != 3 || rep.New != 0 {
		t.Fatalf("redelivery: %+v", rep)
	}
	check("after redelivery")
	// An agent created later is matched from then on.
	dave := env.CreateAgent("dave")
	env.Chain.Announce(pay(t, dave.MetaAddresses["ethereum"], "7", "0xd1"))
	if rep := scan(t, s); rep.Agents != 4 || rep.New != 1 {
		t.Fatalf("new agent: %+v", rep)
	}
}

// TestFailedDeliveryKeepsCursor: when one agent cannot take its payments
// the cursor stays, so nothing is skipped; the others are not notified
// twice when the page comes again.
func TestFailedDeliveryKeepsCursor(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	alice, bob := env.CreateAgent("alice"), env.CreateAgent("bob")
	env.Chain.Announce(pay(t, alice.MetaAddresses["ethereum"], "1", "0x1"), pay(t, bob.MetaAddresses["ethereum"], "1", "0x2"))
	fl := &flaky{Agents: env.Host, fail: bob.ID}
	s := newScanner(env, fl)
	if _, err := s.ScanOnce(ctx); err == nil {
		t.Fatal("a failed delivery must fail the pass")
	}
	if sh, err := s.Shards(ctx); err != nil || len(sh) != 1 || !onlyGenesis(sh) {
		t.Fatalf("cursor advanced past an undelivered payment: %v %v", sh, err)
	}
	fl.mu.Lock()
	fl.fail = ""
	fl.mu.Unlock()
	rep := scan(t, s)
	if rep.New != 1 {
		t.Fatalf("retry: %+v (want only bob's payment new)", rep)
	}
	for _, id := range []string{alice.ID, bob.ID} {
		if n := moneytest.Count(env.Inbox(id), agent.NotePaymentReceived); n != 1 {
			t.Fatalf("%s: %d notifications", id, n)
		}
	}
}

// TestInvoicePaidByTransfer: plain transfers to an invoice's one-time
// address (nobody announces them) are found by the transfer watch; the
// invoice flips once the payments there cover it, with one invoice_paid.
func TestInvoicePaidByTransfer(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	alice := env.CreateAgent("alice")
	gen := state.StealthAddresses(map[chains.ID]string{chains.Ethereum: alice.MetaAddresses["ethereum"]}, rand.Reader)
	invs := state.NewInvoices(env.Store, alice.ID, nil, "alice", "http://veil.test", gen)
	inv, err := invs.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "consulting"}, Chain: chains.Ethereum}, "")
	if err != nil {
		t.Fatal(err)
	}
	s := newScanner(env, nil)
	env.Chain.Transfer(chains.Transfer{To: "0x000000000000000000000000000000000000bEEF", Asset: "ETH", Amount: "5", TxHash: "0xother"},
		chains.Transfer{To: inv.PayTo, Asset: "ETH", Amount: "0.4", TxHash: "0xt1"})
	rep := scan(t, s)
	if rep.Transfers != 2 || rep.InvoiceHits != 1 || rep.New != 1 || rep.InvoicesPaid != 0 {
		t.Fatalf("partial payment: %+v", rep)
	}
	if got, _ := invs.Get(ctx, inv.ID); got.Status != "pending" {
		t.Fatalf("partly paid invoice is %s", got.Status)
	}
	env.Chain.Transfer(chains.Transfer{To: inv.PayTo, Asset: "ETH", Amount: "0.6", TxHash: "0xt2"})
	rep = scan(t, s)
	if rep.New != 1 || rep.InvoicesPaid != 1 {
		t.Fatalf("completing payment: %+v", rep)
	}
	got, _ := invs.Get(ctx, inv.ID)
	if got.Status != "paid" || got.TxHash == nil || *got.TxHash != "0xt2" {
		t.Fatalf("invoice %+v", got)
	}
	// Redelivery (cursor lost) and POST /paid afterwards: still one
	// invoice_paid.
	if _, err := env.Store.Apply(ctx, persistence.Delete(chainactor.TableScanCursors, "ethereum/"+scanner.ConsumerTransfers, persistence.Any())); err != nil {
		t.Fatal(err)
	}
	if rep := scan(t, s); rep.New != 0 || rep.InvoicesPaid != 0 {
		t.Fatalf("redelivery: %+v", rep)
	}
	if _, err := env.Host.Request(ctx, alice.ID, &agent.ConfirmInvoicePaid{AccountID: moneytest.Account, InvoiceID: inv.ID}); err != nil {
		t.Fatal(err)
	}
	in := env.Inbox(alice.ID)
	if moneytest.Count(in, agent.NoteInvoicePaid) != 1 || moneytest.Count(in, agent.NotePaymentReceived) != 2 {
		t.Fatalf("inbox: %+v", in.Notifications)
	}
	// The payment is withdrawable: it carries the invoice's ephemeral key.
	p, err := state.NewPayments(env.Store, alice.ID, nil).Get(ctx, chains.Ethereum, inv.PayTo)
	rec, _ := invs.Record(ctx, inv.ID)
	if err != nil || p.Amount != "1" || p.EphemeralPubKey != rec.EphemeralPubKey {
		t.Fatalf("payment %+v %v", p, err)
	}
}

// TestConfirmWithoutPayment: POST /paid semantics at the actor.
func TestConfirmWithoutPayment(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	alice := env.CreateAgent("alice")
	gen := state.StealthAddresses(map[chains.ID]string{chains.Ethereum: alice.MetaAddresses["ethereum"]}, rand.Reader)
	inv, err := state.NewInvoices(env.Store, alice.ID, nil, "alice", "http://veil.test", gen).Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "1", Asset: "ETH", Memo: "x"}, Chain: chains.Ethereum}, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Host.Request(ctx, alice.ID, &agent.ConfirmInvoicePaid{AccountID: moneytest.Account, InvoiceID: inv.ID})
	if !errors.Is(err, agent.ErrNoPayment) {
		t.Fatalf("no payment: %v", err)
	}
	_, err = env.Host.Request(ctx, alice.ID, &agent.ConfirmInvoicePaid{AccountID: "other", InvoiceID: inv.ID})
	if !errors.Is(err, agent.ErrInvoiceNotFound) {
		t.Fatalf("foreign account: %v", err)
	}
	// The fake chain cannot verify by hash.
	_, err = env.Host.Request(ctx, alice.ID, &agent.ConfirmInvoicePaid{AccountID: moneytest.Account, InvoiceID: inv.ID, TxHash: "0x01"})
	if !errors.Is(err, chains.ErrUnavailable) {
		t.Fatalf("no verifier: %v", err)
	}
}

// TestBackgroundLoop: Start/Stop run passes without the test calling them.
func TestBackgroundLoop(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	alice := env.CreateAgent("alice")
	s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log, Interval: time.Hour})
	s.Start()
	defer s.Stop()
	env.Chain.Announce(pay(t, alice.MetaAddresses["ethereum"], "1", "0x1"))
	deadline := time.Now().Add(10 * time.Second)
	for moneytest.Count(env.Inbox(alice.ID), agent.NotePaymentReceived) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the background scanner found nothing")
		}
		s.Kick()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, 2 * time.Second}, {2, 4 * time.Second}, {3, 8 * time.Second}, {5, 32 * time.Second}, {6, time.Minute}, {60, time.Minute}} {
		if got := scanner.Backoff(2*time.Second, time.Minute, tc.n); got != tc.want {
			t.Errorf("Backoff after %d failures = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// TestFailingPassIsVisible: a pass that fails is reported (OnPass with the
// error, the scanner's Health and its Board) and retried; once the chain
// answers again the health recovers and the payment is found.
func TestFailingPassIsVisible(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	alice := env.CreateAgent("alice")
	board := scanner.NewBoard()
	var mu sync.Mutex
	var passErrs []error
	s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log,
		Interval: time.Hour, Board: board, OnPass: func(_ chains.ID, _ scanner.Report, _ time.Duration, err error) {
			mu.Lock()
			passErrs = append(passErrs, err)
			mu.Unlock()
		}})
	env.Chain.FailScans(errors.New("node does not answer"))
	env.Chain.Announce(pay(t, alice.MetaAddresses["ethereum"], "1", "0x1"))
	s.Start()
	defer s.Stop()
	// One kick per finished pass, so that no kick is left over to run a
	// third pass behind the check (kicks sent while a pass ran did, and
	// the board then held 3 failures).
	kickedAfter := 0
	waitFor(t, "two failed passes", func() bool {
		mu.Lock()
		passes := len(passErrs)
		mu.Unlock()
		if passes >= 2 {
			return true
		}
		if passes > kickedAfter {
			kickedAfter = passes
			s.Kick()
		}
		return false
	})
	h := s.Health()
	if h.OK() || !strings.Contains(h.LastError, "node does not answer") || h.RetryIn < time.Hour || !h.LastSuccess.IsZero() {
		t.Fatalf("health while failing: %+v", h)
	}
	if err := board.Err(3); err != nil {
		t.Fatalf("board with 2 failures below the threshold of 3: %v", err)
	}
	if err := board.Err(1); err == nil || !strings.Contains(err.Error(), "scanner ethereum") || !strings.Contains(err.Error(), "node does not answer") {
		t.Fatalf("board while failing: %v", err)
	}
	mu.Lock()
	if len(passErrs) < 2 || passErrs[0] == nil {
		t.Fatalf("OnPass errors %v", passErrs)
	}
	mu.Unlock()

	env.Chain.FailScans(nil)
	waitFor(t, "recovery", func() bool {
		if !s.Health().OK() {
			s.Kick()
			return false
		}
		return true
	})
	if err := board.Err(1); err != nil {
		t.Fatalf("board after recovery: %v", err)
	}
	if snap := board.Snapshot(); len(snap) != 1 || snap[0].Chain != chains.Ethereum || snap[0].LastSuccess.IsZero() {
		t.Fatalf("snapshot %+v", snap)
	}
	waitFor(t, "the payment", func() bool { return moneytest.Count(env.Inbox(alice.ID), agent.NotePaymentReceived) == 1 })
}

// onlyGenesis: every lane of every shard is still at genesis.
func onlyGenesis(sh map[string][]string) bool {
	for _, lanes := range sh {
		for _, c := range lanes {
			if c != "" {
				return false
			}
		}
	}
	return true
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
