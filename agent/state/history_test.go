package state

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/fakeclock"
)

// payment_history over the real payment records: filters by recipient,
// status (open = pending or broadcast), chain, asset and time; totals
// count what left or is leaving, never failed or refused payments; one
// payment by id prefix; bad arguments are refused.
func TestPaymentHistoryOverRecords(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC))
	st := openStore(t)
	out := NewOutgoing(st, "a1", clk.Now)
	type pay struct {
		days      int // created this many days after Jan 1
		to, asset string
		chain     chains.ID
		amount    string
		status    tools.PaymentStatus
	}
	ids := map[string]string{}
	for i, p := range []pay{
		{0, "alice", "USDC", chains.Base, "10", tools.PaymentConfirmed},
		{3, "bob", "USDC", chains.Base, "5", tools.PaymentFailed},
		{20, "alice", "USDC", chains.Base, "2.5", tools.PaymentBroadcast},
		{24, "carol", "ETH", chains.Ethereum, "0.1", tools.PaymentConfirmed},
		{27, "alice", "USDC", chains.Solana, "7", tools.PaymentRefused},
		{29, "bob", "USDC", chains.Base, "1.25", tools.PaymentPending},
	} {
		clk.Set(time.Date(2027, 1, 1+p.days, 9, 0, 0, 0, time.UTC))
		dec := 6
		if p.asset == "ETH" {
			dec = 18
		}
		amt, err := chains.ParseAmountOf(p.amount, dec)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := out.Open(ctx, tools.OutgoingPayment{Kind: tools.KindSendPayment, Source: tools.PaymentSource{Type: tools.SourceConversation, ID: "c1"},
			Chain: p.chain, Asset: p.asset, Amount: amt, Recipient: tools.PaymentRecipient{Name: p.to + ".veil", Address: "st:" + p.to}, IdempotencyKey: "k" + string(rune('a'+i))})
		if err != nil {
			t.Fatal(err)
		}
		ids[p.to+p.amount] = rec.ID
		if p.status != tools.PaymentPending {
			u := tools.PaymentUpdate{Status: p.status, TxHash: "0xtx" + p.amount, Reason: "why"}
			if p.status == tools.PaymentRefused {
				u.TxHash = ""
			}
			if p.status != tools.PaymentBroadcast && p.status != tools.PaymentRefused {
				if _, _, err := out.Advance(ctx, rec.ID, tools.PaymentUpdate{Status: tools.PaymentBroadcast, TxHash: u.TxHash}); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := out.Advance(ctx, rec.ID, u); err != nil {
				t.Fatalf("%s: %v", p.status, err)
			}
		}
	}
	clk.Set(time.Date(2027, 1, 31, 9, 0, 0, 0, time.UTC))
	env := &tools.Env{Agent: tools.Agent{ID: "a1"}, Now: clk.Now, Outgoing: out}
	tl, ok := tools.ByName("payment_history")
	if !ok {
		t.Fatal("no payment_history tool")
	}
	run := func(args string) (*tools.PaymentHistory, error) {
		t.Helper()
		r, err := tl.Run(ctx, env, json.RawMessage(args))
		if err != nil {
			return nil, err
		}
		return r.(*tools.PaymentHistory), nil
	}
	amounts := func(h *tools.PaymentHistory) string {
		var s []string
		for _, p := range h.Payments {
			s = append(s, p.Recipient.Name+":"+p.Amount+":"+string(p.Status))
		}
		return strings.Join(s, ",")
	}
	for _, tc := range []struct {
		args, want string
		matched    int
		totals     string // chain/asset=confirmed+open, in order
	}{
		{`{}`, "bob.veil:1.25:pending,alice.veil:7:refused,carol.veil:0.1:confirmed,alice.veil:2.5:broadcast,bob.veil:5:failed,alice.veil:10:confirmed", 6, "base/USDC=10+3.75,ethereum/ETH=0.1+0"},
		{`{"limit":2}`, "bob.veil:1.25:pending,alice.veil:7:refused", 6, "base/USDC=10+3.75,ethereum/ETH=0.1+0"},
		{`{"recipient":"Alice.veil"}`, "alice.veil:7:refused,alice.veil:2.5:broadcast,alice.veil:10:confirmed", 3, "base/USDC=10+2.5"},
		{`{"recipient":"st:alice","status":"confirmed"}`, "alice.veil:10:confirmed", 1, "base/USDC=10+0"},
		{`{"status":"open"}`, "bob.veil:1.25:pending,alice.veil:2.5:broadcast", 2, "base/USDC=0+3.75"},
		{`{"chain":"base"}`, "bob.veil:1.25:pending,alice.veil:2.5:broadcast,bob.veil:5:failed,alice.veil:10:confirmed", 4, "base/USDC=10+3.75"},
		{`{"asset":"eth"}`, "carol.veil:0.1:confirmed", 1, "ethereum/ETH=0.1+0"},
		{`{"since":"7d"}`, "bob.veil:1.25:pending,alice.veil:7:refused,carol.veil:0.1:confirmed", 3, "base/USDC=0+1.25,ethereum/ETH=0.1+0"},
		{`{"since":"2027-01-04","until":"2027-01-21"}`, "alice.veil:2.5:broadcast,bob.veil:5:failed", 2, "base/USDC=0+2.5"},
		{`{"recipient":"dave"}`, "", 0, ""},
	} {
		h, err := run(tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.args, err)
			continue
		}
		var totals []string
		for _, x := range h.Totals {
			totals = append(totals, string(x.Chain)+"/"+x.Asset+"="+x.Confirmed+"+"+x.Open)
		}
		if amounts(h) != tc.want || h.Matched != tc.matched || strings.Join(totals, ",") != tc.totals {
			t.Errorf("%s:\n got %s (%d) %v\nwant %s (%d) %s", tc.args, amounts(h), h.Matched, totals, tc.want, tc.matched, tc.totals)
		}
	}
	// One payment by a prefix of its id; its idempotency key is not shown.
	id := ids["carol0.1"]
	h, err := run(`{"payment_id":"` + id[:13] + `"}`)
	if err != nil || len(h.Payments) != 1 || h.Payments[0].ID != id || h.Payments[0].TxHash != "0xtx0.1" || h.Confirmed != 1 {
		t.Fatalf("by id: %+v %v", h, err)
	}
	if b, _ := json.Marshal(h); strings.Contains(string(b), "idempotencyKey") {
		t.Errorf("the answer shows the idempotency key: %s", b)
	}
	for args, want := range map[string]error{
		`{"payment_id":"ffff"}`:               tools.ErrNoPaymentRecord,
		`{"payment_id":"zz"}`:                 tools.ErrInvalidArgs,
		`{"status":"sent"}`:                   tools.ErrInvalidArgs,
		`{"since":"last tuesday"}`:            tools.ErrInvalidArgs,
		`{"since":"7d","until":"2026-01-01"}`: tools.ErrInvalidArgs,
		`{"limit":0}`:                         tools.ErrInvalidArgs,
		`{"amount":"5"}`:                      tools.ErrInvalidArgs,
	} {
		if _, err := run(args); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", args, err, want)
		}
	}
	// Without records to read, the tool says so instead of answering empty.
	if _, err := tl.Run(ctx, &tools.Env{Now: clk.Now}, json.RawMessage(`{}`)); !errors.Is(err, tools.ErrNotConfigured) {
		t.Errorf("no records: %v", err)
	}
}

