package state

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/fakeclock"
)

func outgoingPayment(t *testing.T, key, amount string) tools.OutgoingPayment {
	t.Helper()
	a, err := chains.ParseAmountOf(amount, 18)
	if err != nil {
		t.Fatal(err)
	}
	return tools.OutgoingPayment{Kind: tools.KindSendPayment, Source: tools.PaymentSource{Type: tools.SourceConversation, ID: "c1"},
		Chain: chains.Base, Asset: "ETH", Amount: a, Recipient: tools.PaymentRecipient{Name: "bob.veil", Address: "st:eth:0xabc"}, IdempotencyKey: key}
}

func TestPaymentStatusOnlyMovesForward(t *testing.T) {
	all := []tools.PaymentStatus{tools.PaymentPending, tools.PaymentBroadcast, tools.PaymentConfirmed, tools.PaymentFailed, tools.PaymentRefused}
	allowed := map[[2]tools.PaymentStatus]bool{}
	for _, s := range all {
		allowed[[2]tools.PaymentStatus{s, s}] = true
		allowed[[2]tools.PaymentStatus{tools.PaymentPending, s}] = true
	}
	allowed[[2]tools.PaymentStatus{tools.PaymentBroadcast, tools.PaymentConfirmed}] = true
	allowed[[2]tools.PaymentStatus{tools.PaymentBroadcast, tools.PaymentFailed}] = true
	for _, from := range all {
		for _, to := range append(all, "sent") {
			if got := from.CanBecome(to); got != allowed[[2]tools.PaymentStatus{from, to}] {
				t.Errorf("%s → %s: CanBecome = %t", from, to, got)
			}
		}
	}
}

func TestOutgoingLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	st := openStore(t)
	s := NewOutgoing(st, "a1", clk.Now)

	p, err := s.Open(ctx, outgoingPayment(t, "k1", "0.5"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != tools.PaymentPending || p.ID == "" || p.AgentID != "a1" || !p.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("opened %+v", p)
	}
	// A retry with the key resumes the record.
	again, err := s.Open(ctx, outgoingPayment(t, "k1", "0.50"))
	if err != nil || again.ID != p.ID {
		t.Fatalf("reopen = %v, %v; want %s", again.ID, err, p.ID)
	}
	// The key for another spend is refused.
	if _, err := s.Open(ctx, outgoingPayment(t, "k1", "0.6")); !errors.Is(err, chains.ErrIdempotencyConflict) {
		t.Fatalf("other spend under k1: %v", err)
	}

	steps := []struct {
		u       tools.PaymentUpdate
		want    tools.PaymentStatus
		moved   bool
		wantErr error
	}{
		{u: tools.PaymentUpdate{Status: tools.PaymentBroadcast, TxHash: "0x1"}, want: tools.PaymentBroadcast, moved: true},
		{u: tools.PaymentUpdate{Status: tools.PaymentBroadcast, TxHash: "0x2"}, want: tools.PaymentBroadcast}, // fee bump: same record
		{u: tools.PaymentUpdate{Status: tools.PaymentRefused}, want: tools.PaymentBroadcast, wantErr: ErrInvalidTransition},
		{u: tools.PaymentUpdate{Status: tools.PaymentPending}, want: tools.PaymentBroadcast}, // older news: no move back
		{u: tools.PaymentUpdate{Status: tools.PaymentConfirmed, TxHash: "0x2", Confirmations: 3}, want: tools.PaymentConfirmed, moved: true},
		{u: tools.PaymentUpdate{Status: tools.PaymentConfirmed, TxHash: "0x2", Confirmations: 3}, want: tools.PaymentConfirmed}, // told twice: once
		{u: tools.PaymentUpdate{Status: tools.PaymentBroadcast, TxHash: "0x2"}, want: tools.PaymentConfirmed},                   // the call's answer after its settlement
		{u: tools.PaymentUpdate{Status: tools.PaymentFailed, Reason: "x"}, want: tools.PaymentConfirmed, wantErr: ErrInvalidTransition},
	}
	for i, step := range steps {
		got, moved, err := s.Advance(ctx, p.ID, step.u)
		if !errors.Is(err, step.wantErr) || (err == nil && (got.Status != step.want || moved != step.moved)) {
			t.Fatalf("step %d %+v: %s moved %t err %v; want %s moved %t err %v", i, step.u, got.Status, moved, err, step.want, step.moved, step.wantErr)
		}
	}
	got, err := s.Get(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != tools.PaymentConfirmed || got.TxHash != "0x2" || fmt.Sprint(got.TxHashes) != "[0x1 0x2]" || got.Confirmations != 3 || got.SettledAt == nil || got.BroadcastAt == nil {
		t.Fatalf("stored %+v", got)
	}
	if byKey, err := s.ByKey(ctx, chains.Base, "k1"); err != nil || byKey.ID != p.ID {
		t.Fatalf("ByKey = %v, %v", byKey.ID, err)
	}
	if _, err := NewOutgoing(st, "a2", clk.Now).ByKey(ctx, chains.Base, "k1"); !errors.Is(err, tools.ErrNoPaymentRecord) {
		t.Fatalf("another agent's ByKey: %v", err)
	}
	if _, err := NewOutgoing(st, "a2", clk.Now).Get(ctx, p.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another agent's Get: %v", err)
	}
}

func TestOutgoingRefusedKeyGetsANewRecord(t *testing.T) {
	ctx := context.Background()
	s := NewOutgoing(openStore(t), "a1", nil)
	p, err := s.Open(ctx, outgoingPayment(t, "k", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Advance(ctx, p.ID, tools.PaymentUpdate{Status: tools.PaymentRefused, Reason: "insufficient funds"}); err != nil {
		t.Fatal(err)
	}
	q, err := s.Open(ctx, outgoingPayment(t, "k", "1"))
	if err != nil || q.ID == p.ID || q.Status != tools.PaymentPending {
		t.Fatalf("after a refusal Open = %+v, %v", q, err)
	}
	old, _ := s.Get(ctx, p.ID)
	if old.Status != tools.PaymentRefused || old.Reason != "insufficient funds" {
		t.Fatalf("the refused record changed: %+v", old)
	}
	if k, _ := s.ByKey(ctx, chains.Base, "k"); k.ID != q.ID {
		t.Fatalf("ByKey = %s, want the new record %s", k.ID, q.ID)
	}
}

func TestOutgoingListPagesAndFilters(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	s := NewOutgoing(openStore(t), "a1", clk.Now)
	var ids []string
	for i := range 7 {
		clk.Set(clk.Now().Add(time.Second))
		p := outgoingPayment(t, fmt.Sprintf("k%d", i), "1")
		if i%2 == 1 {
			p.Chain = chains.Ethereum
		}
		p, err := s.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if i < 3 {
			if _, _, err := s.Advance(ctx, p.ID, tools.PaymentUpdate{Status: tools.PaymentBroadcast, TxHash: fmt.Sprintf("0x%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, p.ID)
	}
	newest := func(idx ...int) string {
		var out []string
		for _, i := range idx {
			out = append(out, ids[i])
		}
		return fmt.Sprint(out)
	}
	cases := []struct {
		name string
		f    PaymentFilter
		want string
	}{
		{"all", PaymentFilter{}, newest(6, 5, 4, 3, 2, 1, 0)},
		{"broadcast", PaymentFilter{Status: tools.PaymentBroadcast}, newest(2, 1, 0)},
		{"ethereum", PaymentFilter{Chain: chains.Ethereum}, newest(5, 3, 1)},
		{"since", PaymentFilter{Since: time.Date(2026, 11, 27, 8, 0, 5, 0, time.UTC)}, newest(6, 5, 4)},
		{"pending on base", PaymentFilter{Status: tools.PaymentPending, Chain: chains.Base}, newest(6, 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			f := c.f
			f.Limit = 2
			for range 10 {
				page, err := s.List(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range page.Payments {
					got = append(got, p.ID)
				}
				if page.Next == "" {
					break
				}
				f.Cursor = page.Next
			}
			if fmt.Sprint(got) != c.want {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
	for _, bad := range []PaymentFilter{{Status: "sent"}, {Chain: "bitcoin"}, {Cursor: "x/y"}, {Limit: MaxPaymentPage + 1}} {
		if _, err := s.List(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("List(%+v) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestOutgoingFindRecent(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	s := NewOutgoing(openStore(t), "a1", clk.Now)
	open := func(key, amount string) tools.OutgoingPayment {
		p, err := s.Open(ctx, outgoingPayment(t, key, amount))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := open("old-pending", "0.5") // pending for hours: still on its way
	clk.Set(clk.Now().Add(3 * time.Hour))
	confirmed := open("confirmed", "0.5")
	if _, _, err := s.Advance(ctx, confirmed.ID, tools.PaymentUpdate{Status: tools.PaymentConfirmed, TxHash: "0xc"}); err != nil {
		t.Fatal(err)
	}
	refused := open("refused", "0.5")
	if _, _, err := s.Advance(ctx, refused.ID, tools.PaymentUpdate{Status: tools.PaymentRefused, Reason: "policy"}); err != nil {
		t.Fatal(err)
	}
	open("other-amount", "0.6")
	stale := open("stale-broadcast", "0.5")
	if _, _, err := s.Advance(ctx, stale.ID, tools.PaymentUpdate{Status: tools.PaymentBroadcast, TxHash: "0xs"}); err != nil {
		t.Fatal(err)
	}
	half, _ := chains.ParseAmountOf("0.500", 18)

	find := func() string {
		ps, err := s.FindRecent(ctx, chains.Base, "st:eth:0xABC", "eth", half, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range ps {
			ids = append(ids, p.ID)
		}
		return fmt.Sprint(ids)
	}
	if got, want := find(), fmt.Sprint([]string{stale.ID, confirmed.ID, old.ID}); got != want {
		t.Fatalf("FindRecent = %s, want %s", got, want)
	}
	clk.Set(clk.Now().Add(6 * time.Minute)) // the confirmation and the broadcast are no longer recent
	if got, want := find(), fmt.Sprint([]string{old.ID}); got != want {
		t.Fatalf("FindRecent later = %s, want %s", got, want)
	}
}

func TestOutgoingIDsOrderWithinAMillisecond(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	s := NewOutgoing(openStore(t), "a1", func() time.Time { return at }) // a frozen clock
	var ids []string
	for i := range 20 {
		p, err := s.Open(ctx, outgoingPayment(t, fmt.Sprintf("k%d", i), "1"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{p.ID}, ids...)
	}
	page, err := s.List(ctx, PaymentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range page.Payments {
		got = append(got, p.ID)
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Fatalf("newest first: got %v, want %v", got, ids)
	}
}

// OpenOn lists what is still on its way on one chain (pending, broadcast),
// newest first; settled and refused payments, other chains and other
// agents are not in it (issue 32 item 6: get_balance mentions them).
func TestOutgoingOpenOn(t *testing.T) {
	ctx := context.Background()
	clk := fakeclock.New(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	st := openStore(t)
	s := NewOutgoing(st, "a1", clk.Now)
	open := func(key, amount string, c chains.ID, to tools.PaymentStatus) tools.OutgoingPayment {
		t.Helper()
		p := outgoingPayment(t, key, amount)
		p.Chain = c
		rec, err := s.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if to != tools.PaymentPending {
			u := tools.PaymentUpdate{Status: to, TxHash: "0x" + key, Reason: "r"}
			if to == tools.PaymentRefused {
				u.TxHash = "" // nothing signed
			}
			if rec, _, err = s.Advance(ctx, rec.ID, u); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Second)
		return rec
	}
	pending := open("k-pending", "0.1", chains.Base, tools.PaymentPending)
	sent := open("k-sent", "0.2", chains.Base, tools.PaymentBroadcast)
	open("k-confirmed", "0.3", chains.Base, tools.PaymentConfirmed)
	open("k-refused", "0.4", chains.Base, tools.PaymentRefused)
	open("k-failed", "0.5", chains.Base, tools.PaymentFailed)
	other := open("k-eth", "0.6", chains.Ethereum, tools.PaymentPending)
	if _, err := NewOutgoing(st, "a2", clk.Now).Open(ctx, outgoingPayment(t, "k-a2", "0.7")); err != nil {
		t.Fatal(err)
	}
	// A broadcast payment that then confirms leaves the list.
	gone := open("k-gone", "0.8", chains.Base, tools.PaymentBroadcast)
	if _, _, err := s.Advance(ctx, gone.ID, tools.PaymentUpdate{Status: tools.PaymentConfirmed, Confirmations: 1}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		chain chains.ID
		want  []string
	}{
		{chains.Base, []string{sent.ID, pending.ID}},
		{chains.Ethereum, []string{other.ID}},
		{chains.Solana, nil},
	}
	for _, c := range cases {
		got, err := s.OpenOn(ctx, c.chain)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range got {
			ids = append(ids, p.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(c.want) {
			t.Errorf("%s: open %v, want %v", c.chain, ids, c.want)
		}
	}
}
