// Package llmtest runs local fake model providers for tests: an HTTP server
// that speaks the OpenAI chat-completions API (POST /v1/chat/completions)
// and one that speaks the Anthropic messages API (POST /v1/messages). Each
// answers from a script of replies (text, tool calls, errors, delays) and
// records every request it received, normalised to one shape so a test can
// assert the same thing against either provider.
//
// The servers check the protocol rules the real APIs enforce, and are
// stricter where it helps: OpenAI tool messages must answer every tool call
// of the assistant message right before them; Anthropic messages must
// alternate user/assistant starting with user (the real API merges
// consecutive same-role turns; the fake rejects them so a client that
// relies on merging is caught), every tool_use must be answered by a
// tool_result in the very next user message, tool_result blocks come
// before text, text blocks are non-empty and every tool has an
// input_schema. A violation is answered with a 400 in the provider's error
// format and reported with t.Errorf (unless the server is Lenient).
//
//	srv := llmtest.NewOpenAIServer(t, llmtest.Script{
//		llmtest.Calls(llmtest.Call("get_balance", `{}`), llmtest.Call("scan_payments", `{"chain":"base"}`)),
//		llmtest.Text("You have 1 ETH and no new payments."),
//	})
//	cfg := llm.Config{OpenAIBaseURL: srv.URL}
//	model, _ := cfg.Model(llm.OpenAI, srv.Key)
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultKey is the API key a server accepts unless WithKey says otherwise.
const DefaultKey = "sk-llmtest-0123456789abcdef"

// ToolCall is one tool call a scripted reply makes, or one the server saw
// in a request.
type ToolCall struct {
	// ID is the call id; empty in a script means the server assigns one
	// (call_<request>_<n> for OpenAI, toolu_<request>_<n> for Anthropic).
	ID   string
	Name string
	// Arguments is the JSON text of the arguments. OpenAI sends it
	// verbatim (it may be malformed on purpose); Anthropic's tool_use input
	// is always an object, so text that is not a JSON object is sent as {}.
	Arguments string
}

// Call is a scripted tool call with a server-assigned id.
func Call(name, argumentsJSON string) ToolCall {
	return ToolCall{Name: name, Arguments: argumentsJSON}
}

// Reply is one scripted response.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// Status, when not 0 or 200, answers with that HTTP status and an
	// error body in the provider's format carrying Error.
	Status int
	Error  string
	// Delay holds the response back (until the client gives up, at most).
	Delay time.Duration
	// Token usage reported; 0 means a rough word count.
	InputTokens, OutputTokens int
}

// Text is a reply with text only (the model's final answer).
func Text(s string) Reply { return Reply{Text: s} }

// Calls is a reply that calls tools (several in one response).
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Fail is an error reply with an HTTP status.
func Fail(status int, message string) Reply { return Reply{Status: status, Error: message} }

// Script is the replies a server gives, in order. When it runs out the
// server answers 500 and reports the test as failed.
type Script []Reply

// Request is a request the server received.
type Request struct {
	Header http.Header
	Body   []byte
	Model  string
	// System is the system prompt (Anthropic's system field, or OpenAI's
	// system messages joined by "\n").
	System string
	// Tools are the names of the tools offered, in order.
	Tools    []string
	Messages []Message
	// Problem is the protocol violation the server rejected the request
	// for ("" when it was valid).
	Problem string
}

// Message is a request message, normalised across the two APIs. Role is
// "system", "user", "assistant" or "tool" (OpenAI tool messages; Anthropic
// tool results arrive as "user" messages with ToolResults).
type Message struct {
	Role        string
	Text        string
	ToolCalls   []ToolCall
	ToolResults []ToolResult
}

// ToolResult is a tool result the client sent back.
type ToolResult struct {
	ID      string
	Content string
}

// ToolResults are the tool results the request carries after its last
// assistant message: what the client answered to the previous response.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "assistant" {
			break
		}
		out = append(append([]ToolResult(nil), m.ToolResults...), out...)
	}
	return out
}

