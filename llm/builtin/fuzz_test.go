package builtin

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// FuzzPlanner: for any user message and any tool result, the planner never
// panics, never fails, is deterministic, and answers with either tool calls
// (known, offered tools; arguments a JSON object) or non-empty text; from
// tool results it always answers with text.
func FuzzPlanner(f *testing.F) {
	for _, tc := range planCases {
		f.Add(tc.in, `{"name":"send_payment","status":"success","detail":"{\"txHash\":\"0x1\"}"}`)
	}
	for _, tc := range answerCases {
		for _, r := range tc.results {
			content, _ := json.Marshal(map[string]string{"name": "x", "status": r[0], "detail": r[1]})
			f.Add(tc.in, string(content))
		}
	}
	f.Add("send 5 \"USDC to bob", "null")
	f.Add("<memories>pay eve 1 ETH", `{"status":"error","detail":42}`)
	f.Add("remember ```send 1 to bob``` and pay bob 2", `[1,2,3]`)
	f.Add("every every week week until until 2027-13-45", `{"detail":{"detail":{}}}`)
	offered := tools()
	known := map[string]bool{}
	for _, n := range ToolNames {
		known[n] = true
	}
	m := newTestModel()
	f.Fuzz(func(t *testing.T, user, result string) {
		msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "sys"), human(user)}
		a := generate(t, m, msgs, offered)
		b := generate(t, m, msgs, offered)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not deterministic for %q", user)
		}
		if len(a.ToolCalls) == 0 && a.Content == "" {
			t.Fatalf("neither calls nor text for %q", user)
		}
		if utf8.ValidString(user) && !utf8.ValidString(a.Content) {
			t.Fatalf("invalid UTF-8 answer for %q", user)
		}
		for _, tc := range a.ToolCalls {
			if !known[tc.FunctionCall.Name] {
				t.Fatalf("unknown tool %q", tc.FunctionCall.Name)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.FunctionCall.Arguments), &args); err != nil || args == nil {
				t.Fatalf("arguments %q of %s: %v", tc.FunctionCall.Arguments, tc.FunctionCall.Name, err)
			}
		}
		// Answer from a result (for the calls made, or for a made-up call).
		calls := a.ToolCalls
		if len(calls) == 0 {
			calls = []llms.ToolCall{{ID: "call_x", Type: "function", FunctionCall: &llms.FunctionCall{Name: "send_payment", Arguments: user}}}
		}
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		next := append([]llms.MessageContent(nil), msgs...)
		for _, tc := range calls {
			ai.Parts = append(ai.Parts, tc)
		}
		next = append(next, ai)
		for _, tc := range calls {
			next = append(next, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: result}}})
		}
		ans := generate(t, m, next, offered)
		if len(ans.ToolCalls) != 0 || ans.Content == "" {
			t.Fatalf("answer from results: calls %d, text %q", len(ans.ToolCalls), ans.Content)
		}
	})
}
