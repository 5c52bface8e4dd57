package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// A withdrawal whose gas funding's outcome is unknown was never signed: its
// record says it waits on the gas (issue 32 item 1), and settles with it —
// failed gas fails the withdrawal ("gas funding failed; nothing
// withdrawn", told once), confirmed gas leaves it pending saying it is
// being sent (the agent sends it itself: withdrawsend_test.go), and a
// retry under its key before that sends it — so it never stays pending
// with nothing to move it.
//
// The relayer's fee in a transaction of its own before the withdrawal
// (EVM) is the same case: withdrawSteps runs both.
func TestWithdrawalWaitingOnGasSettlesWithIt(t *testing.T) {
	for _, step := range withdrawSteps {
		for _, outcome := range []chains.SettlementStatus{chains.SettlementFailed, chains.SettlementConfirmed} {
			t.Run(step.name+"/"+string(outcome), func(t *testing.T) {
				ctx := context.Background()
				env, payer, from := newPaidPayer(t)
				step.setup(env.Chain)
				step.unknown(env.Chain, true)
				args, _ := json.Marshal(map[string]string{"from": from, "to": "0x00000000000000000000000000000000000000d5"})
				tc := env.Tool(payer.ID, "withdraw", string(args), "w1")
				if !strings.Contains(tc.Detail, `"status":"pending"`) {
					t.Fatalf("withdraw with the %s's outcome unknown: %s %s", step.name, tc.Status, tc.Detail)
				}
				// The withdrawal itself was never signed: the answer says it is
				// not sent yet and why, never that it was handed to the network.
				if strings.Contains(tc.Detail, "handed to the network") || !strings.Contains(tc.Detail, "has not been sent yet") || !strings.Contains(tc.Detail, "nothing withdrawn yet") {
					t.Fatalf("withdraw with the %s's outcome unknown answered %s", step.name, tc.Detail)
				}
				out := state.NewOutgoing(env.Store, payer.ID, nil)
				by := outgoingByKind(t, out)
				w, g := only(by[tools.KindWithdraw]), only(by[step.kind])
				if w.ID == "" || g.ID == "" || g.ForPayment != w.ID {
					t.Fatalf("records %+v; want a withdrawal and its %s", by, step.name)
				}
				if w.Status != tools.PaymentPending || w.TxHash != "" || w.Reason == "" || g.Status != tools.PaymentPending {
					t.Fatalf("before the gas settles: withdrawal %s %q reason %q, gas %s; want pending, no tx, a reason", w.Status, w.TxHash, w.Reason, g.Status)
				}
				s := chains.Settlement{Chain: chains.Ethereum, IdempotencyKey: g.IdempotencyKey, AgentID: payer.ID, Op: step.name, TxHash: g.TxHash, Status: outcome}
				if outcome == chains.SettlementFailed {
					s.Reason = "reverted"
				} else {
					s.Confirmations = 1
				}
				for range 2 {
					if _, err := env.Host.Request(ctx, payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
						t.Fatal(err)
					}
				}
				w2, err := out.Get(ctx, w.ID)
				if err != nil {
					t.Fatal(err)
				}
				if outcome == chains.SettlementFailed {
					if w2.Status != tools.PaymentFailed || w2.Reason != step.failed {
						t.Fatalf("withdrawal after its gas failed: %s %q", w2.Status, w2.Reason)
					}
				} else if w2.Status != tools.PaymentPending || w2.Reason == w.Reason {
					t.Fatalf("withdrawal after its gas confirmed: %s %q; want pending, saying it is being sent", w2.Status, w2.Reason)
				}
				evs, err := agent.PaymentEventsAfter(ctx, env.Store, payer.ID, 0, 20)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, e := range evs {
					if e.Payment.ID == w.ID {
						n++
					}
				}
				if want := map[chains.SettlementStatus]int{chains.SettlementFailed: 1}[outcome]; n != want {
					t.Fatalf("%d events of the withdrawal (%+v); want %d", n, evs, want)
				}
				if outcome == chains.SettlementConfirmed {
					// A retry under the withdrawal's key sends it: the same
					// record, no longer saying that nothing was withdrawn.
					step.unknown(env.Chain, false)
					tc := env.Tool(payer.ID, "withdraw", string(args), "w1")
					w3, err := out.Get(ctx, w.ID)
					if err != nil || tc.Status != "success" || w3.Status != tools.PaymentBroadcast || w3.TxHash != "0xw" || strings.Contains(w3.Reason, "nothing withdrawn") {
						t.Fatalf("the retry after the gas confirmed: %s %s; record %s %q %q %v; want it sent, the record saying so", tc.Status, tc.Detail, w3.Status, w3.TxHash, w3.Reason, err)
					}
				}
			})
		}
	}
}