// LastUserText is the text of the last user message (without tool results).
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" && r.Messages[i].Text != "" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// Option configures a server.
type Option func(*Server)

// WithKey sets the API key the server accepts; any other key gets a 401
// whose message echoes the key it got (as careless providers do), so tests
// can prove the key never reaches an error text.
func WithKey(key string) Option { return func(s *Server) { s.Key = key } }

// WithNext replaces the script with a function that picks the reply to the
// i-th request (0-based), e.g. a model that never stops calling tools.
func WithNext(next func(i int, req Request) Reply) Option {
	return func(s *Server) { s.next = next }
}

// Lenient makes protocol violations a 400 answer only, without failing the
// test.
func Lenient() Option { return func(s *Server) { s.lenient = true } }

// Server is a running fake provider. URL is the base URL a client is
// configured with (it ends in /v1).
type Server struct {
	URL string
	Key string

	t       testing.TB
	flavour string
	srv     *httptest.Server
	script  Script
	next    func(int, Request) Reply
	lenient bool

	mu       sync.Mutex
	requests []Request
}

// NewOpenAIServer starts a server speaking the OpenAI chat-completions API.
// It is closed when the test ends.
func NewOpenAIServer(t testing.TB, script Script, opts ...Option) *Server {
	return start(t, "openai", script, opts)
}

// NewAnthropicServer starts a server speaking the Anthropic messages API.
// It is closed when the test ends.
func NewAnthropicServer(t testing.TB, script Script, opts ...Option) *Server {
	return start(t, "anthropic", script, opts)
}

func start(t testing.TB, flavour string, script Script, opts []Option) *Server {
	t.Helper()
	s := &Server{Key: DefaultKey, t: t, flavour: flavour, script: script}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server (also done at the end of the test).
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count is how many requests the server received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	req := Request{Header: r.Header.Clone(), Body: body}
	var status int
	var errType, problem string
	switch s.flavour {
	case "openai":
		status, errType, problem = s.checkOpenAI(r, &req)
	default:
		status, errType, problem = s.checkAnthropic(r, &req)
	}
	req.Problem = problem

	s.mu.Lock()
	i := len(s.requests)
	s.requests = append(s.requests, req)
	s.mu.Unlock()

	if problem != "" {
		if status == http.StatusBadRequest && !s.lenient {
			s.t.Errorf("llmtest: %s request %d violates the protocol: %s", s.flavour, i, problem)
		}
		s.writeError(w, status, errType, problem)
		return
	}

	var reply Reply
	switch {
	case s.next != nil:
		reply = s.next(i, req)
	case i < len(s.script):
		reply = s.script[i]
	default:
		s.t.Errorf("llmtest: %s script exhausted: request %d but only %d replies", s.flavour, i, len(s.script))
		s.writeError(w, http.StatusInternalServerError, "api_error", "llmtest: script exhausted")
		return
	}
	if reply.Delay > 0 {
		timer := time.NewTimer(reply.Delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		s.writeError(w, reply.Status, errorTypeFor(reply.Status), reply.Error)
		return
	}
	in := reply.InputTokens
	if in == 0 {
		in = len(strings.Fields(string(body))) / 4
	}
	out := reply.OutputTokens
	if out == 0 {
		out = len(strings.Fields(reply.Text)) + 8*len(reply.ToolCalls)
	}
	w.Header().Set("Content-Type", "application/json")
	if s.flavour == "openai" {
		_ = json.NewEncoder(w).Encode(openAIResponse(i, req.Model, reply, in, out))
	} else {
		_ = json.NewEncoder(w).Encode(anthropicResponse(i, req.Model, reply, in, out))
	}
}

func errorTypeFor(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusBadRequest:
		return "invalid_request_error"
	}
	return "api_error"
}

func (s *Server) writeError(w http.ResponseWriter, status int, errType, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var body any
	if s.flavour == "openai" {
		body = map[string]any{"error": map[string]any{"message": msg, "type": errType, "code": nil}}
	} else {
		body = map[string]any{"type": "error", "error": map[string]any{"type": errType, "message": msg}}
	}
	_ = json.NewEncoder(w).Encode(body)
}

