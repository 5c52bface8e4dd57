//go:build !nodevnet

package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/internal/faultproxy"
)

// The whole path of a payment whose broadcast answer is lost, over real
// HTTP against a devnet with internal/faultproxy between the connector
// and the node (issue 32 items 2, 3, 4 and 7): the chat says the payment
// is on its way (never "nothing was done"); the connector's maintenance
// finds it mined and settles it; the user is told "Payment confirmed"
// exactly once, by a notification and a system message in the
// conversation; the payment record is confirmed; and the same request
// typed again asks first instead of paying: one transfer on chain.
func TestChatPaymentAnswerLostThenConfirmedOnce(t *testing.T) {
	e := newEnv(t, envOptions{evm: true, evmFaults: true})
	alice := e.create(t, newEVMOwner(t), "lost-answer-payer", "ethereum")
	e.create(t, newEVMOwner(t), "lost-answer-payee", "ethereum")
	const ask = "send 0.003 ETH to lost-answer-payee"

	_, done := e.proxy.Arm(faultproxy.AnswerLost, faultproxy.BodyContains("eth_sendRawTransaction"))
	r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": ask})
	<-done
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "send_payment" {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	var pending struct {
		Status, PaymentID, TxHash string
	}
	if err := json.Unmarshal([]byte(out.ToolCalls[0].Detail), &pending); err != nil || pending.Status != "pending" || pending.PaymentID == "" {
		t.Fatalf("tool detail %s (%v); want status pending with the payment id", out.ToolCalls[0].Detail, err)
	}
	low := strings.ToLower(out.Response)
	if !strings.Contains(low, "on its way") || strings.Contains(low, "nothing was done") || strings.Contains(low, "nothing was sent") {
		t.Fatalf("reply %q; want the payment on its way, never nothing done", out.Response)
	}

	// The chain actor's maintenance finds the transaction mined and
	// settles it; the agent moves the record and tells the user.
	confirmed := func() int {
		n := 0
		for _, x := range e.inbox(t, alice.ID).Notifications {
			if strings.HasPrefix(x.Title, "Payment confirmed") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	for confirmed() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no confirmation within a minute; notifications %+v", e.inbox(t, alice.ID).Notifications)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var rec struct{ Status, TxHash string }
	if r := e.do("GET", "/agent/"+alice.ID+"/payments/"+pending.PaymentID, e.key, nil); r.status != 200 || json.Unmarshal(r.body, &rec) != nil ||
		rec.Status != "confirmed" || rec.TxHash == "" {
		t.Fatalf("payment record = %d %s", r.status, r.body)
	}
	e.waitMined(t, rec.TxHash)

	// Told once: one notification, one system message naming it.
	if n := confirmed(); n != 1 {
		t.Fatalf("%d 'Payment confirmed' notifications, want 1", n)
	}
	told := 0
	for _, m := range e.messages(t, alice.ID, out.ConversationID) {
		if m.Role == agent.RoleSystem && strings.Contains(m.Text, "is confirmed") && strings.Contains(m.Text, pending.PaymentID) {
			told++
		}
	}
	if told != 1 {
		t.Fatalf("%d system messages of the confirmation, want 1: %+v", told, e.messages(t, alice.ID, out.ConversationID))
	}

	// Typed again (a new request, a new key): it asks, nothing is sent.
	r, again := e.chat(t, alice.ID, e.key, map[string]string{"message": ask, "conversationId": out.ConversationID})
	if r.status != 200 || len(again.ToolCalls) != 1 || again.ToolCalls[0].Status == "success" {
		t.Fatalf("retyped = %d %s; want a question", r.status, r.body)
	}
	if !strings.Contains(again.Response, pending.PaymentID) || !strings.Contains(strings.ToLower(again.Response), "confirm") {
		t.Fatalf("retyped reply %q; want it to name payment %s and ask", again.Response, pending.PaymentID)
	}
	if n := sends(t, e.store); n != 1 {
		t.Fatalf("%d payments signed, want exactly 1", n)
	}
	if n := confirmed(); n != 1 {
		t.Fatalf("after the retyped request: %d 'Payment confirmed' notifications, want 1", n)
	}
}

// inbox reads GET /agent/:id/notifications.
func (e *env) inbox(t *testing.T, agentID string) agent.Inbox {
	t.Helper()
	var in agent.Inbox
	r := e.do("GET", "/agent/"+agentID+"/notifications", e.key, nil)
	if r.status != 200 {
		t.Fatalf("notifications = %d %s", r.status, r.body)
	}
	r.decode(t, &in)
	return in
}
