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
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
			payer := env.CreateAgent("payer")
			out := state.NewOutgoing(env.Store, payer.ID, nil)
			amount, err := chains.ParseAmountOf("0.25", 6)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := out.Open(ctx, tools.OutgoingPayment{Kind: tools.KindX402, Source: tools.PaymentSource{Type: tools.SourceMCP}, Chain: chains.Base,
				Asset: "USDC", Amount: amount, Recipient: tools.PaymentRecipient{Address: "0x00000000000000000000000000000000000000a4"}, IdempotencyKey: "x402/k"})
			if err != nil {
				t.Fatal(err)
			}
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
