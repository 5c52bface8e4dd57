package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// Every payment a tool makes has one record whose status says what is
// known: broadcast when the node took it, pending (never "nothing was
// done") when its outcome is unknown, refused when nothing was signed.
func TestPaymentToolWritesOneHonestRecord(t *testing.T) {
	cases := []struct {
		name       string
		fail       error
		wantTool   string // the tool call's status
		wantStatus tools.PaymentStatus
		wantText   string // in the tool's detail
		wantSends  int
	}{
		{name: "sent", wantTool: "success", wantStatus: tools.PaymentBroadcast, wantSends: 1},
		{name: "outcome unknown", fail: fmt.Errorf("%w: the node's answer was lost", chains.ErrOutcomeUnknown), wantTool: "success",
			wantStatus: tools.PaymentPending, wantText: "do not send it again"},
		{name: "cut off", fail: context.DeadlineExceeded, wantTool: "success", wantStatus: tools.PaymentPending, wantText: "on its way"},
		{name: "no funds", fail: chains.ErrInsufficientFunds, wantTool: "error", wantStatus: tools.PaymentRefused, wantText: "insufficient funds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
			payer := env.CreateAgent("payer")
			env.CreateAgent("bob")
			env.Chain.FailSends(c.fail)
			v, err := env.Host.Request(ctx, payer.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: "send_payment",
				Arguments: `{"recipient":"bob.veil","amount":"0.001","asset":"ETH"}`, IdempotencyKey: "k-" + c.name})
			if err != nil {
				t.Fatal(err)
			}
			tc := v.(*agent.ToolCall)
			if tc.Status != c.wantTool || !strings.Contains(strings.ToLower(tc.Detail), c.wantText) || strings.Contains(strings.ToLower(tc.Detail), "nothing was done") {
				t.Fatalf("tool call %s: %s", tc.Status, tc.Detail)
			}
			page, err := state.NewOutgoing(env.Store, payer.ID, nil).List(ctx, state.PaymentFilter{})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Payments) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(page.Payments), page.Payments)
			}
			rec := page.Payments[0]
			if rec.Status != c.wantStatus || rec.Kind != tools.KindSendPayment || rec.Source.Type != tools.SourceMCP ||
				rec.Recipient.Name != "bob.veil" || rec.Amount.String() != "0.001" || rec.Asset != "ETH" || rec.Chain != chains.Ethereum {
				t.Fatalf("record %+v", rec)
			}
			if len(env.Chain.Sends()) != c.wantSends {
				t.Fatalf("sends %d, want %d", len(env.Chain.Sends()), c.wantSends)
			}
			if tc.Status == "success" {
				var d struct {
					PaymentID string `json:"paymentId"`
					Status    string `json:"status"`
				}
				if err := json.Unmarshal([]byte(tc.Detail), &d); err != nil || d.PaymentID != rec.ID || d.Status != string(c.wantStatus) {
					t.Fatalf("detail %s names %q %q, want record %s %s (%v)", tc.Detail, d.PaymentID, d.Status, rec.ID, rec.Status, err)
				}
			}
			if c.wantStatus == tools.PaymentBroadcast && (rec.TxHash == "" || rec.TxHash != env.Chain.Sends()[0].TxHash) {
				t.Fatalf("record tx %q, sent %+v", rec.TxHash, env.Chain.Sends())
			}
			if c.wantStatus == tools.PaymentRefused && rec.Reason == "" {
				t.Fatalf("refused without a reason: %+v", rec)
			}

			// The same call again (a retry with its key) is the same record.
			env.Chain.FailSends(nil)
			if _, err := env.Host.Request(ctx, payer.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: "send_payment",
				Arguments: `{"recipient":"bob.veil","amount":"0.001","asset":"ETH"}`, IdempotencyKey: "k-" + c.name}); err != nil {
				t.Fatal(err)
			}
			page, _ = state.NewOutgoing(env.Store, payer.ID, nil).List(ctx, state.PaymentFilter{})
			wantRecords := 1
			if c.wantStatus == tools.PaymentRefused {
				wantRecords = 2 // nothing was signed: the retry is a new attempt
			}
			if len(page.Payments) != wantRecords || page.Payments[0].Status != tools.PaymentBroadcast {
				t.Fatalf("after the retry: %+v", page.Payments)
			}
			if len(env.Chain.Sends()) != 1 {
				t.Fatalf("sends after the retry %d, want 1", len(env.Chain.Sends()))
			}
		})
	}
}

