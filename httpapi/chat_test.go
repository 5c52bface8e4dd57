package httpapi_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/llm/llmtest"
)

type chatReply struct {
	Response       string           `json:"response"`
	ToolCalls      []agent.ToolCall `json:"toolCalls"`
	ConversationID string           `json:"conversationId"`
}

func (e *env) chat(t *testing.T, agentID, key string, body any, headers ...string) (response, chatReply) {
	t.Helper()
	r := e.doHeaders("POST", "/agent/"+agentID+"/chat", key, body, headers...)
	var out chatReply
	if r.status == 200 {
		r.decode(t, &out)
	}
	return r, out
}

func (e *env) messages(t *testing.T, agentID, convID string) []agent.Message {
	t.Helper()
	var msgs []agent.Message
	r := e.do("GET", "/agent/"+agentID+"/conversations/"+convID+"/messages", e.key, nil)
	if r.status != 200 {
		t.Fatalf("messages = %d %s", r.status, r.body)
	}
	r.decode(t, &msgs)
	return msgs
}

func TestChatWithoutToolsCreatesAndContinuesConversation(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "chatty", "ethereum")
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "hello there, what can you do for me today?"})
	if r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	if out.Response == "" || out.ToolCalls != nil || strings.Contains(string(r.body), "toolCalls") {
		t.Fatalf("reply = %s", r.body)
	}
	if _, err := uuid.Parse(out.ConversationID); err != nil {
		t.Fatalf("conversationId %q", out.ConversationID)
	}
	var convs []agent.Conversation
	e.do("GET", "/agent/"+a.ID+"/conversations", e.key, nil).decode(t, &convs)
	if len(convs) != 1 || convs[0].ID != out.ConversationID || convs[0].Title != "hello there, what can you do for me today?" {
		t.Fatalf("conversations = %+v", convs)
	}
	first := convs[0].UpdatedAt

	r, out2 := e.chat(t, a.ID, e.key, map[string]string{"message": "thanks", "conversationId": out.ConversationID})
	if r.status != 200 || out2.ConversationID != out.ConversationID {
		t.Fatalf("continue = %d %s", r.status, r.body)
	}
	msgs := e.messages(t, a.ID, out.ConversationID)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,agent,user,agent" || msgs[2].Text != "thanks" {
		t.Fatalf("messages = %+v", msgs)
	}
	e.do("GET", "/agent/"+a.ID+"/conversations", e.key, nil).decode(t, &convs)
	if !convs[0].UpdatedAt.After(first) {
		t.Fatalf("updatedAt did not advance: %v → %v", first, convs[0].UpdatedAt)
	}
}

func TestChatRejectsBadRequestsBeforeRunning(t *testing.T) {
	models := llmtest.NewOpenAIServer(t, nil, llmtest.Lenient())
	e := newEnv(t, envOptions{models: llm.Config{OpenAIBaseURL: models.URL}})
	a := e.create(t, newEVMOwner(t), "strict", "ethereum")
	other := e.newKey("other")
	cases := []struct {
		name    string
		key     string
		body    any
		headers []string
		status  int
	}{
		{"empty message", e.key, map[string]string{"message": "  "}, nil, 400},
		{"missing message", e.key, map[string]string{}, nil, 400},
		{"over-long message", e.key, map[string]string{"message": strings.Repeat("a", agent.MaxMessageRunes+1)}, nil, 400},
		{"unknown conversation", e.key, map[string]string{"message": "hi", "conversationId": uuid.NewString()}, nil, 404},
		{"malformed conversation", e.key, map[string]string{"message": "hi", "conversationId": "nope"}, nil, 404},
		{"unknown provider", e.key, map[string]string{"message": "hi"}, []string{"X-AI-Provider", "gemini"}, 400},
		{"openai without key", e.key, map[string]string{"message": "hi"}, []string{"X-AI-Provider", "openai"}, 400},
		{"foreign agent", other, map[string]string{"message": "hi"}, nil, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := e.chat(t, a.ID, tc.key, tc.body, tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status = %d, want %d: %s", r.status, tc.status, r.body)
			}
			r.errorBody(t)
		})
	}
	if models.Count() != 0 {
		t.Fatalf("the model was called %d times for rejected requests", models.Count())
	}
	// A foreign conversation: another agent's conversation id is a 404 too.
	b := e.create(t, newEVMOwner(t), "strict-two", "ethereum")
	_, out := e.chat(t, b.ID, e.key, map[string]string{"message": "hello"})
	if r, _ := e.chat(t, a.ID, e.key, map[string]string{"message": "hi", "conversationId": out.ConversationID}); r.status != 404 {
		t.Fatalf("foreign conversation = %d", r.status)
	}
	var convs []agent.Conversation
	e.do("GET", "/agent/"+a.ID+"/conversations", e.key, nil).decode(t, &convs)
	if len(convs) != 0 {
		t.Fatalf("rejected chats created conversations: %+v", convs)
	}
}

