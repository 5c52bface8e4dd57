package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// fuzzBody drives one endpoint's decoder with arbitrary bodies through the
// whole router (auth, body cap, handler, agent actor): whatever arrives,
// the answer is never a 5xx, and every error is in the spec's format.
func fuzzBody(f *testing.F, method string, path func(e *env, agentID string) string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	e := newEnv(f, envOptions{})
	owner := newEVMOwner(f)
	r := e.do("POST", "/agent/create", e.key, owner.createBody("fuzzed", "ethereum"))
	var a struct{ ID string }
	_ = json.Unmarshal(r.body, &a)
	target := path(e, a.ID)
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(method, target, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.key)
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q = %d %s", method, target, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			var eb struct {
				Message    *string `json:"message"`
				StatusCode *int    `json:"statusCode"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Message == nil || eb.StatusCode == nil || *eb.StatusCode != rec.Code {
				t.Fatalf("%d without the error format: %s", rec.Code, rec.Body.Bytes())
			}
		}
	})
}

func FuzzCreateAgentBody(f *testing.F) {
	fuzzBody(f, "POST", func(*env, string) string { return "/agent/create" },
		`{"name":"alice","chain":"ethereum","wallet":"0x0000000000000000000000000000000000000001","signature":"0x00"}`,
		`{"name":"a","name":"b"}`, `{"chain":"all","message":"Veil wants you to create agent x.veil on all.\nWallet: G"}`, `[]`, `null`, `{"name":1e999}`)
}

func FuzzChatBody(f *testing.F) {
	fuzzBody(f, "POST", func(_ *env, id string) string { return "/agent/" + id + "/chat" },
		`{"message":"hello"}`, `{"message":"send 1 ETH to bob","conversationId":"x"}`, `{"message":""}`, `{"message":"show my invoices"}`)
}

func FuzzExportBody(f *testing.F) {
	fuzzBody(f, "POST", func(_ *env, id string) string { return "/agent/" + id + "/export" },
		`{"signature":"0x00","message":"Veil wants you to export the private key of agent x.\nWallet: 0x\nIssued At: 2026-01-01T00:00:00Z"}`, `{}`)
}

func FuzzPolicyBody(f *testing.F) {
	fuzzBody(f, "PUT", func(_ *env, id string) string { return "/agent/" + id + "/policy" },
		`{"policy":{"perTransaction":{"ETH":"1"},"daily":{"USDC":"5"},"allowlist":["bob"]},"signature":"0x00","message":"m"}`,
		`{"policy":{}}`, `{"policy":{"daily":{"ETH":"-1"}}}`, `{"policy":null}`)
}
