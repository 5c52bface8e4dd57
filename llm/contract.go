package llm

import (
	"encoding/json"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Tool result statuses, as the spec's ToolCall reports them.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Reply returns a response's text and every tool call in it. With the
// models of this package Choices[0] holds everything; Reply also gathers
// calls spread over several choices (a raw langchaingo anthropic model
// returns one choice per content block), so the loop needs nothing else.
func Reply(resp *llms.ContentResponse) (text string, calls []llms.ToolCall) {
	if resp == nil {
		return "", nil
	}
	var texts []string
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		if c.Content != "" {
			texts = append(texts, c.Content)
		}
		calls = append(calls, c.ToolCalls...)
	}
	return strings.Join(texts, "\n\n"), calls
}

// AssistantMessage is the AI turn the loop appends after a response that
// called tools: its text (if any) and all of its tool calls, unchanged.
func AssistantMessage(text string, calls []llms.ToolCall) llms.MessageContent {
	parts := make([]llms.ContentPart, 0, len(calls)+1)
	if strings.TrimSpace(text) != "" {
		parts = append(parts, llms.TextContent{Text: text})
	}
	for _, c := range calls {
		parts = append(parts, c)
	}
	return llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts}
}

// ToolMessage is the tool turn answering one call. Append one per call,
// in the order of the calls, right after the AssistantMessage; together
// they are the "one turn" of results.
func ToolMessage(call llms.ToolCall, content string) llms.MessageContent {
	name := ""
	if call.FunctionCall != nil {
		name = call.FunctionCall.Name
	}
	return llms.MessageContent{
		Role:  llms.ChatMessageTypeTool,
		Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: call.ID, Name: name, Content: content}},
	}
}

// ToolResult is the content of a tool message: the same JSON the spec
// stores as a tool message's text, {name, status, detail}, detail being
// the JSON text of the result or of the error.
type ToolResult struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// ResultContent renders a tool result as a tool message's content.
func ResultContent(name, status, detail string) string {
	b, _ := json.Marshal(ToolResult{Name: name, Status: status, Detail: detail})
	return string(b)
}

// Usage returns the prompt and completion tokens a response reports (the
// first choice that reports any: anthropic-style responses repeat the same
// usage on every choice). Every model of this package reports them; the
// builtin planner counts words.
func Usage(resp *llms.ContentResponse) (prompt, completion int) {
	if resp == nil {
		return 0, 0
	}
	for _, c := range resp.Choices {
		if c == nil || c.GenerationInfo == nil {
			continue
		}
		p, ok := c.GenerationInfo["PromptTokens"]
		if !ok {
			p = c.GenerationInfo["InputTokens"]
		}
		q, ok := c.GenerationInfo["CompletionTokens"]
		if !ok {
			q = c.GenerationInfo["OutputTokens"]
		}
		if intOf(p) > 0 || intOf(q) > 0 {
			return intOf(p), intOf(q)
		}
	}
	return 0, 0
}