func TestChatToolLoopWithOpenAIProvider(t *testing.T) {
	models := llmtest.NewOpenAIServer(t, nil, llmtest.WithNext(func(i int, _ llmtest.Request) llmtest.Reply {
		switch i {
		case 0: // several tool calls in one response, one with malformed arguments
			return llmtest.Calls(
				llmtest.Call("get_agent_info", `{}`),
				llmtest.Call("save_memory", `{"content":"prefers USDC","type":"preference"}`),
				llmtest.Call("list_schedules", `{not json`),
			)
		case 1:
			return llmtest.Text("All done.")
		default:
			return llmtest.Text("ok")
		}
	}))
	e := newEnv(t, envOptions{models: llm.Config{OpenAIBaseURL: models.URL}})
	a := e.create(t, newEVMOwner(t), "tooly", "ethereum")
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "who am I, and remember I prefer USDC"},
		"X-AI-Provider", "openai", "X-AI-Key", llmtest.DefaultKey)
	if r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	if out.Response != "All done." || len(out.ToolCalls) != 3 {
		t.Fatalf("reply = %s", r.body)
	}
	want := []struct{ name, status string }{{"get_agent_info", "success"}, {"save_memory", "success"}, {"list_schedules", "error"}}
	for i, w := range want {
		tc := out.ToolCalls[i]
		if tc.Name != w.name || tc.Status != w.status || !json.Valid([]byte(tc.Detail)) {
			t.Fatalf("toolCalls[%d] = %+v", i, tc)
		}
	}
	// All three results went back to the model in one turn.
	reqs := models.Requests()
	if len(reqs) != 2 || len(reqs[1].ToolResults()) != 3 {
		t.Fatalf("requests %d, results in the second: %d", len(reqs), len(reqs[len(reqs)-1].ToolResults()))
	}
	// Stored: user, one tool message per call ({name,status,detail}), agent.
	msgs := e.messages(t, a.ID, out.ConversationID)
	if len(msgs) != 5 || msgs[0].Role != "user" || msgs[4].Role != "agent" {
		t.Fatalf("messages = %+v", msgs)
	}
	for _, m := range msgs[1:4] {
		var tc agent.ToolCall
		if m.Role != "tool" || json.Unmarshal([]byte(m.Text), &tc) != nil || tc.Name == "" || tc.Status == "" {
			t.Fatalf("tool message = %+v", m)
		}
	}
	// The saved memory reaches the next request's prompt as quoted data,
	// and the continued conversation's history comes with it.
	r, _ = e.chat(t, a.ID, e.key, map[string]string{"message": "and now?", "conversationId": out.ConversationID},
		"X-AI-Provider", "openai", "X-AI-Key", llmtest.DefaultKey)
	if r.status != 200 {
		t.Fatalf("second chat = %d %s", r.status, r.body)
	}
	third := models.Requests()[2]
	if !strings.Contains(third.System, "<memories>") || !strings.Contains(third.System, `"prefers USDC"`) {
		t.Fatalf("system prompt without the memory: %q", third.System)
	}
	var sawFirst bool
	for _, m := range third.Messages {
		if m.Role == "user" && strings.Contains(m.Text, "who am I") {
			sawFirst = true
		}
	}
	if !sawFirst || third.LastUserText() != "and now?" {
		t.Fatalf("history not sent: %+v", third.Messages)
	}
}

