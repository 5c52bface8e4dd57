package llmtest

// The OpenAI chat completions API as the fake serves it: the request it
// checks and the response it writes.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

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
