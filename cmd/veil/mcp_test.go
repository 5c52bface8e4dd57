package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPOverStdio: `veil mcp AGENT` is an MCP server on stdio proxying
// to a real veild. The Go SDK's client runs the real binary as a desktop
// client does, lists the agent's tools and resources, reads its balance
// and pays another agent on veild's devnet; a payment with the same
// idempotency key in _meta pays once through the proxy.
func TestMCPOverStdio(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)
	for _, name := range []string{"stdioalice", "stdiobob"} {
		k, _ := crypto.GenerateKey()
		ok(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(k))), "agent", "create", name, "--chain", "base")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(veilBin, "mcp", "stdioalice")
	cmd.Env = env
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil)
	sess, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	defer sess.Close()
	if got := sess.InitializeResult().ServerInfo.Name; got != "veil-agent-stdioalice" {
		t.Fatalf("server %q", got)
	}
	tl, err := sess.ListTools(ctx, nil)
	if err != nil || len(tl.Tools) < 10 {
		t.Fatalf("tools: %v %v", tl, err)
	}
	call := func(name string, args map[string]any, meta mcp.Meta) (string, bool) {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil || len(res.Content) != 1 {
			t.Fatalf("%s: %v %v; stderr: %s", name, res, err, stderr.String())
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	if out, failed := call("get_balance", map[string]any{}, nil); failed || !strings.Contains(out, `"chain":"base"`) {
		t.Fatalf("get_balance = %v %s", failed, out)
	}
	type paid struct {
		TxHash string `json:"txHash"`
	}
	pay := func() paid {
		t.Helper()
		out, failed := call("pay_agent", map[string]any{"agent_name": "stdiobob", "amount": "0.001", "asset": "ETH"}, mcp.Meta{"idempotencyKey": "stdio-1"})
		var p paid
		if failed || json.Unmarshal([]byte(out), &p) != nil || p.TxHash == "" {
			t.Fatalf("pay_agent = %v %s", failed, out)
		}
		return p
	}
	if p1, p2 := pay(), pay(); p1.TxHash != p2.TxHash {
		t.Fatalf("the same idempotency key paid twice: %s %s", p1.TxHash, p2.TxHash)
	}
	rl, err := sess.ListResources(ctx, nil)
	if err != nil || len(rl.Resources) != 3 {
		t.Fatalf("resources: %v %v", rl, err)
	}
	rr, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: rl.Resources[0].URI})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text == "" {
		t.Fatalf("read %s: %v %v", rl.Resources[0].URI, rr, err)
	}

	// An unknown agent: the not-found exit code, before any MCP is spoken
	// (nothing on stdout for the MCP client to misread).
	r := veil(t, env, "", "mcp", "nobody")
	if r.code != exitNotFound || r.stdout != "" {
		t.Fatalf("mcp nobody: %s", r)
	}
}