func TestChatCapsModelCallsAtTen(t *testing.T) {
	var n atomic.Int32
	models := llmtest.NewAnthropicServer(t, nil, llmtest.WithNext(func(i int, req llmtest.Request) llmtest.Reply {
		n.Add(1)
		return llmtest.Calls(llmtest.Call("get_agent_info", `{}`))
	}))
	e := newEnv(t, envOptions{models: llm.Config{AnthropicBaseURL: models.URL}})
	a := e.create(t, newEVMOwner(t), "looper", "ethereum")
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "loop forever"}, "X-AI-Provider", "claude", "X-AI-Key", llmtest.DefaultKey)
	if r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	if n.Load() != agent.MaxModelCalls || len(out.ToolCalls) != agent.MaxModelCalls {
		t.Fatalf("model calls %d, tool calls %d; want %d", n.Load(), len(out.ToolCalls), agent.MaxModelCalls)
	}
	if !strings.Contains(out.Response, "limit") {
		t.Fatalf("the answer does not say it stopped at the limit: %q", out.Response)
	}
}

func TestChatProviderFailureIs502WithoutKey(t *testing.T) {
	models := llmtest.NewOpenAIServer(t, nil, llmtest.WithKey("sk-right"), llmtest.Lenient())
	e := newEnv(t, envOptions{models: llm.Config{OpenAIBaseURL: models.URL}})
	a := e.create(t, newEVMOwner(t), "badkey", "ethereum")
	secret := "sk-wrong-secret-value-123"
	r, _ := e.chat(t, a.ID, e.key, map[string]string{"message": "hi"}, "X-AI-Provider", "openai", "X-AI-Key", secret)
	if r.status != 502 {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	r.errorBody(t)
	if strings.Contains(string(r.body), secret) {
		t.Fatal("the caller's key reached the error body")
	}
}

// The builtin planner drives real tools on a real chain: a payment from
// one agent to another by name, found by the recipient's scan.
func TestChatPaysAnotherAgentOnTheDevnet(t *testing.T) {
	e := newEnv(t, envOptions{evm: true})
	alice := e.create(t, newEVMOwner(t), "alice", "ethereum")
	bob := e.create(t, newEVMOwner(t), "bob", "ethereum")

	r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": "send 0.01 ETH to bob"})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "send_payment" || out.ToolCalls[0].Status != "success" {
		t.Fatalf("pay = %d %s", r.status, r.body)
	}
	var paid struct{ TxHash string }
	_ = json.Unmarshal([]byte(out.ToolCalls[0].Detail), &paid)
	if !strings.HasPrefix(paid.TxHash, "0x") || !strings.Contains(out.Response, paid.TxHash) {
		t.Fatalf("detail %s, answer %q", out.ToolCalls[0].Detail, out.Response)
	}
	e.waitMined(t, paid.TxHash)

	r, out = e.chat(t, bob.ID, e.key, map[string]string{"message": "scan for payments"})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "scan_payments" {
		t.Fatalf("scan = %d %s", r.status, r.body)
	}
	var scanned struct{ Count int }
	_ = json.Unmarshal([]byte(out.ToolCalls[0].Detail), &scanned)
	if scanned.Count != 1 {
		t.Fatalf("scan detail %s", out.ToolCalls[0].Detail)
	}
	var inbox agent.Inbox
	e.do("GET", "/agent/"+bob.ID+"/notifications", e.key, nil).decode(t, &inbox)
	if inbox.UnreadCount != 1 || inbox.Notifications[0].Type != agent.NotePaymentReceived {
		t.Fatalf("bob's inbox = %+v", inbox)
	}
	// Scanning again finds nothing new and notifies nothing.
	_, out = e.chat(t, bob.ID, e.key, map[string]string{"message": "scan for payments"})
	_ = json.Unmarshal([]byte(out.ToolCalls[0].Detail), &scanned)
	if scanned.Count != 0 {
		t.Fatalf("second scan detail %s", out.ToolCalls[0].Detail)
	}
}

