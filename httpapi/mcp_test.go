//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/httpapi"
)

// bearer adds the API key to every request of the MCP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the official Go SDK's client to an agent's MCP
// endpoint over real HTTP.
func (e *env) mcpSession(t *testing.T, agentID, key string) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "veil-test", Version: "1"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:             e.url + "/agent/" + agentID + "/mcp",
		HTTPClient:           &http.Client{Transport: bearer{key}},
		DisableStandaloneSSE: true,
	}, nil)
}

// callTool calls a tool and returns its text result and whether it failed.
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) (string, bool) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s: %d contents", name, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("call %s: content %T", name, res.Content[0])
	}
	return text.Text, res.IsError
}

// nativeBalance reads the agent's ETH balance through the get_balance tool.
func nativeBalance(t *testing.T, s *mcp.ClientSession) string {
	t.Helper()
	out, failed := callTool(t, s, "get_balance", map[string]any{}, nil)
	var bal tools.BalanceResult
	if failed || json.Unmarshal([]byte(out), &bal) != nil || len(bal.Balances) != 1 || bal.Balances[0].Chain != "ethereum" {
		t.Fatalf("get_balance = %v %s", failed, out)
	}
	return bal.Balances[0].Native
}

// TestMCPAgentServer: an agent is an MCP server over streamable HTTP. The
// Go SDK's client initializes, lists the agent's tools with the chat's
// schemas, reads its balance, pays another agent on the devnet within the
// owner's policy, is refused (nothing moves) over it, is held for the
// owner's approval above its threshold, retries a payment
// with the same idempotency key without paying twice, and reads the
// agent's resources.
func TestMCPAgentServer(t *testing.T) {
	e := newMoneyEnv(t)
	o := newEVMOwner(t)
	a := e.create(t, o, "mcpalice", "ethereum")
	b := e.create(t, newEVMOwner(t), "mcpbob", "ethereum")
	s, err := e.mcpSession(t, a.ID, e.key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	if got := s.InitializeResult().ServerInfo.Name; got != "veil-agent-mcpalice" {
		t.Fatalf("server name %q", got)
	}
	listed, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tools.Tool{}
	for _, tl := range tools.All() {
		want[tl.Name] = tl
	}
	readTools := map[string]bool{"list_payments": true, "get_payment": true, "list_received_payments": true} // mcp_lists.go
	if len(listed.Tools) != len(want)+len(readTools) {
		t.Fatalf("%d tools listed, want %d", len(listed.Tools), len(want)+len(readTools))
	}
	for _, tl := range listed.Tools {
		w, ok := want[tl.Name]
		if !ok && readTools[tl.Name] {
			continue
		}
		if !ok {
			t.Fatalf("unexpected tool %s", tl.Name)
		}
		gotSchema, _ := json.Marshal(tl.InputSchema)
		wantSchema, _ := json.Marshal(w.Parameters)
		if string(gotSchema) != string(wantSchema) || tl.Description != w.Description {
			t.Fatalf("tool %s: schema %s, want %s", tl.Name, gotSchema, wantSchema)
		}
	}

	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"}})
	before := nativeBalance(t, s)

	// Over the policy: refused, naming the rule; nothing moved.
	out, failed := callTool(t, s, "pay_agent", map[string]any{"agent_name": "mcpbob", "amount": "0.02", "asset": "ETH"}, nil)
	if !failed || !strings.Contains(out, "per payment") {
		t.Fatalf("pay over policy = %v %s", failed, out)
	}
	if after := nativeBalance(t, s); after != before {
		t.Fatalf("a refused payment moved money: %s -> %s", before, after)
	}

	// No "stated amount" in a chat message is needed: the call is the
	// instruction. Within the policy it pays on the devnet.
	type paid struct {
		TxHash string `json:"txHash"`
		Chain  string `json:"chain"`
	}
	pay := func(amount string, meta mcp.Meta) paid {
		t.Helper()
		out, failed := callTool(t, s, "pay_agent", map[string]any{"agent_name": "mcpbob.veil", "amount": amount, "asset": "ETH"}, meta)
		var p paid
		if failed || json.Unmarshal([]byte(out), &p) != nil || p.TxHash == "" || p.Chain != "ethereum" {
			t.Fatalf("pay %s = %v %s", amount, failed, out)
		}
		return p
	}
	first := pay("0.005", nil)
	e.waitMined(t, first.TxHash)
	if after := nativeBalance(t, s); after == before {
		t.Fatalf("balance unchanged after paying: %s", after)
	}

	// The same idempotency key, tool and arguments: the first payment's
	// answer, not a second payment. Without a key, a new payment.
	k := mcp.Meta{httpapi.MetaIdempotencyKey: "invoice-77"}
	p1 := pay("0.001", k)
	p2 := pay("0.001", k)
	if p1.TxHash != p2.TxHash {
		t.Fatalf("a retry with the same key paid twice: %s, %s", p1.TxHash, p2.TxHash)
	}
	if p3 := pay("0.001", nil); p3.TxHash == p1.TxHash {
		t.Fatalf("a call without a key reused %s", p1.TxHash)
	}

	// The owner's approval rules hold a payment on this path too: the
	// result names the approval, nothing moves, and the owner sees it
	// pending.
	e.setPolicy(t, o, a.ID, policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"},
		Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.002"}}})
	held := nativeBalance(t, s)
	out, failed = callTool(t, s, "pay_agent", map[string]any{"agent_name": "mcpbob", "amount": "0.003", "asset": "ETH"}, nil)
	var h tools.PaymentHeld
	if failed || json.Unmarshal([]byte(out), &h) != nil || h.Status != tools.StatusPendingApproval || h.ApprovalID == "" {
		t.Fatalf("pay over the approval threshold = %v %s", failed, out)
	}
	if after := nativeBalance(t, s); after != held {
		t.Fatalf("a held payment moved money: %s -> %s", held, after)
	}
	if r := e.do("GET", "/agent/"+a.ID+"/approvals", e.key, nil); r.status != 200 || !strings.Contains(string(r.body), h.ApprovalID) {
		t.Fatalf("approvals = %d %s", r.status, r.body)
	}

	// Bad arguments are the tool's own validation error.
	if out, failed := callTool(t, s, "pay_agent", map[string]any{"agent_name": "mcpbob", "amount": "-1", "asset": "ETH"}, nil); !failed {
		t.Fatalf("negative amount = %s", out)
	}

	// Resources: info, balances, notifications.
	rl, err := s.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rl.Resources {
		uris = append(uris, r.URI)
	}
	sort.Strings(uris)
	base := "veil://agent/" + a.ID + "/"
	if strings.Join(uris, " ") != base+"balances "+base+"info "+base+"notifications" {
		t.Fatalf("resources %v", uris)
	}
	read := func(name string, v any) {
		t.Helper()
		r, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: base + name})
		if err != nil || len(r.Contents) != 1 {
			t.Fatalf("read %s: %v", name, err)
		}
		if err := json.Unmarshal([]byte(r.Contents[0].Text), v); err != nil {
			t.Fatalf("read %s: %v: %s", name, err, r.Contents[0].Text)
		}
	}
	var info httpapi.AgentInfo
	read("info", &info)
	if info.ID != a.ID || info.Name != "mcpalice" || info.Addresses["ethereum"] != a.Address {
		t.Fatalf("info %+v", info)
	}
	var bal tools.BalanceResult
	read("balances", &bal)
	if len(bal.Balances) != 1 || bal.Balances[0].Address != a.Address {
		t.Fatalf("balances %+v", bal)
	}
	var inbox struct {
		Notifications []struct {
			Type string `json:"type"`
		} `json:"notifications"`
	}
	read("notifications", &inbox)
	sent := 0
	for _, n := range inbox.Notifications {
		if strings.Contains(n.Type, "payment_sent") {
			sent++
		}
	}
	if sent != 3 {
		t.Fatalf("%d payment_sent notifications, want 3: %+v", sent, inbox)
	}
	_ = b
}

