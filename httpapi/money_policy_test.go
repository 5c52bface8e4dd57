//go:build !nodevnet

package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
)

// setPolicy has the owner sign p for agentID (at the agents' clock) and
// sets it.
func (e *moneyEnv) setPolicy(t *testing.T, o owner, agentID string, p policy.Policy) {
	t.Helper()
	if r := e.do("PUT", "/agent/"+agentID+"/policy", e.key, o.policyBodyAt(t, agentID, p, e.clock.Now())); r.status != 200 {
		t.Fatalf("set policy = %d %s", r.status, r.body)
	}
}

// tool sends msg to the agent's chat and returns its one tool call.
func (e *env) tool(t *testing.T, agentID, msg string) (name, status, detail string) {
	t.Helper()
	r, out := e.chat(t, agentID, e.key, map[string]string{"message": msg})
	if r.status != 200 || len(out.ToolCalls) != 1 {
		t.Fatalf("%q = %d %s", msg, r.status, r.body)
	}
	return out.ToolCalls[0].Name, out.ToolCalls[0].Status, out.ToolCalls[0].Detail
}

// step is one chat message and what its tool call must do.
type step struct {
	msg, tool, status string
	// detail must be in the tool's detail (a refusal names its rule).
	detail string
}

func (e *env) steps(t *testing.T, agentID string, steps []step) {
	t.Helper()
	for _, s := range steps {
		name, status, detail := e.tool(t, agentID, s.msg)
		if name != s.tool || status != s.status || !strings.Contains(detail, s.detail) {
			t.Fatalf("%q: %s %s %q, want %s %s containing %q", s.msg, name, status, detail, s.tool, s.status, s.detail)
		}
	}
}