// A crash after the payment was broadcast and before the reply: the client
// retries with the same Idempotency-Key and the payment is made once.
func TestChatRetryAfterCrashDoesNotPayTwice(t *testing.T) {
	var crash atomic.Bool
	crash.Store(true)
	e := newEnv(t, envOptions{evm: true, failpoint: func(name string) error {
		if name == agent.FailAfterTools && crash.CompareAndSwap(true, false) {
			return errors.New("injected crash after the tools ran")
		}
		return nil
	}})
	alice := e.create(t, newEVMOwner(t), "payer", "ethereum")
	bob := e.create(t, newEVMOwner(t), "payee", "ethereum")
	body := map[string]string{"message": "send 0.02 ETH to payee"}
	r, _ := e.chat(t, alice.ID, e.key, body, "Idempotency-Key", "retry-1")
	if r.status != 500 {
		t.Fatalf("crashed attempt = %d %s", r.status, r.body)
	}
	r, out := e.chat(t, alice.ID, e.key, body, "Idempotency-Key", "retry-1")
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
		t.Fatalf("retry = %d %s", r.status, r.body)
	}
	var paid struct{ TxHash string }
	_ = json.Unmarshal([]byte(out.ToolCalls[0].Detail), &paid)
	// A second payment would have taken the next nonce: once this one is
	// mined, anything sent before it is too.
	e.waitMined(t, paid.TxHash)
	_, scan := e.chat(t, bob.ID, e.key, map[string]string{"message": "scan for payments"})
	var scanned struct{ Count int }
	_ = json.Unmarshal([]byte(scan.ToolCalls[0].Detail), &scanned)
	if scanned.Count != 1 {
		t.Fatalf("payee received %d payments, want exactly 1 (%s)", scanned.Count, scan.ToolCalls[0].Detail)
	}
	// Without the key, the same words are a new intent for a payment just
	// made: the agent asks first and sends nothing (issue 32 item 4)...
	before := sends(t, e.store)
	r, out = e.chat(t, alice.ID, e.key, body)
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "error" ||
		!strings.Contains(out.ToolCalls[0].Detail, "confirmation") || sends(t, e.store) != before {
		t.Fatalf("second intent = %d %s (%d sends, %d before)", r.status, r.body, sends(t, e.store), before)
	}
	// ...and the user's "yes" in that conversation makes the second payment.
	r, out = e.chat(t, alice.ID, e.key, map[string]string{"message": "yes", "conversationId": out.ConversationID})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
		t.Fatalf("confirmed second intent = %d %s", r.status, r.body)
	}
	_ = json.Unmarshal([]byte(out.ToolCalls[0].Detail), &paid)
	e.waitMined(t, paid.TxHash)
	_, scan = e.chat(t, bob.ID, e.key, map[string]string{"message": "scan for payments"})
	_ = json.Unmarshal([]byte(scan.ToolCalls[0].Detail), &scanned)
	if scanned.Count != 1 {
		t.Fatalf("second intent: payee found %d new payments, want 1", scanned.Count)
	}
}

// A conversation created empty takes its title from its first chat
// message (60 runes, cut on a word boundary with …); later messages keep it.
func TestChatNamesAnEmptyConversationByItsFirstMessage(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "titled", "ethereum")
	base := "/agent/" + a.ID + "/conversations"
	var conv agent.Conversation
	if r := e.do("POST", base, e.key, nil); r.status != 201 {
		t.Fatalf("create conversation = %d %s", r.status, r.body)
	} else {
		r.decode(t, &conv)
	}
	first := "please tell me   what you can do with my wallet and how private my payments are"
	if r, _ := e.chat(t, a.ID, e.key, map[string]string{"message": first, "conversationId": conv.ID}); r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	if r, _ := e.chat(t, a.ID, e.key, map[string]string{"message": "thanks", "conversationId": conv.ID}); r.status != 200 {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	var convs []agent.Conversation
	e.do("GET", base, e.key, nil).decode(t, &convs)
	want := "please tell me what you can do with my wallet and how…"
	if len(convs) != 1 || convs[0].ID != conv.ID || convs[0].Title != want {
		t.Fatalf("conversations = %+v, want one titled %q", convs, want)
	}
}
