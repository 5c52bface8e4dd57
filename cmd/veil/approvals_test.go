package main

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/client"
)

// veil approvals list|approve|deny against a real veild on its devnets.
func TestApprovalCommands(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)
	key, _ := crypto.GenerateKey()
	owner := append(slices.Clone(env), "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(key)))
	ok(t, owner, "agent", "create", "holder", "--chain", "ethereum")
	other, _ := crypto.GenerateKey()
	ok(t, append(slices.Clone(env), "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(other))), "agent", "create", "payee", "--chain", "ethereum")

	c, err := client.New(s.url, s.key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ag, err := c.AgentByName(ctx, "holder")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetPolicySigned(ctx, ag.ID, map[string]any{"approvalAbove": map[string]string{"ETH": "0.0001"}}, client.NewEVMSigner(key)); err != nil {
		t.Fatal(err)
	}
	hold := func() string {
		t.Helper()
		r, err := c.Chat(ctx, ag.ID, client.ChatRequest{Message: "send 0.001 ETH to payee"})
		if err != nil || len(r.ToolCalls) != 1 || !strings.Contains(r.ToolCalls[0].Detail, "pending_approval") {
			t.Fatalf("chat: %+v %v", r, err)
		}
		l := decode[[]client.Approval](t, ok(t, env, "approvals", "holder", "--json").stdout)
		if len(l) == 0 || l[0].Status != client.ApprovalPending {
			t.Fatalf("pending: %+v", l)
		}
		return l[0].ID
	}

	id := hold()
	if r := ok(t, env, "approvals", "list", "holder"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "0.001 ETH") {
		t.Fatalf("table: %s", r)
	}
	// Without a wallet: a usage error, nothing decided.
	fails(t, env, 2, "approvals", "approve", "holder", id)
	if r := ok(t, owner, "approvals", "deny", "holder", id); !strings.Contains(r.stdout, "nothing was paid") {
		t.Fatalf("deny: %s", r)
	}
	// Decided once: a conflict (exit 5).
	fails(t, owner, 5, "approvals", "approve", "holder", id)

	id = hold()
	d := decode[client.ApprovalDecision](t, ok(t, owner, "approvals", "approve", "holder", id, "--json").stdout)
	if d.Status != client.ApprovalApproved || d.TxHash == "" {
		t.Fatalf("approve: %+v", d)
	}
	if l := decode[[]client.Approval](t, ok(t, env, "approvals", "holder", "--status", "all", "--json").stdout); len(l) != 2 {
		t.Fatalf("all: %+v", l)
	}
	fails(t, env, 2, "approvals", "holder", "--status", "maybe")
}
