package httpapi_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains/walletsig"
)

// heldApproval makes an agent whose policy holds every ETH payment, holds
// one, and answers the agent's id and the approval's id (for fuzzing the
// decision with a real pending approval).
func heldApproval(e *env) (agentID, approvalID string) {
	o := newEVMOwner(e.t)
	r := e.do("POST", "/agent/create", e.key, o.createBody("fuzzhold", "ethereum"))
	var a struct{ ID string }
	_ = json.Unmarshal(r.body, &a)
	e.do("POST", "/agent/create", e.key, newEVMOwner(e.t).createBody("fuzzpayee", "ethereum"))
	p := policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0"}}}
	hash, _ := policy.Hash(p)
	msg := walletsig.PolicyMessage(hash, a.ID, o.wallet(), time.Now())
	e.do("PUT", "/agent/"+a.ID+"/policy", e.key, map[string]any{"policy": p, "message": msg, "signature": o.sign(msg)})
	e.do("POST", "/agent/"+a.ID+"/chat", e.key, map[string]string{"message": "send 0.001 ETH to fuzzpayee"})
	var list []struct{ ID string }
	_ = json.Unmarshal(e.do("GET", "/agent/"+a.ID+"/approvals", e.key, nil).body, &list)
	if len(list) != 1 {
		e.t.Fatalf("no approval to fuzz: %+v", list)
	}
	return a.ID, list[0].ID
}

func FuzzDecideApprovalBody(f *testing.F) {
	fuzzBody(f, "POST", func(e *env, _ string) string {
		agentID, id := heldApproval(e)
		return "/agent/" + agentID + "/approvals/" + id
	},
		`{"decision":"approve","signature":"0x00","message":"Veil wants you to approve payment x of agent y.\nWallet: 0x\nIssued At: 2026-01-01T00:00:00Z"}`,
		`{"decision":"deny"}`, `{"decision":"yes","message":"","signature":""}`, `{}`, `[]`, `{"decision":null}`)
}

func FuzzWebhookBody(f *testing.F) {
	fuzzBody(f, "POST", func(*env, string) string { return "/webhooks" },
		`{"url":"https://example.com/hook","events":["payment_sent"]}`, `{"url":"http://127.0.0.1/"}`,
		`{"url":"http://[::ffff:169.254.169.254]/","agentId":"x"}`, `{"url":"https://example.com","events":[1]}`, `{}`)
}

func FuzzPolicyPreviewBody(f *testing.F) {
	fuzzBody(f, "POST", func(_ *env, id string) string { return "/agent/" + id + "/policy/preview" },
		`{"policy":{"approvalAbove":{"ETH":"0.5"},"approveNewRecipients":true,"approvalExpiry":"2h"}}`,
		`{"policy":{"approvalExpiry":"-1h"}}`, `{"policy":{"approvalAbove":{"eth":"0"}}}`, `{"policy":null}`)
}
