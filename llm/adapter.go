package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// adapter wraps a langchaingo provider model so that every provider
// follows the same loop contract (see the package doc):
//
//   - input: an AI message may hold text and several tool calls, a tool
//     message may hold several results; the adapter reshapes them into what
//     the langchaingo provider converts correctly (langchaingo v0.1.14's
//     anthropic conversion reads only Parts[0] of AI and tool messages, and
//     its openai conversion wants exactly one result per tool message);
//   - output: Choices[0] holds the whole answer (anthropic returns one
//     choice per content block), every ToolCall has Type "function" and a
//     JSON object as Arguments (never ""), and GenerationInfo carries
//     PromptTokens / CompletionTokens / TotalTokens;
//   - errors: each call is bounded by the timeout, and failures become a
//     *ProviderError that never contains the key.
type adapter struct {
	inner    llms.Model
	provider Provider
	secret   string
	timeout  time.Duration
}

var _ llms.Model = (*adapter)(nil)

type callInfoKey struct{}

func (a *adapter) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, a, prompt, options...)
}

func (a *adapter) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a.provider == Anthropic {
		messages = prepareAnthropic(messages)
	} else {
		messages = prepareOpenAI(messages)
	}
	info := &callInfo{}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, callInfoKey{}, info), a.timeout)
	defer cancel()
	resp, err := a.inner.GenerateContent(cctx, messages, options...)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up (client gone, request deadline): not the
			// provider's fault.
			return nil, ctx.Err()
		}
		if !info.requested {
			// langchaingo refused the messages before sending anything: a
			// bug on our side, not a provider failure.
			return nil, fmt.Errorf("llm: %s: building the request: %s", a.provider, Redact(err.Error(), a.secret))
		}
		timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
		var ne net.Error
		if errors.As(info.transport, &ne) && ne.Timeout() {
			timedOut = true
		}
		return nil, providerError(a.provider, a.secret, a.timeout, info, timedOut, err)
	}
	out, err := normalize(resp, a.provider == Anthropic)
	if err != nil {
		return nil, &ProviderError{Provider: a.provider, msg: fmt.Sprintf("%s %s", a.provider.display(), err)}
	}
	return out, nil
}

// normalize applies the output half of the contract.
func normalize(resp *llms.ContentResponse, merge bool) (*llms.ContentResponse, error) {
	if resp == nil || len(resp.Choices) == 0 {
		return nil, errors.New("sent an empty response")
	}
	choices := resp.Choices
	if merge && len(choices) > 1 {
		m := &llms.ContentChoice{StopReason: choices[0].StopReason, GenerationInfo: map[string]any{}}
		var texts []string
		for _, c := range choices {
			if c == nil {
				continue
			}
			if c.Content != "" {
				texts = append(texts, c.Content)
			}
			m.ToolCalls = append(m.ToolCalls, c.ToolCalls...)
			for k, v := range c.GenerationInfo {
				if _, ok := m.GenerationInfo[k]; !ok {
					m.GenerationInfo[k] = v
				}
			}
			if c.ReasoningContent != "" {
				m.ReasoningContent += c.ReasoningContent
			}
		}
		m.Content = strings.Join(texts, "\n\n")
		choices = []*llms.ContentChoice{m}
	}
	for _, c := range choices {
		if c == nil {
			return nil, errors.New("sent an empty choice")
		}
		for i := range c.ToolCalls {
			tc := &c.ToolCalls[i]
			if tc.Type == "" {
				tc.Type = "function"
			}
			if tc.FunctionCall == nil {
				tc.FunctionCall = &llms.FunctionCall{}
			}
			if a := strings.TrimSpace(tc.FunctionCall.Arguments); a == "" || a == "null" {
				tc.FunctionCall.Arguments = "{}"
			}
		}
		if len(c.ToolCalls) > 0 {
			c.FuncCall = c.ToolCalls[0].FunctionCall
		}
		if c.GenerationInfo == nil {
			c.GenerationInfo = map[string]any{}
		}
		gi := c.GenerationInfo
		if _, ok := gi["PromptTokens"]; !ok {
			gi["PromptTokens"] = intOf(gi["InputTokens"])
		}
		if _, ok := gi["CompletionTokens"]; !ok {
			gi["CompletionTokens"] = intOf(gi["OutputTokens"])
		}
		if _, ok := gi["TotalTokens"]; !ok {
			gi["TotalTokens"] = intOf(gi["PromptTokens"]) + intOf(gi["CompletionTokens"])
		}
	}
	return &llms.ContentResponse{Choices: choices}, nil
}

func intOf(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case int32:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// fixCall makes a tool call acceptable to any provider.
func fixCall(tc llms.ToolCall, objectArgs bool) llms.ToolCall {
	fc := llms.FunctionCall{}
	if tc.FunctionCall != nil {
		fc = *tc.FunctionCall
	}
	if tc.Type == "" {
		tc.Type = "function"
	}
	if objectArgs {
		var obj map[string]any
		if json.Unmarshal([]byte(fc.Arguments), &obj) != nil || obj == nil {
			fc.Arguments = "{}"
		}
	} else if strings.TrimSpace(fc.Arguments) == "" {
		fc.Arguments = "{}"
	}
	tc.FunctionCall = &fc
	return tc
}

// splitTools returns tool messages with one result each.
func splitTools(mc llms.MessageContent) []llms.MessageContent {
	if len(mc.Parts) <= 1 {
		return []llms.MessageContent{mc}
	}
	out := make([]llms.MessageContent, 0, len(mc.Parts))
	for _, p := range mc.Parts {
		out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{p}})
	}
	return out
}

