package main

import (
	"testing"

	"github.com/veilhq/veil/client"
)

// A payment on its way with its outcome unknown ends chat with its own
// exit status (8), distinct from a failed payment (7) and success.
func TestChatExitStatusOfAPendingPayment(t *testing.T) {
	cases := []struct {
		name string
		tc   client.ToolCall
		want int
	}{
		{"sent", client.ToolCall{Name: "send_payment", Status: client.ToolSuccess, Detail: `{"status":"broadcast","paymentId":"p1","txHash":"0x1"}`}, exitOK},
		{"pending", client.ToolCall{Name: "send_payment", Status: client.ToolSuccess, Detail: `{"status":"pending","paymentId":"p1"}`}, exitPending},
		{"held", client.ToolCall{Name: "pay_invoice", Status: client.ToolSuccess, Detail: `{"status":"pending_approval","approvalId":"a1"}`}, exitOK},
		{"failed", client.ToolCall{Name: "send_payment", Status: "error", Detail: `{"error":"insufficient funds"}`}, exitPayment},
		{"not a payment", client.ToolCall{Name: "get_balance", Status: client.ToolSuccess, Detail: `{"status":"pending"}`}, exitOK},
	}
	for _, c := range cases {
		err := failedPayment(&client.ChatResponse{ToolCalls: []client.ToolCall{c.tc}})
		if got := exitCode(err); got != c.want {
			t.Errorf("%s: exit %d (%v), want %d", c.name, got, err, c.want)
		}
	}
}
