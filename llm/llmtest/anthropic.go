package llmtest

// The Anthropic Messages API as the fake serves it: the request it checks
// and the response it writes.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

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
