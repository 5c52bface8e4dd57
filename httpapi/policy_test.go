package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains/walletsig"
)

func (o owner) policyBody(t *testing.T, agentID string, p policy.Policy) map[string]any {
	t.Helper()
	hash, err := policy.Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	msg := walletsig.PolicyMessage(hash, agentID, o.wallet(), time.Now())
	return map[string]any{"policy": p, "signature": o.sign(msg), "message": msg}
}

// The owner's policy is enforced in the enclave before it signs: a payment
// over the cap or to someone off the allowlist is a tool error the model
// can explain, and nothing is paid.
func TestSpendingPolicy(t *testing.T) {
	e := newEnv(t, envOptions{evm: true})
	o := newEVMOwner(t)
	alice := e.create(t, o, "spender", "ethereum")
	e.create(t, newEVMOwner(t), "bob", "ethereum")
	e.create(t, newEVMOwner(t), "carol", "ethereum")
	p := policy.Policy{PerTransaction: map[string]string{"ETH": "0.01"}, Daily: map[string]string{"ETH": "0.015"}, Allowlist: []string{"bob"}}
	path := "/agent/" + alice.ID + "/policy"

	// An API key alone cannot set it.
	if r := e.do("PUT", path, e.key, map[string]any{"policy": p}); r.status != 400 {
		t.Fatalf("unsigned policy = %d %s", r.status, r.body)
	}
	// Signed by someone else: 400. By another account's key: 404.
	if r := e.do("PUT", path, e.key, newEVMOwner(t).policyBody(t, alice.ID, p)); r.status != 400 {
		t.Fatalf("stranger's signature = %d", r.status)
	}
	body := o.policyBody(t, alice.ID, p)
	if r := e.do("PUT", path, e.newKey("other"), body); r.status != 404 {
		t.Fatalf("foreign account = %d", r.status)
	}
	// The signed hash must be of this exact policy.
	looser := map[string]any{"policy": policy.Policy{PerTransaction: map[string]string{"ETH": "100"}}, "signature": body["signature"], "message": body["message"]}
	if r := e.do("PUT", path, e.key, looser); r.status != 400 {
		t.Fatalf("signature of another policy = %d", r.status)
	}
	r := e.do("PUT", path, e.key, body)
	if r.status != 200 || !strings.Contains(string(r.body), `"hash"`) {
		t.Fatalf("set policy = %d %s", r.status, r.body)
	}
	if r := e.do("PUT", path, e.key, body); r.status != 400 {
		t.Fatalf("replayed policy signature = %d", r.status)
	}

	chat := func(msg string) (string, string) {
		t.Helper()
		r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": msg})
		if r.status != 200 || len(out.ToolCalls) != 1 {
			t.Fatalf("%q = %d %s", msg, r.status, r.body)
		}
		return out.ToolCalls[0].Status, out.ToolCalls[0].Detail
	}
	if status, detail := chat("send 0.02 ETH to bob"); status != "error" || !strings.Contains(detail, "spending policy") {
		t.Fatalf("over the cap: %s %s", status, detail)
	}
	if status, detail := chat("send 0.005 ETH to carol"); status != "error" || !strings.Contains(detail, "allowlist") {
		t.Fatalf("off the allowlist: %s %s", status, detail)
	}
	if status, detail := chat("send 0.01 ETH to bob"); status != "success" {
		t.Fatalf("within the policy: %s %s", status, detail)
	}
	if status, detail := chat("send 0.01 ETH to bob"); status != "error" || !strings.Contains(detail, "daily budget") {
		t.Fatalf("over the daily budget: %s %s", status, detail)
	}
	var view struct {
		Policy *policy.Policy
		Hash   string
	}
	e.do("GET", path, e.key, nil).decode(t, &view)
	if view.Policy == nil || view.Policy.PerTransaction["ETH"] != "0.01" || len(view.Hash) != 64 {
		t.Fatalf("GET policy = %+v", view)
	}
}
