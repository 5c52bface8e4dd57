//go:build !nodevnet

package httpapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/veilhq/veil/agent/tools"
)

// tsInteropDir holds the TypeScript client of TestMCPTypeScriptClient
// (package.json and package-lock.json are committed; node_modules is not).
const tsInteropDir = "testdata/mcp-ts"

// needNode answers the node binary, installing the interop's packages
// with `npm ci` when node_modules is missing. Without node the test is
// skipped, except in CI, where it fails.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed: CI must run the TypeScript MCP interop test")
		}
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(tsInteropDir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = tsInteropDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", tsInteropDir, err, out)
		}
	}
	return node
}

// TestMCPTypeScriptClient: the official TypeScript SDK client
// (@modelcontextprotocol/sdk) initializes with an agent's MCP endpoint,
// lists its tools with their schemas, reads its balance and pays another
// agent on the devnet.
func TestMCPTypeScriptClient(t *testing.T) {
	node := needNode(t)
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "tsalice", "ethereum")
	e.create(t, newEVMOwner(t), "tsbob", "ethereum")

	cmd := exec.Command(node, "interop.mjs")
	cmd.Dir = tsInteropDir
	cmd.Env = append(os.Environ(), "VEIL_MCP_URL="+e.url+"/agent/"+a.ID+"/mcp", "VEIL_API_KEY="+e.key, "VEIL_PAY_TO=tsbob")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node interop.mjs: %v\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
	}
	var out struct {
		Server         string         `json:"server"`
		Tools          []string       `json:"tools"`
		PayAgentSchema map[string]any `json:"payAgentSchema"`
		Balance        struct {
			IsError bool                `json:"isError"`
			Result  tools.BalanceResult `json:"result"`
		} `json:"balance"`
		Pay struct {
			IsError bool `json:"isError"`
			Result  struct {
				TxHash string `json:"txHash"`
				Chain  string `json:"chain"`
			} `json:"result"`
		} `json:"pay"`
		Resources []string `json:"resources"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("decode %s: %v", stdout.String(), err)
	}
	var want []string
	var payAgent tools.Tool
	for _, tl := range tools.All() {
		want = append(want, tl.Name)
		if tl.Name == "pay_agent" {
			payAgent = tl
		}
	}
	// Beside the agent's tools, the MCP server's own read tools over the
	// payment records (mcp_lists.go).
	want = append(want, "get_payment", "list_payments", "list_received_payments")
	sort.Strings(want)
	gotSchema, _ := json.Marshal(out.PayAgentSchema)
	wantSchema, _ := json.Marshal(payAgent.Parameters)
	switch {
	case out.Server != "veil-agent-tsalice":
		t.Fatalf("server %q", out.Server)
	case len(out.Tools) != len(want) || out.Tools[0] != want[0]:
		t.Fatalf("tools %v, want %v", out.Tools, want)
	case string(gotSchema) != string(wantSchema):
		t.Fatalf("pay_agent schema %s, want %s", gotSchema, wantSchema)
	case out.Balance.IsError || len(out.Balance.Result.Balances) != 1 || out.Balance.Result.Balances[0].Address != a.Address:
		t.Fatalf("balance %+v", out.Balance)
	case out.Pay.IsError || out.Pay.Result.TxHash == "" || out.Pay.Result.Chain != "ethereum":
		t.Fatalf("pay %+v", out.Pay)
	case len(out.Resources) != 3:
		t.Fatalf("resources %v", out.Resources)
	}
	e.waitMined(t, out.Pay.Result.TxHash)
}
