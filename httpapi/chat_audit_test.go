package httpapi_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/veilhq/veil/runtime/audit"
)

// A chat is one store commit with its audit record when it runs no tool,
// or only tools that read (issue 38 item 1): the turn writes the record
// with the answer. One that runs a tool that writes commits before it too. Every
// chat, answered or failed, leaves exactly one record, whose status is
// the answer's; a tool's chat names the tools it ran.
func TestChatCommitsOnceWithItsAuditRecord(t *testing.T) {
	var applies atomic.Int64
	e := newEnv(t, envOptions{applies: &applies})
	ids := agentsFor(t, e, 1)
	chat := "/agent/" + ids[0] + "/chat"
	for _, tc := range []struct {
		name    string
		body    map[string]any
		status  int
		commits int64
		detail  string
		outcome string
	}{
		{"no tool", map[string]any{"message": "hello"}, http.StatusOK, 1, "", audit.OutcomeOK},
		{"one read", map[string]any{"message": "show my agent info"}, http.StatusOK, 1, "tools: get_agent_info (success)", audit.OutcomeOK},
		// The user's message, the memory, the tool's outcome, the answer.
		{"one write", map[string]any{"message": "remember that I prefer USDC"}, http.StatusOK, 4, "tools: save_memory (success)", audit.OutcomeOK},
		{"unknown conversation", map[string]any{"message": "hello", "conversationId": "00000000-0000-4000-8000-000000000000"}, http.StatusNotFound, 1, "", audit.OutcomeFailed},
		{"empty message", map[string]any{"message": " "}, http.StatusBadRequest, 1, "", audit.OutcomeFailed},
	} {
		before := applies.Load()
		r := e.do("POST", chat, e.key, tc.body)
		if r.status != tc.status {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		if n := applies.Load() - before; n != tc.commits {
			t.Errorf("%s: %d commits, want %d", tc.name, n, tc.commits)
		}
		var mine []audit.Record
		for _, rec := range e.auditOf(e.key) {
			if rec.RequestID == r.header.Get("X-Request-Id") {
				mine = append(mine, rec)
			}
		}
		if len(mine) != 1 {
			t.Fatalf("%s: %d audit records of the request, want 1", tc.name, len(mine))
		}
		rec := mine[0]
		if rec.Status != tc.status || rec.Outcome != tc.outcome || rec.Action != "agent.chat" || rec.AgentID != ids[0] || rec.KeyID == "" {
			t.Errorf("%s: record %+v", tc.name, rec)
		}
		if tc.status == http.StatusOK && rec.Detail != tc.detail {
			t.Errorf("%s: detail %q, want %q", tc.name, rec.Detail, tc.detail)
		}
	}
	// The answer is the spec's ChatResponse: nothing of the audit in it.
	r := e.do("POST", chat, e.key, map[string]any{"message": "hello"})
	var body map[string]any
	r.decode(t, &body)
	if _, ok := body["audited"]; ok || len(body) != 2 {
		t.Errorf("chat answer %s: want response and conversationId only", r.body)
	}
}