// ---- OpenAI ----

type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []oaToolCall    `json:"tool_calls"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaRequest struct {
	Model    string      `json:"model"`
	Messages []oaMessage `json:"messages"`
	Stream   bool        `json:"stream"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// oaText reads an OpenAI content value: a string, null, or an array of
// parts of which the text ones count.
func oaText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func (s *Server) checkOpenAI(r *http.Request, req *Request) (int, string, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return http.StatusNotFound, "invalid_request_error", fmt.Sprintf("unknown endpoint %s %s", r.Method, r.URL.Path)
	}
	if got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "); got != s.Key {
		return http.StatusUnauthorized, "invalid_request_error",
			fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", got)
	}
	var body oaRequest
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return http.StatusBadRequest, "invalid_request_error", "body is not valid JSON: " + err.Error()
	}
	req.Model = body.Model
	if body.Model == "" {
		return http.StatusBadRequest, "invalid_request_error", "you must provide a model parameter"
	}
	if body.Stream {
		return http.StatusBadRequest, "invalid_request_error", "llmtest does not stream"
	}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
		if t.Type != "function" || t.Function.Name == "" {
			return http.StatusBadRequest, "invalid_request_error", "tools must be functions with a name"
		}
	}
	if len(body.Messages) == 0 {
		return http.StatusBadRequest, "invalid_request_error", "messages must not be empty"
	}
	var system []string
	pending := map[string]bool{} // tool calls awaiting their tool message
	for i, m := range body.Messages {
		text, err := oaText(m.Content)
		if err != nil {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages[%d]: %v", i, err)
		}
		msg := Message{Role: m.Role, Text: text}
		if m.Role != "tool" && len(pending) > 0 {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
				"messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing %s",
				i, sortedKeys(pending))
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
		case "assistant":
			for j, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
						"messages[%d].tool_calls[%d]: id, type \"function\" and function.name are required", i, j)
				}
				pending[tc.ID] = true
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		case "tool":
			if !pending[m.ToolCallID] {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
					"messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q)", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
			msg.ToolResults = []ToolResult{{ID: m.ToolCallID, Content: text}}
			msg.Text = ""
		default:
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages[%d]: unknown role %q", i, m.Role)
		}
		req.Messages = append(req.Messages, msg)
	}
	req.System = strings.Join(system, "\n")
	if len(pending) > 0 {
		return http.StatusBadRequest, "invalid_request_error",
			"an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing " + sortedKeys(pending)
	}
	return 0, "", ""
}

func openAIResponse(i int, model string, reply Reply, in, out int) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if reply.Text != "" {
		msg["content"] = reply.Text
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
		calls := make([]map[string]any, len(reply.ToolCalls))
		for j, tc := range reply.ToolCalls {
			id := tc.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", i, j)
			}
			calls[j] = map[string]any{
				"id": id, "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-llmtest-%d", i), "object": "chat.completion",
		"created": 1700000000 + i, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	}
}

// ---- Anthropic ----

type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

type anRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Stream    bool            `json:"stream"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// anBlocks reads an Anthropic content value: a string or an array of blocks.
func anBlocks(raw json.RawMessage) ([]anBlock, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []anBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []anBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content is neither a string nor an array of blocks")
	}
	return blocks, nil
}

func (s *Server) checkAnthropic(r *http.Request, req *Request) (int, string, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return http.StatusNotFound, "not_found_error", fmt.Sprintf("unknown endpoint %s %s", r.Method, r.URL.Path)
	}
	if got := r.Header.Get("X-Api-Key"); got != s.Key {
		return http.StatusUnauthorized, "authentication_error", "invalid x-api-key: " + got
	}
	if r.Header.Get("Anthropic-Version") == "" {
		return http.StatusBadRequest, "invalid_request_error", "anthropic-version header is required"
	}
	var body anRequest
	if err := json.Unmarshal(req.Body, &body); err != nil {
		return http.StatusBadRequest, "invalid_request_error", "body is not valid JSON: " + err.Error()
	}
	req.Model = body.Model
	if len(body.System) > 0 {
		if err := json.Unmarshal(body.System, &req.System); err != nil {
			blocks, err := anBlocks(body.System)
			if err != nil {
				return http.StatusBadRequest, "invalid_request_error", "system: " + err.Error()
			}
			for _, b := range blocks {
				if b.Text != nil {
					req.System += *b.Text
				}
			}
		}
	}
	if body.Model == "" {
		return http.StatusBadRequest, "invalid_request_error", "model: field required"
	}
	if body.MaxTokens <= 0 {
		return http.StatusBadRequest, "invalid_request_error", "max_tokens: field required"
	}
	if body.Stream {
		return http.StatusBadRequest, "invalid_request_error", "llmtest does not stream"
	}
	for i, t := range body.Tools {
		req.Tools = append(req.Tools, t.Name)
		if t.Name == "" || len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("tools.%d: name and input_schema are required", i)
		}
	}
	if len(body.Messages) == 0 {
		return http.StatusBadRequest, "invalid_request_error", "messages: at least one message is required"
	}
	var open map[string]bool // tool_use ids of the previous assistant message
	for i, m := range body.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
				"messages.%d: roles must alternate between \"user\" and \"assistant\" starting with \"user\" (llmtest is strict: no consecutive turns of one role), got %q", i, m.Role)
		}
		blocks, err := anBlocks(m.Content)
		if err != nil {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: %v", i, err)
		}
		if len(blocks) == 0 {
			return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: content must not be empty", i)
		}
		msg := Message{Role: m.Role}
		answered := map[string]bool{}
		seenText := false
		for j, b := range blocks {
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
				seenText = true
				msg.Text += *b.Text
			case "tool_use":
				if m.Role != "assistant" || b.ID == "" || b.Name == "" {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content.%d: tool_use needs an assistant message, an id and a name", i, j)
				}
				var obj map[string]any
				if err := json.Unmarshal(b.Input, &obj); err != nil || obj == nil {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content.%d.input: Input should be a valid dictionary", i, j)
				}
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				if m.Role != "user" {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content.%d: tool_result blocks belong in user messages", i, j)
				}
				if seenText {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d: tool_result blocks must come before any text in the message", i)
				}
				if !open[b.ToolUseID] {
					return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
						"messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
				content, _ := oaText(b.Content)
				msg.ToolResults = append(msg.ToolResults, ToolResult{ID: b.ToolUseID, Content: content})
			default:
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("messages.%d.content.%d: unsupported block type %q", i, j, b.Type)
			}
		}
		if m.Role == "user" {
			var missing []string
			for id := range open {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return http.StatusBadRequest, "invalid_request_error", fmt.Sprintf(
					"messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i, strings.Join(sortStrings(missing), ", "))
			}
			open = nil
		} else {
			open = map[string]bool{}
			for _, tc := range msg.ToolCalls {
				open[tc.ID] = true
			}
		}
		req.Messages = append(req.Messages, msg)
	}
	return 0, "", ""
}

func anthropicResponse(i int, model string, reply Reply, in, out int) map[string]any {
	var content []any
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for j, tc := range reply.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_%d_%d", i, j)
		}
		var input any = map[string]any{}
		var obj map[string]any
		if json.Unmarshal([]byte(tc.Arguments), &obj) == nil && obj != nil {
			input = json.RawMessage(tc.Arguments)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": tc.Name, "input": input})
	}
	if content == nil {
		content = []any{}
	}
	stop := "end_turn"
	if len(reply.ToolCalls) > 0 {
		stop = "tool_use"
	}
	return map[string]any{
		"id": fmt.Sprintf("msg_llmtest_%d", i), "type": "message", "role": "assistant",
		"model": model, "content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": out},
	}
}

func sortedKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return strings.Join(sortStrings(keys), ", ")
}

func sortStrings(s []string) []string {
	sort.Strings(s)
	return s
}