// TestMCPAuth: the MCP endpoint is behind the API key. No key is a 401 and
// another account's (or an unknown) agent a 404, both in the spec's error
// format, before any MCP message is handled.
func TestMCPAuth(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "mcpowned", "ethereum")
	other := e.newKey("someone-else")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	accept := []string{"Accept", "application/json, text/event-stream"}
	for _, tc := range []struct {
		name, path, key string
		status          int
	}{
		{"no key", "/agent/" + a.ID + "/mcp", "", 401},
		{"bad key", "/agent/" + a.ID + "/mcp", "vk_not-a-key", 401},
		{"another account's agent", "/agent/" + a.ID + "/mcp", other, 404},
		{"unknown agent", "/agent/00000000-0000-4000-8000-000000000000/mcp", e.key, 404},
		{"not an id", "/agent/mcpowned/mcp", e.key, 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doHeaders("POST", tc.path, tc.key, initBody, accept...)
			if r.status != tc.status {
				t.Fatalf("= %d %s, want %d", r.status, r.body, tc.status)
			}
			r.errorBody(t)
		})
	}
	// Stateless: a bare tools/call needs no earlier initialize.
	r := e.doHeaders("POST", "/agent/"+a.ID+"/mcp", e.key,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_balance","arguments":{}}}`, accept...)
	var rpc struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if r.status != 200 || jsonUnmarshal(r.body, &rpc) != nil || rpc.Result == nil {
		t.Fatalf("bare tools/call = %d %s", r.status, r.body)
	}
	// The Go SDK's client fails to connect to another account's agent.
	if s, err := e.mcpSession(t, a.ID, other); err == nil {
		s.Close()
		t.Fatal("connected to another account's agent")
	}
	// The owner's key initializes.
	s, err := e.mcpSession(t, a.ID, e.key)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}