func TestPendingErrorNamesTheRecord(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &tools.PendingError{PaymentID: "p1", Err: chains.ErrOutcomeUnknown})
	var pe *tools.PendingError
	if !errors.As(err, &pe) || pe.PaymentID != "p1" || !errors.Is(err, chains.ErrOutcomeUnknown) {
		t.Fatalf("%v", err)
	}
}

// A settlement moves the record and tells the user once: a payment the
// call could only call "on its way" gets payment_sent when it confirms; a
// sent one that fails gets its failure; the same settlement twice tells
// nothing more (issue 32 item 3).
func TestSettlementTellsOnce(t *testing.T) {
	cases := []struct {
		name      string
		fail      error
		status    chains.SettlementStatus
		want      tools.PaymentStatus
		wantTitle string // "" : no notification beyond the call's
		wantType  string // the notification's type
		wantEvent string // the payment event
	}{
		{"pending then confirmed", chains.ErrOutcomeUnknown, chains.SettlementConfirmed, tools.PaymentConfirmed, "Payment confirmed", agent.NotePaymentSent, "payment.confirmed"},
		{"sent then confirmed", nil, chains.SettlementConfirmed, tools.PaymentConfirmed, "", "", "payment.confirmed"},
		{"sent then failed", nil, chains.SettlementFailed, tools.PaymentFailed, "Payment failed", agent.NotePaymentFailed, "payment.failed"},
		{"pending then failed", chains.ErrOutcomeUnknown, chains.SettlementFailed, tools.PaymentFailed, "Payment failed", agent.NotePaymentFailed, "payment.failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
			payer := env.CreateAgent("payer")
			env.CreateAgent("bob")
			env.Chain.FailSends(c.fail)
			if _, err := env.Host.Request(ctx, payer.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: "send_payment",
				Arguments: `{"recipient":"bob.veil","amount":"0.001","asset":"ETH"}`, IdempotencyKey: "k"}); err != nil {
				t.Fatal(err)
			}
			page, _ := state.NewOutgoing(env.Store, payer.ID, nil).List(ctx, state.PaymentFilter{})
			if len(page.Payments) != 1 {
				t.Fatalf("records %+v", page.Payments)
			}
			rec := page.Payments[0]
			before := len(env.Inbox(payer.ID).Notifications)
			s := chains.Settlement{Chain: rec.Chain, IdempotencyKey: rec.IdempotencyKey, AgentID: payer.ID, Op: "send", TxHash: "0xmined",
				Status: c.status, Confirmations: 1, Reason: "reverted"}
			for range 2 {
				if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := state.NewOutgoing(env.Store, payer.ID, nil).Get(ctx, rec.ID)
			if err != nil || got.Status != c.want || got.TxHash != "0xmined" {
				t.Fatalf("record %+v, %v", got, err)
			}
			notes := env.Inbox(payer.ID).Notifications
			var titles []string
			for _, n := range notes {
				titles = append(titles, n.Title)
			}
			newNotes := len(notes) - before
			switch {
			case c.wantTitle == "" && newNotes != 0,
				c.wantTitle != "" && (newNotes != 1 || !strings.Contains(strings.Join(titles, "|"), c.wantTitle)):
				t.Fatalf("%d new notifications %q, want %q once", newNotes, titles, c.wantTitle)
			}
			if c.wantType != "" && notes[0].Type != c.wantType {
				t.Fatalf("notification type %q, want %q", notes[0].Type, c.wantType)
			}
			// One payment event, whatever the notification, naming the record.
			evs, err := agent.PaymentEventsAfter(ctx, env.Store, payer.ID, 0, 10)
			if err != nil || len(evs) != 1 || evs[0].Type != c.wantEvent || evs[0].Payment.ID != rec.ID || evs[0].Payment.Status != string(c.want) {
				t.Fatalf("payment events %+v, %v; want one %s of %s", evs, err, c.wantEvent, rec.ID)
			}
			if c.wantTitle != "" && evs[0].ID != notes[0].ID+1 {
				t.Fatalf("event id %d after notification %d: one sequence", evs[0].ID, notes[0].ID)
			}
		})
	}
	// A key with no record (a registration, a relayer's gas top-up)
	// changes nothing and is not an error.
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	a := env.CreateAgent("other")
	if _, err := env.Host.Request(context.Background(), a.ID, &agent.PaymentSettled{Settlement: chains.Settlement{Chain: chains.Ethereum,
		IdempotencyKey: "register/x", AgentID: a.ID, Status: chains.SettlementConfirmed}}); err != nil {
		t.Fatal(err)
	}
}
