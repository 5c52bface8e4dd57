package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/internal/fakeclock"
)

type approvalView struct {
	ID             string   `json:"id"`
	Status         string   `json:"status"`
	Kind           string   `json:"kind"`
	Amount         string   `json:"amount"`
	Asset          string   `json:"asset"`
	Reasons        []string `json:"reasons"`
	Recipient      string   `json:"recipient"`
	ConversationID string   `json:"conversationId"`
	TxHash         string   `json:"txHash"`
	Error          string   `json:"error"`
}

type heldDetail struct {
	ApprovalID string `json:"approvalId"`
	Status     string `json:"status"`
	TxHash     string `json:"txHash"`
}

func (o owner) decision(agentID, approvalID string, deny bool, at time.Time) map[string]any {
	msg := walletsig.ApprovalMessage(approvalID, agentID, o.wallet(), deny, at)
	d := "approve"
	if deny {
		d = "deny"
	}
	return map[string]any{"decision": d, "message": msg, "signature": o.sign(msg)}
}

// Approvals end to end on the devnet: a payment above the threshold is
// held (the tool succeeds with pending_approval, nothing is paid), the
// owner is notified, an API key alone cannot approve it, the owner's
// signature approves it once and it is paid once, with a system message in
// the conversation that asked. Denials, expiry, concurrent decisions and a
// crash right after the approved payment was broadcast are covered too.
func TestApprovalsEndToEnd(t *testing.T) {
	clock := &fakeclock.Offset{} // the agents' clock: real time plus an offset the test moves
	var crash atomic.Bool
	e := newEnv(t, envOptions{evm: true, agentNow: clock.Now, failpoint: func(name string) error {
		if name == agent.FailAfterApprovedSend && crash.CompareAndSwap(true, false) {
			return errors.New("crash after the approved payment was broadcast")
		}
		return nil
	}})
	o := newEVMOwner(t)
	alice := e.create(t, o, "approver", "ethereum")
	e.create(t, newEVMOwner(t), "payee", "ethereum")
	p := policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.01"}, ApprovalExpiry: "2h"},
		PerTransaction: map[string]string{"ETH": "0.05"}}
	if r := e.do("PUT", "/agent/"+alice.ID+"/policy", e.key, o.policyBodyAt(t, alice.ID, p, clock.Now())); r.status != 200 {
		t.Fatalf("set policy = %d %s", r.status, r.body)
	}
	base := "/agent/" + alice.ID + "/approvals"

	var lastAnswer string
	chat := func(msg string) (agent.ToolCall, string) {
		t.Helper()
		r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": msg})
		if r.status != 200 || len(out.ToolCalls) != 1 {
			t.Fatalf("%q = %d %s", msg, r.status, r.body)
		}
		lastAnswer = out.Response
		return out.ToolCalls[0], out.ConversationID
	}
	hold := func(msg string) (heldDetail, string) {
		t.Helper()
		call, conv := chat(msg)
		var d heldDetail
		if err := json.Unmarshal([]byte(call.Detail), &d); err != nil || call.Status != "success" || d.Status != "pending_approval" || d.ApprovalID == "" || d.TxHash != "" {
			t.Fatalf("%q: %s %s, want held", msg, call.Status, call.Detail)
		}
		return d, conv
	}
	systemMessages := func(conv string) []string {
		var out []string
		for _, m := range e.messages(t, alice.ID, conv) {
			if m.Role == "system" {
				out = append(out, m.Text)
			}
		}
		return out
	}

	// At or below the threshold: paid at once.
	if call, _ := chat("send 0.01 ETH to payee"); call.Status != "success" || !strings.Contains(call.Detail, "txHash") || strings.Contains(call.Detail, "approvalId") {
		t.Fatalf("below the threshold: %s %s", call.Status, call.Detail)
	}

	// Above: held.
	held, conv := hold("send 0.02 ETH to payee")
	// The answer must not claim a payment that was not made.
	if strings.Contains(lastAnswer, "Sent") || !strings.Contains(lastAnswer, "Nothing was sent") || !strings.Contains(lastAnswer, held.ApprovalID) {
		t.Fatalf("answer to a held payment: %q", lastAnswer)
	}
	r := e.do("GET", base+"?status=pending", e.key, nil)
	var pending []approvalView
	r.decode(t, &pending)
	if r.status != 200 || len(pending) != 1 || pending[0].ID != held.ApprovalID || pending[0].Amount != "0.02" || pending[0].ConversationID != conv || len(pending[0].Reasons) != 1 ||
		pending[0].Recipient != "payee.veil" {
		t.Fatalf("pending = %d %s", r.status, r.body)
	}
	if r := e.do("GET", base+"?status=nonsense", e.key, nil); r.status != 400 {
		t.Fatalf("bad status filter = %d", r.status)
	}
	var inbox agent.Inbox
	e.do("GET", "/agent/"+alice.ID+"/notifications", e.key, nil).decode(t, &inbox)
	if inbox.Notifications[0].Type != agent.NoteApprovalRequired || !strings.Contains(inbox.Notifications[0].Body, held.ApprovalID) {
		t.Fatalf("latest notification = %+v", inbox.Notifications[0])
	}

	// Nothing but the owner's fresh signature decides.
	path := base + "/" + held.ApprovalID
	now := clock.Now()
	for _, tc := range []struct {
		name string
		key  string
		body any
		want int
	}{
		{"API key alone", e.key, map[string]any{"decision": "approve"}, 400},
		{"no decision", e.key, map[string]any{"message": "x", "signature": "y"}, 400},
		{"bad decision", e.key, map[string]any{"decision": "yes"}, 400},
		{"stranger's signature", e.key, newEVMOwner(t).decision(alice.ID, held.ApprovalID, false, now), 400},
		{"deny message to approve", e.key, map[string]any{"decision": "approve", "message": o.decision(alice.ID, held.ApprovalID, true, now)["message"], "signature": o.decision(alice.ID, held.ApprovalID, true, now)["signature"]}, 400},
		{"stale signature", e.key, o.decision(alice.ID, held.ApprovalID, false, now.Add(-time.Hour)), 400},
		{"another approval's message", e.key, o.decision(alice.ID, "11111111-1111-4111-8111-111111111111", false, now), 400},
		{"another account", e.newKey("other"), o.decision(alice.ID, held.ApprovalID, false, now), 404},
	} {
		r := e.do("POST", path, tc.key, tc.body)
		if r.status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
			continue
		}
		r.errorBody(t)
	}
	if r := e.do("GET", path, e.key, nil); !strings.Contains(string(r.body), `"status":"pending"`) {
		t.Fatalf("after refused decisions: %s", r.body)
	}

	// Approved: paid, once.
	r = e.do("POST", path, e.key, o.decision(alice.ID, held.ApprovalID, false, clock.Now()))
	var dec approvalView
	r.decode(t, &dec)
	if r.status != 200 || dec.Status != "approved" || dec.TxHash == "" || dec.ID != held.ApprovalID {
		t.Fatalf("approve = %d %s", r.status, r.body)
	}
	e.waitMined(t, dec.TxHash)
	if r := e.do("POST", path, e.key, o.decision(alice.ID, held.ApprovalID, false, clock.Now().Add(-time.Second))); r.status != 409 {
		t.Fatalf("second decision = %d %s", r.status, r.body)
	}
	if sys := systemMessages(conv); len(sys) != 1 || !strings.Contains(sys[0], dec.TxHash) || !strings.Contains(sys[0], "approved") {
		t.Fatalf("system messages = %q", sys)
	}

	// Denied: nothing paid, recorded.
	held2, conv2 := hold("send 0.03 ETH to payee")
	r = e.do("POST", base+"/"+held2.ApprovalID, e.key, o.decision(alice.ID, held2.ApprovalID, true, clock.Now()))
	if r.status != 200 || !strings.Contains(string(r.body), `"status":"denied"`) || strings.Contains(string(r.body), "txHash") {
		t.Fatalf("deny = %d %s", r.status, r.body)
	}
	if sys := systemMessages(conv2); len(sys) != 1 || !strings.Contains(sys[0], "denied") {
		t.Fatalf("system messages after denial = %q", sys)
	}

	// Concurrent decisions: each with its own valid signature; exactly
	// one wins, the payment is made once.
	held3, _ := hold("send 0.04 ETH to payee")
	const n = 6
	var wg sync.WaitGroup
	statuses := make([]int, n)
	bodies := make([]string, n)
	for i := 0; i < n; i++ {
		body := o.decision(alice.ID, held3.ApprovalID, i%2 == 1, clock.Now().Add(-time.Duration(i)*time.Second))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := e.do("POST", base+"/"+held3.ApprovalID, e.key, body)
			statuses[i], bodies[i] = r.status, string(r.body)
		}(i)
	}
	wg.Wait()
	wins := 0
	for i, s := range statuses {
		switch s {
		case 200:
			wins++
		case 409:
		default:
			t.Errorf("decision %d = %d %s", i, s, bodies[i])
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won: %v", wins, statuses)
	}

	// A crash right after the approved payment was broadcast: the
	// reminder runs it again and the chain's ledger answers the same
	// transaction; one payment, one outcome.
	held4, conv4 := hold("send 0.045 ETH to payee")
	crash.Store(true)
	if r := e.do("POST", base+"/"+held4.ApprovalID, e.key, o.decision(alice.ID, held4.ApprovalID, false, clock.Now())); r.status != 500 {
		t.Fatalf("approve with a crash = %d %s", r.status, r.body)
	}
	rem := reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	clock.Advance(2 * time.Minute)
	if _, err := rem.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	var after approvalView
	e.do("GET", base+"/"+held4.ApprovalID, e.key, nil).decode(t, &after)
	if after.Status != "approved" || after.TxHash == "" || after.Error != "" {
		t.Fatalf("after the crash and the reminder: %+v", after)
	}
	e.waitMined(t, after.TxHash)
	if sys := systemMessages(conv4); len(sys) != 1 || !strings.Contains(sys[0], after.TxHash) {
		t.Fatalf("system messages after the crash = %q", sys)
	}
	if _, err := rem.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sys := systemMessages(conv4); len(sys) != 1 {
		t.Fatalf("a second reminder pass recorded more: %q", sys)
	}

	// Expiry: nobody decides; the reminder expires it with a
	// notification, and a late decision is a 409.
	held5, conv5 := hold("send 0.05 ETH to payee")
	clock.Advance(2*time.Hour + time.Minute)
	if _, err := rem.RunDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", base+"/"+held5.ApprovalID, e.key, nil); !strings.Contains(string(r.body), `"status":"expired"`) {
		t.Fatalf("after expiry: %s", r.body)
	}
	e.do("GET", "/agent/"+alice.ID+"/notifications", e.key, nil).decode(t, &inbox)
	if inbox.Notifications[0].Type != agent.NoteApprovalExpired {
		t.Fatalf("latest notification = %+v", inbox.Notifications[0])
	}
	if sys := systemMessages(conv5); len(sys) != 1 || !strings.Contains(sys[0], "expired") {
		t.Fatalf("system messages after expiry = %q", sys)
	}
	if r := e.do("POST", base+"/"+held5.ApprovalID, e.key, o.decision(alice.ID, held5.ApprovalID, false, clock.Now())); r.status != 409 {
		t.Fatalf("decision after expiry = %d %s", r.status, r.body)
	}

	// The caps still apply when an approved payment runs: the policy is
	// tightened while a payment waits, and the approval cannot pay it.
	held6, _ := hold("send 0.03 ETH to payee")
	tight := p
	tight.PerTransaction = map[string]string{"ETH": "0.02"}
	if r := e.do("PUT", "/agent/"+alice.ID+"/policy", e.key, o.policyBodyAt(t, alice.ID, tight, clock.Now())); r.status != 200 {
		t.Fatalf("tighten = %d %s", r.status, r.body)
	}
	r = e.do("POST", base+"/"+held6.ApprovalID, e.key, o.decision(alice.ID, held6.ApprovalID, false, clock.Now()))
	if r.status != 200 || !strings.Contains(string(r.body), "per payment") || strings.Contains(string(r.body), "txHash") {
		t.Fatalf("approve over the new cap = %d %s", r.status, r.body)
	}

	var all []approvalView
	e.do("GET", base, e.key, nil).decode(t, &all)
	if len(all) != 6 {
		t.Fatalf("%d approvals, want 6", len(all))
	}
}

