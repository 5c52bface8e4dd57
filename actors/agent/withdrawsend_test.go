package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// waitingWithdrawal is a withdrawal that waits on its prerequisite (step:
// gas or fee) whose outcome is unknown, and the prerequisite's record.
type waitingWithdrawal struct {
	env    *moneytest.Env
	payer  *agent.Record
	from   string
	args   string
	w, pre tools.OutgoingPayment
	out    *state.Outgoing
}

// withdrawSteps are the prerequisites a withdrawal waits on (gas funding,
// the relayer's fee in a transaction of its own), with the withdrawal's
// reason once it is sent (done) and once the prerequisite failed (failed).
var withdrawSteps = []struct {
	name    string
	kind    tools.PaymentKind
	unknown func(*moneytest.Chain, bool)
	setup   func(*moneytest.Chain)
	done    string
	failed  string
}{
	{"gas", tools.KindGasFunding, (*moneytest.Chain).GasOutcomeUnknown, func(c *moneytest.Chain) { c.NeedGas("0.0002") },
		"sent once its gas funding was confirmed", "gas funding failed; nothing withdrawn"},
	{"fee", tools.KindRelayerFee, (*moneytest.Chain).FeeOutcomeUnknown, func(c *moneytest.Chain) { c.RelayerFee("0.01", false) },
		"sent once the relayer's fee transfer was confirmed", "the relayer's fee transfer failed; nothing withdrawn"},
}

// newWaitingWithdrawal has payer withdraw its one received payment while
// step's transfer answers an unknown outcome: nothing withdrawn, the
// withdrawal pending on it. The prerequisite's later transfers are known.
func newWaitingWithdrawal(t *testing.T, step int) *waitingWithdrawal {
	t.Helper()
	return newWaitingWithdrawalOf(t, step, "")
}

// newWaitingWithdrawalOf is newWaitingWithdrawal of amount ("": all).
func newWaitingWithdrawalOf(t *testing.T, step int, amount string) *waitingWithdrawal {
	t.Helper()
	s := withdrawSteps[step]
	env, payer, from := newPaidPayer(t)
	ww := &waitingWithdrawal{env: env, payer: payer, from: from}
	s.setup(env.Chain)
	s.unknown(env.Chain, true)
	a := map[string]string{"from": ww.from, "to": "0x00000000000000000000000000000000000000d5"}
	if amount != "" {
		a["amount"] = amount
	}
	args, _ := json.Marshal(a)
	ww.args = string(args)
	if tc := env.Tool(ww.payer.ID, "withdraw", ww.args, "w1"); !strings.Contains(tc.Detail, `"status":"pending"`) {
		t.Fatalf("withdraw with the %s's outcome unknown: %s %s", s.name, tc.Status, tc.Detail)
	}
	s.unknown(env.Chain, false)
	ww.out = state.NewOutgoing(env.Store, ww.payer.ID, nil)
	by := outgoingByKind(t, ww.out)
	ww.w, ww.pre = only(by[tools.KindWithdraw]), only(by[s.kind])
	if ww.w.Status != tools.PaymentPending || ww.w.TxHash != "" || ww.pre.ForPayment != ww.w.ID || len(env.Chain.Withdrawals()) != 0 {
		t.Fatalf("records %+v; want a withdrawal pending with nothing withdrawn, waiting on its %s", by, s.name)
	}
	return ww
}

// settle delivers the settlement of key (twice, as a connector may).
func (ww *waitingWithdrawal) settle(t *testing.T, key, tx string, st chains.SettlementStatus) {
	t.Helper()
	s := chains.Settlement{Chain: chains.Ethereum, IdempotencyKey: key, AgentID: ww.payer.ID, Op: "x", TxHash: tx, Status: st, Confirmations: 1}
	for range 2 {
		if _, err := ww.env.Host.Request(context.Background(), ww.payer.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
			t.Fatal(err)
		}
	}
}