func prepareOpenAI(in []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(in))
	for _, mc := range in {
		switch mc.Role {
		case llms.ChatMessageTypeTool:
			out = append(out, splitTools(mc)...)
		case llms.ChatMessageTypeAI:
			parts := make([]llms.ContentPart, 0, len(mc.Parts))
			for _, p := range mc.Parts {
				switch v := p.(type) {
				case llms.ToolCall:
					parts = append(parts, fixCall(v, false))
				case llms.TextContent:
					if v.Text != "" || len(mc.Parts) == 1 {
						parts = append(parts, v)
					}
				default:
					parts = append(parts, p)
				}
			}
			out = append(out, llms.MessageContent{Role: mc.Role, Parts: parts})
		default:
			out = append(out, mc)
		}
	}
	return out
}

// prepareAnthropic reshapes messages for langchaingo's anthropic
// conversion, which reads only the first part of AI and tool messages and
// concatenates system messages without a separator: one system message
// first; AI messages split into a text message and one message per tool
// call; tool messages split into one per result. Consecutive same-role
// messages that this produces are merged back into one turn on the wire by
// recordingClient (Anthropic wants alternating turns, with every tool_use
// answered in the very next user turn).
func prepareAnthropic(in []llms.MessageContent) []llms.MessageContent {
	var system []string
	out := make([]llms.MessageContent, 0, len(in)+4)
	for _, mc := range in {
		switch mc.Role {
		case llms.ChatMessageTypeSystem:
			for _, p := range mc.Parts {
				if t, ok := p.(llms.TextContent); ok && strings.TrimSpace(t.Text) != "" {
					system = append(system, t.Text)
				}
			}
		case llms.ChatMessageTypeTool:
			out = append(out, splitTools(mc)...)
		case llms.ChatMessageTypeAI:
			var text []string
			var calls []llms.MessageContent
			for _, p := range mc.Parts {
				switch v := p.(type) {
				case llms.TextContent:
					if strings.TrimSpace(v.Text) != "" {
						text = append(text, v.Text)
					}
				case llms.ToolCall:
					calls = append(calls, llms.MessageContent{Role: mc.Role, Parts: []llms.ContentPart{fixCall(v, true)}})
				}
			}
			if len(text) > 0 {
				out = append(out, llms.TextParts(mc.Role, strings.Join(text, "\n\n")))
			}
			out = append(out, calls...)
		case llms.ChatMessageTypeGeneric:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: mc.Parts})
		default:
			out = append(out, mc)
		}
	}
	if len(system) > 0 {
		out = append([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, strings.Join(system, "\n\n"))}, out...)
	}
	return out
}

// recordingClient is the HTTP client handed to langchaingo. It notes what
// happened (status, transport error) in the call's callInfo, and for
// Anthropic merges consecutive same-role messages of the request body into
// one turn.
type recordingClient struct {
	client         *http.Client
	mergeAnthropic bool
}

func (rc *recordingClient) Do(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(callInfoKey{}).(*callInfo)
	if info != nil {
		info.requested = true
	}
	if rc.mergeAnthropic && req.Body != nil && strings.HasSuffix(req.URL.Path, "/messages") {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		if merged, err := mergeAnthropicTurns(body); err == nil {
			body = merged
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := rc.client.Do(req)
	if info != nil {
		if err != nil {
			info.transport = err
		} else {
			info.status = resp.StatusCode
		}
	}
	return resp, err
}

// mergeAnthropicTurns rewrites a messages-API body so that consecutive
// messages of one role become one message, tool_result blocks lead their
// user message, and empty text blocks are gone.
func mergeAnthropicTurns(body []byte) ([]byte, error) {
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(body, &payload); err != nil {
		return nil, err
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(payload["messages"], &msgs); err != nil {
		return nil, err
	}
	type turn struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	}
	var turns []turn
	for _, m := range msgs {
		var blocks []json.RawMessage
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			if s != "" {
				b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
				blocks = append(blocks, b)
			}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return nil, err
		}
		kept := blocks[:0]
		for _, b := range blocks {
			var head struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if json.Unmarshal(b, &head) == nil && head.Type == "text" && (head.Text == nil || strings.TrimSpace(*head.Text) == "") {
				continue
			}
			kept = append(kept, b)
		}
		if len(kept) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].Role == m.Role {
			turns[n-1].Content = append(turns[n-1].Content, kept...)
		} else {
			turns = append(turns, turn{Role: m.Role, Content: append([]json.RawMessage(nil), kept...)})
		}
	}
	for i := range turns {
		if turns[i].Role != "user" {
			continue
		}
		var results, rest []json.RawMessage
		for _, b := range turns[i].Content {
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(b, &head) == nil && head.Type == "tool_result" {
				results = append(results, b)
			} else {
				rest = append(rest, b)
			}
		}
		turns[i].Content = append(results, rest...)
	}
	raw, err := json.Marshal(turns)
	if err != nil {
		return nil, err
	}
	payload["messages"] = raw
	return json.Marshal(payload)
}