// approveNewRecipients holds the first payment to a recipient and not the
// next; a scheduled run is held the same way, and its approval's outcome
// lands in the conversation that created the schedule.
func TestApprovalsNewRecipientsAndSchedules(t *testing.T) {
	clock := &fakeclock.Offset{} // the agents' clock: real time plus an offset the test moves
	e := newEnv(t, envOptions{evm: true, agentNow: clock.Now})
	o := newEVMOwner(t)
	alice := e.create(t, o, "careful", "ethereum")
	e.create(t, newEVMOwner(t), "known", "ethereum")
	e.create(t, newEVMOwner(t), "newbie", "ethereum")
	p := policy.Policy{Approvals: policy.Approvals{ApproveNewRecipients: true}}
	if r := e.do("PUT", "/agent/"+alice.ID+"/policy", e.key, o.policyBodyAt(t, alice.ID, p, clock.Now())); r.status != 200 {
		t.Fatalf("set policy = %d %s", r.status, r.body)
	}
	base := "/agent/" + alice.ID + "/approvals/"
	chat := func(msg string) (agent.ToolCall, string) {
		t.Helper()
		r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": msg})
		if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
			t.Fatalf("%q = %d %s", msg, r.status, r.body)
		}
		return out.ToolCalls[0], out.ConversationID
	}
	call, _ := chat("send 0.001 ETH to known")
	var d heldDetail
	if err := json.Unmarshal([]byte(call.Detail), &d); err != nil || d.Status != "pending_approval" {
		t.Fatalf("first payment to a new recipient: %s", call.Detail)
	}
	if r := e.do("POST", base+d.ApprovalID, e.key, o.decision(alice.ID, d.ApprovalID, false, clock.Now())); r.status != 200 || !strings.Contains(string(r.body), "txHash") {
		t.Fatalf("approve = %d %s", r.status, r.body)
	}
	// Another amount: the same payment again would ask first (issue 32 item 4).
	if call, _ := chat("send 0.002 ETH to known"); !strings.Contains(call.Detail, "txHash") || strings.Contains(call.Detail, "approvalId") {
		t.Fatalf("second payment to the same recipient: %s", call.Detail)
	}

	_, conv := chat("pay newbie 0.001 ETH weekly")
	clock.Advance(7*24*time.Hour + time.Minute)
	rem := reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	rep, err := rem.RunDue(context.Background())
	if err != nil || rep.Held != 1 || rep.Paid != 0 {
		t.Fatalf("scheduled run: %+v %v", rep, err)
	}
	var pending []approvalView
	e.do("GET", "/agent/"+alice.ID+"/approvals?status=pending", e.key, nil).decode(t, &pending)
	if len(pending) != 1 || pending[0].Kind != "schedule" || pending[0].ConversationID != conv {
		t.Fatalf("pending = %+v", pending)
	}
	r := e.do("POST", base+pending[0].ID, e.key, o.decision(alice.ID, pending[0].ID, false, clock.Now()))
	var dec approvalView
	r.decode(t, &dec)
	if r.status != 200 || dec.TxHash == "" {
		t.Fatalf("approve the scheduled run = %d %s", r.status, r.body)
	}
	e.waitMined(t, dec.TxHash)
	var sys []string
	for _, m := range e.messages(t, alice.ID, conv) {
		if m.Role == "system" {
			sys = append(sys, m.Text)
		}
	}
	if len(sys) != 1 || !strings.Contains(sys[0], dec.TxHash) {
		t.Fatalf("system messages in the schedule's conversation = %q", sys)
	}
	var inbox agent.Inbox
	e.do("GET", "/agent/"+alice.ID+"/notifications", e.key, nil).decode(t, &inbox)
	if inbox.Notifications[0].Type != agent.NoteScheduleExecuted {
		t.Fatalf("latest notification = %+v", inbox.Notifications[0])
	}

	// The next slot: newbie is known now, so it is paid at once, and that
	// outcome is recorded in the schedule's conversation too.
	clock.Advance(7 * 24 * time.Hour)
	if rep, err := rem.RunDue(context.Background()); err != nil || rep.Paid != 1 || rep.Held != 0 {
		t.Fatalf("second scheduled run: %+v %v", rep, err)
	}
	sys = nil
	for _, m := range e.messages(t, alice.ID, conv) {
		if m.Role == "system" {
			sys = append(sys, m.Text)
		}
	}
	if len(sys) != 2 || !strings.Contains(sys[1], "Paid 0.001 ETH") {
		t.Fatalf("system messages after the second run = %q", sys)
	}
}