// pass runs a reminder pass, as veild's reminder does every second (a new
// reminder: a restarted process has no memory of the last one's waits).
func (ww *waitingWithdrawal) pass(t *testing.T) reminder.Report {
	t.Helper()
	rep, err := reminder.New(reminder.Options{Store: ww.env.Store, Agents: ww.env.Host, Now: ww.env.Clock.Now}).RunDue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// sentOnce checks that the withdrawal was made once on chain and its record
// says it was sent, that the user was told so once, and that nothing is
// left due.
func (ww *waitingWithdrawal) sentOnce(t *testing.T, done string) tools.OutgoingPayment {
	t.Helper()
	ctx := context.Background()
	var ws []moneytest.Withdrawal
	for _, x := range ww.env.Chain.Withdrawals() {
		if x.Key == ww.w.IdempotencyKey {
			ws = append(ws, x)
		}
	}
	if len(ws) != 1 || len(ww.env.Chain.Withdrawals()) != 1 {
		t.Fatalf("withdrawals on chain %+v; want one, under the withdrawal's key", ww.env.Chain.Withdrawals())
	}
	w, err := ww.out.Get(ctx, ww.w.ID)
	if err != nil || w.Status != tools.PaymentBroadcast || w.TxHash != "0xw" || w.Reason != done {
		t.Fatalf("withdrawal record %s %q %q (%v); want broadcast 0xw, %q", w.Status, w.TxHash, w.Reason, err, done)
	}
	if n := moneytest.Count(ww.env.Inbox(ww.payer.ID), "withdrawal"); n != 1 {
		t.Fatalf("%d withdrawal notifications; want 1", n)
	}
	p, err := state.NewPayments(ww.env.Store, ww.payer.ID, nil).Get(ctx, chains.Ethereum, ww.from)
	if err != nil || p.Withdrawn != w.All || len(p.Withdrawals) != 1 {
		t.Fatalf("the received payment after its withdrawal: %+v %v; want one withdrawal recorded", p, err)
	}
	if due, err := ww.env.Store.List(ctx, agent.TableWithdrawDue, persistence.Query{}); err != nil || len(due) != 0 {
		t.Fatalf("due withdrawals left %+v %v", due, err)
	}
	return w
}

// A withdrawal that waited on its gas funding (or the relayer's fee in a
// transaction of its own) is sent by the agent once that transfer
// confirms, under its key, exactly once: the reminder's passes after the
// settlement send it, the user is told once (a "withdrawal" notification
// saying it was sent), and its own settlement then confirms it with
// nothing more to say but its payment.confirmed event.
func TestWithdrawalSentOnceItsPrerequisiteConfirms(t *testing.T) {
	for i, step := range withdrawSteps {
		t.Run(step.name, func(t *testing.T) {
			ctx := context.Background()
			ww := newWaitingWithdrawal(t, i)
			ww.settle(t, ww.pre.IdempotencyKey, ww.pre.TxHash, chains.SettlementConfirmed)
			for range 3 {
				ww.pass(t)
			}
			ww.sentOnce(t, step.done)
			// The prerequisite's own settlement told its payment_sent (its
			// call could only say it was on its way); the withdrawal's tells
			// nothing more.
			told := moneytest.Count(ww.env.Inbox(ww.payer.ID), agent.NotePaymentSent)
			ww.settle(t, ww.w.IdempotencyKey, "0xw", chains.SettlementConfirmed)
			w, err := ww.out.Get(ctx, ww.w.ID)
			if err != nil || w.Status != tools.PaymentConfirmed {
				t.Fatalf("withdrawal after its settlement: %+v %v", w, err)
			}
			in := ww.env.Inbox(ww.payer.ID)
			if n, m := moneytest.Count(in, "withdrawal"), moneytest.Count(in, agent.NotePaymentSent); n != 1 || m != told {
				t.Fatalf("told %d withdrawal and %d payment_sent notifications; want it told once", n, m)
			}
			evs, err := agent.PaymentEventsAfter(ctx, ww.env.Store, ww.payer.ID, 0, 20)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range evs {
				if e.Payment.ID == ww.w.ID {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d events of the withdrawal; want its payment.confirmed", n)
			}
		})
	}
}

// The send survives a restart: between the settlement and any wake-up,
// in the wake-up before the send, and after the send before it was told.
// The due entry written with the settlement brings it back on the next
// process's first pass; one withdrawal on chain, told once.
func TestWithdrawalSentAfterARestart(t *testing.T) {
	for _, crash := range []string{"", agent.FailBeforeWaitingSend, agent.FailAfterWaitingSend} {
		t.Run("crash at "+crash, func(t *testing.T) {
			ww := newWaitingWithdrawal(t, 0)
			ww.settle(t, ww.pre.IdempotencyKey, ww.pre.TxHash, chains.SettlementConfirmed)
			if crash != "" {
				ww.env.Failures = func(name string) error {
					if name == crash {
						return errors.New("crash")
					}
					return nil
				}
				if rep := ww.pass(t); rep.Errors != 1 {
					t.Fatalf("the crashed pass: %+v", rep)
				}
				ww.env.Failures = nil
			}
			ww.env.Restart()
			ww.pass(t)
			ww.pass(t)
			ww.sentOnce(t, withdrawSteps[0].done)
		})
	}
}

// A retry of the user under the withdrawal's key racing the agent's own
// send (concurrently, or one after the other in either order): the
// connector makes one withdrawal per key, whichever comes first, and the
// user is told once. A withdrawal of part of the payment leaves it not
// withdrawn, so the retry after the agent's send reaches the connector,
// which answers the same transaction.
func TestWithdrawalRetryRacingTheAutomaticSend(t *testing.T) {
	for i, step := range withdrawSteps {
		for _, order := range []string{"concurrent", "retry first", "send first", "part, send first", "part, concurrent"} {
			t.Run(step.name+"/"+order, func(t *testing.T) {
				amount := ""
				if strings.HasPrefix(order, "part, ") {
					amount, order = "0.2", strings.TrimPrefix(order, "part, ")
				}
				ww := newWaitingWithdrawalOf(t, i, amount)
				ww.settle(t, ww.pre.IdempotencyKey, ww.pre.TxHash, chains.SettlementConfirmed)
				var answer *agent.ToolCall
				retry := func() { answer = ww.env.Tool(ww.payer.ID, "withdraw", ww.args, "w1") }
				send := func() { ww.pass(t) }
				switch order {
				case "concurrent":
					var wg sync.WaitGroup
					wg.Add(2)
					go func() { defer wg.Done(); retry() }()
					go func() { defer wg.Done(); send() }()
					wg.Wait()
				case "retry first":
					retry()
					send()
				default:
					send()
					retry()
				}
				ww.pass(t)
				ww.sentOnce(t, step.done)
				if amount != "" && (answer.Status != "success" || !strings.Contains(answer.Detail, "0xw")) {
					t.Fatalf("the retry of part of the payment: %s %s; want the same transaction answered", answer.Status, answer.Detail)
				}
			})
		}
	}
}

// The owner's policy is checked again when the agent sends the withdrawal,
// as on a retry: a policy that now refuses it ends the record refused with
// the reason, nothing withdrawn, the user told once.
func TestWithdrawalRefusedByThePolicyWhenSent(t *testing.T) {
	ctx := context.Background()
	ww := newWaitingWithdrawal(t, 0)
	op, err := policy.SetOp(ww.payer.ID, policy.Policy{Allowlist: []string{"0x00000000000000000000000000000000000000aa"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ww.env.Store.Apply(ctx, op); err != nil {
		t.Fatal(err)
	}
	ww.env.Chain.AuthorizeWith(policy.NewStore(ww.env.Store, ww.env.Clock.Now).WithApprovals().Authorize)
	ww.settle(t, ww.pre.IdempotencyKey, ww.pre.TxHash, chains.SettlementConfirmed)
	ww.pass(t)
	ww.pass(t)
	if ws := ww.env.Chain.Withdrawals(); len(ws) != 0 {
		t.Fatalf("withdrawn %+v against the policy", ws)
	}
	w, err := ww.out.Get(ctx, ww.w.ID)
	if err != nil || w.Status != tools.PaymentRefused || !strings.Contains(w.Reason, "allowlist") {
		t.Fatalf("withdrawal record %s %q %v; want refused by the allowlist", w.Status, w.Reason, err)
	}
	if n := moneytest.Count(ww.env.Inbox(ww.payer.ID), agent.NotePaymentFailed); n != 1 {
		t.Fatalf("%d payment_failed notifications; want 1", n)
	}
	if due, err := ww.env.Store.List(ctx, agent.TableWithdrawDue, persistence.Query{}); err != nil || len(due) != 0 {
		t.Fatalf("due withdrawals left %+v %v", due, err)
	}
}
