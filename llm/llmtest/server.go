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