// A payment the spending policy refuses is refused, not held: the owner is
// never asked to approve what could not be paid.
func TestApprovalsDoNotHoldWhatThePolicyRefuses(t *testing.T) {
	e := newEnv(t, envOptions{evm: true})
	o := newEVMOwner(t)
	alice := e.create(t, o, "strict", "ethereum")
	e.create(t, newEVMOwner(t), "frank", "ethereum")
	e.create(t, newEVMOwner(t), "mallory", "ethereum")
	p := policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0"}},
		PerTransaction: map[string]string{"ETH": "0.01"}, Allowlist: []string{"frank"}}
	if r := e.do("PUT", "/agent/"+alice.ID+"/policy", e.key, o.policyBody(t, alice.ID, p)); r.status != 200 {
		t.Fatalf("set policy = %d %s", r.status, r.body)
	}
	for msg, want := range map[string]string{
		"send 0.02 ETH to frank":    "per payment",
		"send 0.001 ETH to mallory": "allowlist",
	} {
		r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": msg})
		if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "error" || !strings.Contains(out.ToolCalls[0].Detail, want) {
			t.Fatalf("%q = %d %s", msg, r.status, r.body)
		}
	}
	r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": "send 0.001 ETH to frank"})
	if r.status != 200 || len(out.ToolCalls) != 1 || !strings.Contains(out.ToolCalls[0].Detail, "pending_approval") {
		t.Fatalf("within the policy = %d %s", r.status, r.body)
	}
	var all []approvalView
	e.do("GET", "/agent/"+alice.ID+"/approvals", e.key, nil).decode(t, &all)
	if len(all) != 1 {
		t.Fatalf("%d approvals, want 1", len(all))
	}
}