// cancel_invoice over the real invoice store: by description, by id
// prefix or payment link; a cancelled invoice stops being payable
// (MarkPaid refuses it as expired, check_invoices lists it as cancelled,
// not open); paid and expired invoices, another agent's and unknown ones
// are refused with nothing changed; cancelling again changes nothing.
func TestCancelInvoiceOverStore(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	alice := keysFor(t, "alice")
	invs := NewInvoices(s, "agent-a", clk.Now, "alice", "https://veil.test", StealthAddresses(alice.meta, cryptoRand{}))
	env := &tools.Env{Agent: tools.Agent{ID: "agent-a", Name: "alice", Chains: []chains.ID{chains.Base}, MetaAddresses: map[chains.ID]string{chains.Base: alice.meta[chains.Base]}},
		Now: clk.Now, Invoices: invs, Chains: noChains{}}
	run := func(key, tool, args string) (any, error) {
		t.Helper()
		tl, _ := tools.ByName(tool)
		e := *env
		e.IdempotencyKey = key
		return tl.Run(ctx, &e, json.RawMessage(args))
	}
	mk := func(key, amount, memo, extra string) *tools.Invoice {
		t.Helper()
		r, err := run(key, "create_invoice", `{"amount":"`+amount+`","asset":"USDC","memo":"`+memo+`"`+extra+`}`)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*tools.Invoice)
	}
	five, ten, tenToo := mk("k1", "5", "logo", ""), mk("k2", "10", "hosting", ""), mk("k3", "10", "domain", "")
	paid, short := mk("k4", "7", "paid one", ""), mk("k5", "3", "short one", `,"expires_in":"1h"`)
	if _, _, err := invs.MarkPaid(ctx, paid.ID, "0xpaid"); err != nil {
		t.Fatal(err)
	}

	// By description: the one open invoice for 5 USDC.
	r, err := run("", "cancel_invoice", `{"amount":"5","asset":"usdc"}`)
	if err != nil {
		t.Fatal(err)
	}
	c := r.(*tools.CancelledInvoice)
	if c.ID != five.ID || c.CancelledAt == nil || c.ExpiresAt == nil || !c.ExpiresAt.Equal(clk.Now()) || c.AlreadyCancelled || c.Status != "pending" {
		t.Fatalf("cancel by amount: %+v", c)
	}
	if _, _, err := invs.MarkPaid(ctx, five.ID, "0xlate"); !errors.Is(err, ErrExpired) {
		t.Errorf("a cancelled invoice was marked paid: %v", err)
	}
	// Again (the same words): answered as it is, nothing changes.
	r, err = run("", "cancel_invoice", `{"amount":"5"}`)
	if err != nil || !r.(*tools.CancelledInvoice).AlreadyCancelled {
		t.Errorf("cancel twice: %+v %v", r, err)
	}
	// Ambiguous: two open invoices for 10; nothing changes.
	if _, err := run("", "cancel_invoice", `{"amount":"10"}`); !errors.Is(err, tools.ErrInvalidArgs) || !strings.Contains(err.Error(), "2 open invoices match") {
		t.Errorf("two for 10: %v", err)
	}
	// By memo, then by payment link, then by id prefix.
	if r, err := run("", "cancel_invoice", `{"memo":"Hosting"}`); err != nil || r.(*tools.CancelledInvoice).ID != ten.ID {
		t.Errorf("by memo: %+v %v", r, err)
	}
	if r, err := run("", "cancel_invoice", `{"invoice_id":"`+tenToo.PaymentLink+`"}`); err != nil || r.(*tools.CancelledInvoice).ID != tenToo.ID {
		t.Errorf("by link: %+v %v", r, err)
	}
	// Paid: refused by id and by description, and still paid.
	for _, args := range []string{`{"invoice_id":"` + paid.ID[:8] + `"}`, `{"amount":"7"}`} {
		if _, err := run("", "cancel_invoice", args); !errors.Is(err, tools.ErrInvoiceNotCancellable) || !strings.Contains(err.Error(), "already paid") {
			t.Errorf("%s: cancelled a paid invoice: %v", args, err)
		}
	}
	if got, _ := invs.Get(ctx, paid.ID); got.Status != "paid" || got.CancelledAt != nil {
		t.Errorf("paid invoice changed: %+v", got)
	}
	// Expired: refused.
	clk.Set(at(t, "2027-01-31T12:00:00Z"))
	if _, err := run("", "cancel_invoice", `{"invoice_id":"`+short.ID+`"}`); !errors.Is(err, tools.ErrInvoiceNotCancellable) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired: %v", err)
	}
	// Another agent's invoice is not this agent's to cancel.
	bobInv := NewInvoices(s, "agent-b", clk.Now, "bob", "https://veil.test", StealthAddresses(alice.meta, cryptoRand{}))
	other, err := bobInv.Create(ctx, tools.Invoice{Invoice: client.Invoice{Amount: "4", Asset: "USDC", Memo: "bob's"}, Chain: chains.Base}, "kb")
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"invoice_id":"` + other.ID + `"}`, `{"invoice_id":"nope!"}`, `{}`} {
		if _, err := run("", "cancel_invoice", args); err == nil {
			t.Errorf("%s: no error", args)
		}
	}
	if got, _ := bobInv.Get(ctx, other.ID); got.CancelledAt != nil {
		t.Errorf("another agent's invoice was cancelled")
	}
	// check_invoices: open ones exclude the cancelled; cancelled lists them.
	for status, want := range map[string]int{"open": 0, "cancelled": 3, "paid": 1, "expired": 4, "": 5} {
		r, err := run("", "check_invoices", `{"status":"`+status+`"}`)
		if status == "" {
			r, err = run("", "check_invoices", `{}`)
		}
		if err != nil || len(r.(*tools.InvoiceList).Invoices) != want {
			t.Errorf("check_invoices %q: %+v %v, want %d", status, r, err, want)
		}
	}
}
