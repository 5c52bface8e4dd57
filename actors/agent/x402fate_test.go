package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// An x402 authorization the payee never settled (pending: it could still
// be submitted) is reported by the connector once its validBefore has
// passed unused (chains/evm TestAuthorizationFate): the record moves to
// failed with the reason, the user is told once (payment_failed, one
// payment.failed event), and no "transaction" is named where there was
// none. One the payee did settle without the payer hearing it moves to
// confirmed with its transaction; a settlement of a record already there
// (fetch_paid heard the server's answer) changes and tells nothing.
func TestX402AuthorizationFate(t *testing.T) {
	for _, c := range []struct {
		name       string
		settlement chains.Settlement
		want       tools.PaymentStatus
		wantNote   string
		wantEvent  string
	}{
		{"expired unused", chains.Settlement{Status: chains.SettlementFailed, Reason: "the payment authorization expired at 2026-11-27T15:00:00Z without being settled: it can never be, nothing was transferred"},
			tools.PaymentFailed, agent.NotePaymentFailed, "payment.failed"},
		{"used by the payee", chains.Settlement{Status: chains.SettlementConfirmed, TxHash: "0xused", Confirmations: 1},
			tools.PaymentConfirmed, agent.NotePaymentSent, "payment.confirmed"},
		{"canceled by the payer's key", chains.Settlement{Status: chains.SettlementFailed, TxHash: "0xcancel", Reason: "the payment authorization was canceled; nothing was transferred"},
			tools.PaymentFailed, agent.NotePaymentFailed, "payment.failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			env, payer, out, rec := newX402Record(t)
			before := len(env.Inbox(payer.ID).Notifications)
			s := c.settlement
			s.Chain, s.IdempotencyKey, s.AgentID, s.Op = chains.Base, "x402/k", payer.ID, "authorization"
			for range 2 {
				if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := out.Get(ctx, rec.ID)
			if err != nil || got.Status != c.want || got.TxHash != s.TxHash || (c.want == tools.PaymentFailed && got.Reason != s.Reason) {
				t.Fatalf("record %+v, %v; want %s", got, err, c.want)
			}
			notes := env.Inbox(payer.ID).Notifications
			if len(notes)-before != 1 || notes[0].Type != c.wantNote {
				t.Fatalf("notifications %+v; want one %s", notes, c.wantNote)
			}
			if s.TxHash == "" && strings.Contains(strings.ToLower(notes[0].Body), "transaction") {
				t.Fatalf("notification names a transaction there never was: %q", notes[0].Body)
			}
			evs, err := agent.PaymentEventsAfter(ctx, env.Store, payer.ID, 0, 10)
			if err != nil || len(evs) != 1 || evs[0].Type != c.wantEvent || evs[0].Payment.ID != rec.ID {
				t.Fatalf("payment events %+v, %v; want one %s", evs, err, c.wantEvent)
			}
			if s.TxHash == "" && strings.Contains(strings.ToLower(evs[0].Body), "transaction") {
				t.Fatalf("event names a transaction there never was: %q", evs[0].Body)
			}
		})
	}
}

// An authorization whose nonce is used with no log to say how (chains/evm
// TestAuthorizationLogs) is not settled: the connector's note
// (chains.SettlementPending under chains.NoteKey) leaves the record
// pending with the note's reason, for the user and the API, and tells
// nobody, however often it comes. When the log is found later the record
// is confirmed once, saying so; a note that comes after that changes
// nothing.
func TestX402AuthorizationNoted(t *testing.T) {
	ctx := context.Background()
	env, payer, out, rec := newX402Record(t)
	deliver := func(s chains.Settlement) {
		t.Helper()
		s.Chain, s.AgentID, s.Op = chains.Base, payer.ID, "authorization"
		if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
			t.Fatal(err)
		}
	}
	told := func() (int, int) {
		t.Helper()
		evs, err := agent.PaymentEventsAfter(ctx, env.Store, payer.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(env.Inbox(payer.ID).Notifications), len(evs)
	}
	notes0, events0 := told()
	const noLog = "the authorization's nonce is used on chain but no transfer log was found; checking again"
	note := chains.Settlement{IdempotencyKey: chains.NoteKey("x402/k"), Status: chains.SettlementPending, Reason: noLog}
	for range 2 {
		deliver(note)
	}
	got, err := out.Get(ctx, rec.ID)
	if err != nil || got.Status != tools.PaymentPending || got.Reason != noLog || got.TxHash != "" {
		t.Fatalf("record after the note %+v, %v; want pending with the note's reason", got, err)
	}
	if n, e := told(); n != notes0 || e != events0 {
		t.Fatalf("the note told someone: %d notifications, %d events (before %d, %d)", n, e, notes0, events0)
	}
	const late = "the authorization's transfer log was found on a later check"
	deliver(chains.Settlement{IdempotencyKey: "x402/k", Status: chains.SettlementConfirmed, TxHash: "0xused", Confirmations: 1, Reason: late})
	deliver(note)
	got, err = out.Get(ctx, rec.ID)
	if err != nil || got.Status != tools.PaymentConfirmed || got.TxHash != "0xused" || got.Reason != late {
		t.Fatalf("record after the log was found %+v, %v; want confirmed with 0xused, saying it was found late", got, err)
	}
	if n, e := told(); n != notes0+1 || e != events0+1 {
		t.Fatalf("%d notifications, %d events after it confirmed (before %d, %d); want one more of each", n, e, notes0, events0)
	}
}

// newX402Record is a money env with an agent "payer" whose x402 payment
// of 0.25 USDC on Base, under the key "x402/k", is recorded (pending: the
// payee has not been heard from), as fetch_paid opens it before it pays.
func newX402Record(t *testing.T) (*moneytest.Env, *agent.Record, *state.Outgoing, tools.OutgoingPayment) {
	t.Helper()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	payer := env.CreateAgent("payer")
	out := state.NewOutgoing(env.Store, payer.ID, nil)
	amount, err := chains.ParseAmountOf("0.25", 6)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := out.Open(context.Background(), tools.OutgoingPayment{Kind: tools.KindX402, Source: tools.PaymentSource{Type: tools.SourceMCP}, Chain: chains.Base,
		Asset: "USDC", Amount: amount, Recipient: tools.PaymentRecipient{Address: "0x00000000000000000000000000000000000000a4"}, IdempotencyKey: "x402/k"})
	if err != nil {
		t.Fatal(err)
	}
	return env, payer, out, rec
}