// TestPolicyOnEveryPaymentPath: on the devnet, through the real EVM
// connector and the enclave's policy, every chat path that signs a payment
// (send_payment, pay_agent, withdraw, withdraw_all) is refused when it
// breaks the owner's policy — naming the rule — and pays when it is within
// it; what was refused moved nothing.
func TestPolicyOnEveryPaymentPath(t *testing.T) {
	e := newMoneyEnv(t)
	ctx := context.Background()
	o := newEVMOwner(t)
	a := e.create(t, o, "spender", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	c := e.create(t, newEVMOwner(t), "carol", "ethereum")
	// bob pays the spender twice: payments she can withdraw.
	e.steps(t, b.ID, []step{
		{"send 0.003 ETH to spender", "send_payment", "success", ""},
		{"send 0.004 ETH to spender", "send_payment", "success", ""},
	})
	sc := e.newScannerOnce(t)
	if _, err := sc.ScanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := state.NewPayments(e.store, a.ID, nil).Received(ctx, chains.Ethereum)
	if err != nil || len(got) != 2 {
		t.Fatalf("spender's payments: %+v %v", got, err)
	}
	from := got[0].StealthAddress
	if got[0].Amount != "0.003" {
		from = got[1].StealthAddress
	}
	const dest = "0x00000000000000000000000000000000000000b2"
	const stranger = "0x00000000000000000000000000000000000000c3"
	e.setPolicy(t, o, a.ID, policy.Policy{
		PerTransaction: map[string]string{"ETH": "0.01"}, Daily: map[string]string{"ETH": "0.02"},
		Allowlist: []string{"bob", dest},
	})
	e.steps(t, a.ID, []step{
		{"pay carol.veil 0.005 ETH", "pay_agent", "error", "allowlist"},
		{"pay bob.veil 0.02 ETH", "pay_agent", "error", "per payment"},
		{"pay bob.veil 0.005 ETH", "pay_agent", "success", ""},
		{"send 0.005 ETH to carol", "send_payment", "error", "allowlist"},
		{"send 0.011 ETH to bob", "send_payment", "error", "per payment"},
		// Not 0.005 again: a repeat of the payment just made asks first
		// (issue 32 item 4).
		{"send 0.004 ETH to bob", "send_payment", "success", ""},
		{"withdraw 0.001 ETH from " + from + " to " + stranger, "withdraw", "error", "allowlist"},
		{"withdraw 0.002 ETH from " + from + " to " + dest, "withdraw", "success", ""},
		// 0.011 spent today: 0.0095 more is over the daily budget of 0.02.
		{"send 0.0095 ETH to bob", "send_payment", "error", "daily budget"},
		{"withdraw everything to " + stranger, "withdraw_all", "error", "allowlist"},
	})
	// A per-payment cap below what a withdraw_all moves refuses it too:
	// "everything" is signed with the balance as its amount.
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.0005"}, Allowlist: []string{"bob", dest}})
	e.steps(t, a.ID, []step{{"withdraw everything to " + dest, "withdraw_all", "error", "per payment"}})
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"}, Allowlist: []string{"bob", dest}})
	e.steps(t, a.ID, []step{{"withdraw everything to " + dest, "withdraw_all", "success", ""}})

	// What was refused moved nothing: carol and the stranger got nothing,
	// bob got the two allowed payments.
	if _, err := sc.ScanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countType(e.notes(t, c.ID), agent.NotePaymentReceived); n != 0 {
		t.Fatalf("carol received %d payments", n)
	}
	if n := countType(e.notes(t, b.ID), agent.NotePaymentReceived); n != 2 {
		t.Fatalf("bob received %d payments, want 2", n)
	}
	bal, err := e.eth.BalanceAt(ctx, common.HexToAddress(stranger), nil)
	if err != nil || bal.Sign() != 0 {
		t.Fatalf("the stranger holds %v wei (%v)", bal, err)
	}
	if bal, err := e.eth.BalanceAt(ctx, common.HexToAddress(dest), nil); err != nil || bal.Sign() == 0 {
		t.Fatalf("the allowed destination holds %v wei (%v)", bal, err)
	}
}

// noteBodies returns the title and body of the agent's notifications of
// one type.
func (e *moneyEnv) noteBodies(t *testing.T, agentID, typ string) []string {
	t.Helper()
	var out []string
	for _, n := range e.notes(t, agentID).Notifications {
		if n.Type == typ {
			out = append(out, n.Title+" — "+n.Body)
		}
	}
	return out
}

func (e *moneyEnv) scheduleList(t *testing.T, agentID string) map[string]scheduleJSON {
	t.Helper()
	var list []scheduleJSON
	r := e.do("GET", "/agent/"+agentID+"/schedules", e.key, nil)
	r.decode(t, &list)
	if r.status != 200 {
		t.Fatalf("schedules = %d %s", r.status, r.body)
	}
	out := map[string]scheduleJSON{}
	for _, s := range list {
		out[s.Amount] = s
	}
	return out
}

// TestSchedulesUnderPolicy: on the devnet, schedules obey the owner's
// policy when they are made (schedule_payment), run (the daily budget
// included: a refused run raises schedule_failed and pays nothing),
// re-checked under a new policy (those that break it are paused, each
// with a notification that names the rule) and resumed (over HTTP and in
// chat: refused while the policy forbids it, allowed once it allows it).
func TestSchedulesUnderPolicy(t *testing.T) {
	e := newMoneyEnv(t)
	ctx := context.Background()
	o := newEVMOwner(t)
	a := e.create(t, o, "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	c := e.create(t, newEVMOwner(t), "carol", "ethereum")
	e.setPolicy(t, o, a.ID, policy.Policy{
		PerTransaction: map[string]string{"ETH": "0.01"}, Daily: map[string]string{"ETH": "0.015"}, Allowlist: []string{"bob"},
	})
	e.steps(t, a.ID, []step{
		{"pay carol 0.005 ETH daily", "schedule_payment", "error", "allowlist"},
		{"pay bob 0.5 ETH daily", "schedule_payment", "error", "per payment"},
		{"pay bob 0.008 ETH daily", "schedule_payment", "success", ""},
		{"pay bob 0.009 ETH daily", "schedule_payment", "success", ""},
	})
	scheds := e.scheduleList(t, a.ID)
	if len(scheds) != 2 || scheds["0.008"].Status != "active" || scheds["0.009"].Status != "active" {
		t.Fatalf("schedules after the refusals: %+v", scheds)
	}

	// A day later both are due: each is within the cap, together they
	// are over the daily budget. One pays; the other is refused when it
	// is signed, raises schedule_failed naming the budget and pays
	// nothing.
	e.clock.Advance(24*time.Hour + time.Minute)
	rep, err := reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: e.clock.Now, Log: quietLog()}).RunDue(ctx)
	if err != nil || rep.Paid != 1 || rep.Failed != 1 {
		t.Fatalf("run: %+v %v", rep, err)
	}
	failed := e.noteBodies(t, a.ID, agent.NoteScheduleFailed)
	if len(failed) != 1 || !strings.Contains(failed[0], "daily budget") {
		t.Fatalf("schedule_failed: %q", failed)
	}
	if n := len(e.noteBodies(t, a.ID, agent.NoteScheduleExecuted)); n != 1 {
		t.Fatalf("%d schedule_executed", n)
	}
	sc := e.newScannerOnce(t)
	if _, err := sc.ScanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countType(e.notes(t, b.ID), agent.NotePaymentReceived); n != 1 {
		t.Fatalf("bob received %d payments, want 1", n)
	}
	if n := countType(e.notes(t, c.ID), agent.NotePaymentReceived); n != 0 {
		t.Fatalf("carol received %d payments", n)
	}

	// A stricter policy pauses both, each with a notification naming the
	// cap.
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.005"}, Allowlist: []string{"bob"}})
	scheds = e.scheduleList(t, a.ID)
	if scheds["0.008"].Status != "paused" || scheds["0.009"].Status != "paused" {
		t.Fatalf("after the stricter policy: %+v", scheds)
	}
	failed = e.noteBodies(t, a.ID, agent.NoteScheduleFailed)
	paused := 0
	for _, f := range failed {
		if strings.Contains(f, "paused") && strings.Contains(f, "per payment") {
			paused++
		}
	}
	if paused != 2 {
		t.Fatalf("pause notifications: %q", failed)
	}

	// Resuming is refused while the policy forbids it: over HTTP (409
	// naming the rule) and in chat; nothing changes.
	id := scheds["0.008"].ID
	r := e.do("POST", "/agent/"+a.ID+"/schedules/"+id+"/resume", e.key, nil)
	if msg, _ := r.errorBody(t); r.status != 409 || !strings.Contains(msg, "per payment") {
		t.Fatalf("resume over the cap = %d %q", r.status, msg)
	}
	e.steps(t, a.ID, []step{{"resume the " + id[:8] + " schedule", "manage_schedule", "error", "per payment"}})
	if s := e.scheduleList(t, a.ID)["0.008"]; s.Status != "paused" {
		t.Fatalf("after refused resumes: %+v", s)
	}
	// Once the policy allows it, it resumes.
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"}, Allowlist: []string{"bob"}})
	if r := e.do("POST", "/agent/"+a.ID+"/schedules/"+id+"/resume", e.key, nil); r.status != 200 {
		t.Fatalf("resume within the policy = %d %s", r.status, r.body)
	}
	e.steps(t, a.ID, []step{{"resume the " + scheds["0.009"].ID[:8] + " schedule", "manage_schedule", "success", ""}})
	// A run checks the policy itself, whatever the re-check did: with a
	// stricter cap written behind the server's back (no re-check ran),
	// both runs fail naming the cap and pay nothing.
	op, err := policy.SetOp(a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.005"}, Allowlist: []string{"bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Apply(ctx, op); err != nil {
		t.Fatal(err)
	}
	before := len(e.noteBodies(t, a.ID, agent.NoteScheduleFailed))
	e.clock.Advance(24*time.Hour + time.Minute)
	rep, err = reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: e.clock.Now, Log: quietLog()}).RunDue(ctx)
	if err != nil || rep.Paid != 0 || rep.Failed != 2 {
		t.Fatalf("runs over the written cap: %+v %v", rep, err)
	}
	failed = e.noteBodies(t, a.ID, agent.NoteScheduleFailed)
	if len(failed) != before+2 || !strings.Contains(failed[0], "per payment") || !strings.Contains(failed[1], "per payment") {
		t.Fatalf("schedule_failed after the runs: %q", failed)
	}
	if _, err := sc.ScanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countType(e.notes(t, b.ID), agent.NotePaymentReceived); n != 1 {
		t.Fatalf("bob received %d payments, want still 1", n)
	}
	// An allowlist without bob pauses them again (the rule named).
	e.setPolicy(t, o, a.ID, policy.Policy{Allowlist: []string{"carol"}})
	for _, s := range e.scheduleList(t, a.ID) {
		if s.Status != "paused" {
			t.Fatalf("after the allowlist change: %+v", s)
		}
	}
	if got := e.noteBodies(t, a.ID, agent.NoteScheduleFailed); !strings.Contains(got[0], "allowlist") {
		t.Fatalf("newest schedule_failed: %q", got[0])
	}
}
