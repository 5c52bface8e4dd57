//go:build !nodevnet

package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/client"
)

// TestMCPReadTools: over real HTTP, an MCP client pays another agent on
// the devnet with pay_agent, then finds that payment with list_payments
// (filtered by chain and status) and reads it with get_payment; a payment
// to it found by the scanner is listed by list_received_payments; bad
// arguments and an unknown payment are tool errors, and the tools are
// marked read-only.
func TestMCPReadTools(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "reader", "ethereum")
	payee := e.create(t, newEVMOwner(t), "payee", "ethereum")
	s, err := e.mcpSession(t, a.ID, e.key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	listed, err := s.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := 0
	for _, tl := range listed.Tools {
		if (tl.Name == "list_payments" || tl.Name == "get_payment" || tl.Name == "list_received_payments") && tl.Annotations != nil && tl.Annotations.ReadOnlyHint {
			readOnly++
		}
		// The agent's tools carry the hint exactly when they only read
		// (tools.Tool.ReadOnly).
		if at, ok := tools.ByName(tl.Name); ok && at.ReadOnly != (tl.Annotations != nil && tl.Annotations.ReadOnlyHint) {
			t.Errorf("%s: readOnlyHint %v, want %v", tl.Name, tl.Annotations, at.ReadOnly)
		}
	}
	if readOnly != 3 {
		t.Fatalf("%d read-only payment tools listed, want 3", readOnly)
	}

	page := func(args map[string]any) client.PaymentPage {
		t.Helper()
		out, failed := callTool(t, s, "list_payments", args, nil)
		var p client.PaymentPage
		if failed || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("list_payments %v = %v %s", args, failed, out)
		}
		return p
	}
	if p := page(map[string]any{}); len(p.Payments) != 0 || p.Payments == nil {
		t.Fatalf("before paying: %+v", p)
	}
	out, failed := callTool(t, s, "pay_agent", map[string]any{"agent_name": "payee", "amount": "0.002", "asset": "ETH"}, nil)
	if failed {
		t.Fatalf("pay_agent: %s", out)
	}
	p := page(map[string]any{"chain": "ethereum", "limit": 10})
	if len(p.Payments) != 1 || p.Payments[0].Amount != "0.002" || p.Payments[0].Source.Type != "mcp" || p.Payments[0].TxHash == "" {
		t.Fatalf("after paying: %+v", p)
	}
	if !strings.Contains(out, p.Payments[0].TxHash) {
		t.Fatalf("pay_agent's result %s does not name the listed transaction %s", out, p.Payments[0].TxHash)
	}
	if q := page(map[string]any{"status": "refused"}); len(q.Payments) != 0 {
		t.Fatalf("refused: %+v", q)
	}
	one, failed := callTool(t, s, "get_payment", map[string]any{"payment_id": p.Payments[0].ID}, nil)
	var rec client.PaymentRecord
	if failed || json.Unmarshal([]byte(one), &rec) != nil || rec.ID != p.Payments[0].ID || rec.Recipient.Name == "" {
		t.Fatalf("get_payment = %v %s", failed, one)
	}

	// Received: the payee pays the reader in chat; once the scanner has
	// found it, list_received_payments lists it.
	received := func(args map[string]any) client.ReceivedPage {
		t.Helper()
		out, failed := callTool(t, s, "list_received_payments", args, nil)
		var p client.ReceivedPage
		if failed || json.Unmarshal([]byte(out), &p) != nil {
			t.Fatalf("list_received_payments %v = %v %s", args, failed, out)
		}
		return p
	}
	if p := received(map[string]any{}); p.Payments == nil || len(p.Payments) != 0 {
		t.Fatalf("received before: %+v", p)
	}
	if _, status, detail := e.tool(t, payee.ID, "send 0.003 ETH to reader"); status != "success" {
		t.Fatalf("payee pays: %s %s", status, detail)
	}
	if _, err := e.newScannerOnce(t).ScanOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if p := received(map[string]any{"chain": "ethereum", "status": "held", "limit": 5}); len(p.Payments) != 1 || p.Payments[0].Amount != "0.003" || p.Payments[0].Asset != "ETH" || p.Payments[0].TxHash == "" {
		t.Fatalf("received after: %+v", p)
	}

	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"list_payments", map[string]any{"status": "sent"}, `status \"sent\" is not one of`},
		{"list_payments", map[string]any{"limit": 1000}, "limit"},
		{"list_payments", map[string]any{"cursor": "nope"}, "cursor is not one this API gave out"},
		{"get_payment", map[string]any{"payment_id": "00000000-0000-7000-8000-000000000000"}, "payment not found"},
		{"get_payment", map[string]any{"payment_id": "x"}, "payment not found"},
		{"list_received_payments", map[string]any{"status": "confirmed"}, `status \"confirmed\" is not one of held, withdrawn`},
		{"list_received_payments", map[string]any{"chain": "mars"}, "chain"},
		{"list_received_payments", map[string]any{"cursor": "nope"}, "cursor is not one this API gave out"},
		{"list_received_payments", map[string]any{"limit": 0.5}, "arguments"},
	} {
		out, failed := callTool(t, s, c.tool, c.args, nil)
		if !failed || !strings.Contains(out, c.want) {
			t.Fatalf("%s %v = %v %s, want an error with %q", c.tool, c.args, failed, out, c.want)
		}
	}
}
