// Package builtin is Veil's offline model: a deterministic llms.Model that
// turns plain-English requests into calls of the agent's tools and
// writes the answer from the tools' results. It is the hosted default when
// no model endpoint is configured, so every path through the chat loop
// runs offline, and its answers are meant to read well.
//
// How it reads a conversation:
//
//   - Only the last human message is read for intent; system messages
//     (prompt, memories) and older history are ignored, except that a bare
//     reply ("10 USDC", "bob", "weekly") to one of its own questions is
//     read together with the message that prompted the question.
//   - Quoted text ("…", “…”, `…`, ``` blocks), <tag>…</tag> blocks and
//     lines starting with '>' are data: nothing in them is acted on (a
//     quoted phrase can still be an invoice memo or part of a memory).
//   - A message is split into sentences and clauses ("and", "then", ",",
//     …); each clause is one request, so one response may call several
//     tools. A clause missing what a tool needs (an amount, a recipient, an
//     address, a schedule id) becomes a question instead of a call.
//   - Only tools offered with llms.WithTools are called; a request for
//     another tool is answered with text saying it is not available.
//   - When the messages after the last human message hold tool results,
//     it answers: one paragraph per result, in order (amounts, tx hashes
//     and links, invoice payment links, balances, counts, errors in plain
//     words), then any question left from the user's message.
//
// Output is a pure function of the input messages, the offered tools and
// the clock (WithNow; used for schedule end dates): tool call ids are
// call_<hash of the user's message>_<n>. GenerationInfo reports
// PromptTokens, CompletionTokens and TotalTokens as word counts.
//
// The grammar is documented in docs/models.md.
package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// ToolNames are the 21 tools the planner knows: DESIGN.md's 17, then
// pay_invoice, fetch_paid, payment_history and cancel_invoice.
var ToolNames = []string{
	"send_payment", "pay_agent", "scan_payments", "get_balance", "create_invoice",
	"check_invoices", "resolve_name", "register_name", "get_agent_info", "withdraw",
	"withdraw_all", "privacy_check", "fund_wallet", "schedule_payment", "list_schedules",
	"manage_schedule", "save_memory", "pay_invoice", "fetch_paid", "payment_history", "cancel_invoice",
}

// Model is the builtin planner. It is safe for concurrent use.
type Model struct {
	now func() time.Time
}

var _ llms.Model = (*Model)(nil)

// Option configures a Model.
type Option func(*Model)

// WithNow sets the clock (schedule end dates are computed from its UTC date).
func WithNow(now func() time.Time) Option { return func(m *Model) { m.now = now } }

// New returns the planner.
func New(opts ...Option) *Model {
	m := &Model{now: time.Now}
	for _, o := range opts {
		o(m)
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// Call answers a single prompt (no tools are offered, so requests are
// answered with text).
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent plans tool calls for the last human message, or writes
// the answer when tool results follow it.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	// A look through the ~20 offered tools costs less than the map each
	// turn would build.
	offered := func(name string) bool {
		return slices.ContainsFunc(opts.Tools, func(t llms.Tool) bool { return t.Function != nil && t.Function.Name == name })
	}
	now := m.now().UTC()

	h := lastHuman(messages)
	user := ""
	if h >= 0 {
		user = humanText(messages[h])
	}
	var content string
	var calls []llms.ToolCall
	st := readState(messages)
	if results := collectResults(messages, h); len(results) > 0 {
		var parts []string
		for _, r := range results {
			parts = append(parts, describe(r))
		}
		// What the user asked that needed no tool call: questions, tools
		// that were not offered.
		asked := plan(user, now)
		if fa, ok := followUp(user, asked, st, now); ok {
			asked = fa
		}
		for _, a := range asked {
			if a.tool == "" {
				switch a.kind {
				case "greet", "help", "thanks", "unknown":
				default:
					parts = append(parts, a.say)
				}
			} else if !offered(a.tool) {
				parts = append(parts, notOffered(a.tool))
			}
		}
		content = strings.Join(parts, "\n\n")
	} else {
		acts := plan(user, now)
		if fa, ok := followUp(user, acts, st, now); ok {
			acts = fa
		} else if say, ok := confirmed(messages, h, acts); ok {
			acts = []action{ask("gate", say)}
		} else if a, ok := answerWithoutPending(user, acts); ok {
			acts = []action{a}
		}
		if joined, ok := continued(messages, h, acts); ok {
			if acts2 := plan(joined, now); hasCall(acts2) {
				acts = acts2
			}
		}
		var says []string
		base := callBase(user, h)
		for _, a := range acts {
			if a.tool == "" {
				says = append(says, a.say)
				continue
			}
			if !offered(a.tool) {
				says = append(says, notOffered(a.tool))
				continue
			}
			args, _ := json.Marshal(a.args)
			calls = append(calls, llms.ToolCall{
				ID:           fmt.Sprintf("%s_%d", base, len(calls)+1),
				Type:         "function",
				FunctionCall: &llms.FunctionCall{Name: a.tool, Arguments: string(args)},
			})
		}
		if len(calls) == 0 {
			content = strings.Join(says, "\n\n")
		}
	}

	prompt := 0
	for _, mc := range messages {
		for _, p := range mc.Parts {
			switch v := p.(type) {
			case llms.TextContent:
				prompt += wordCount(v.Text)
			case llms.ToolCallResponse:
				prompt += wordCount(v.Content)
			case llms.ToolCall:
				if v.FunctionCall != nil {
					prompt += wordCount(v.FunctionCall.Arguments) + 1
				}
			}
		}
	}
	completion := wordCount(content)
	for _, c := range calls {
		completion += 1 + wordCount(strings.NewReplacer(",", " ", ":", " ").Replace(c.FunctionCall.Arguments))
	}
	choice := &llms.ContentChoice{
		Content:    content,
		StopReason: "stop",
		ToolCalls:  calls,
		GenerationInfo: map[string]any{
			"PromptTokens":     prompt,
			"CompletionTokens": completion,
			"TotalTokens":      prompt + completion,
		},
	}
	if len(calls) > 0 {
		choice.StopReason = "tool_calls"
		choice.FuncCall = calls[0].FunctionCall
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

func hasCall(acts []action) bool {
	for _, a := range acts {
		if a.tool != "" {
			return true
		}
	}
	return false
}

func notOffered(tool string) string {
	return fmt.Sprintf("I can't %s here: the %s tool isn't available in this conversation.", toolVerb[tool], tool)
}

var toolVerb = map[string]string{
	"send_payment": "send payments", "pay_agent": "pay agents", "scan_payments": "scan for payments",
	"get_balance": "check your balance", "create_invoice": "create invoices", "check_invoices": "check invoices",
	"resolve_name": "look up names", "register_name": "register your name", "get_agent_info": "show your agent's details",
	"withdraw": "withdraw funds", "withdraw_all": "withdraw funds", "privacy_check": "run a privacy check",
	"fund_wallet": "fund your wallet", "schedule_payment": "schedule payments", "list_schedules": "list schedules",
	"manage_schedule": "change schedules", "save_memory": "remember things",
	"payment_history": "look up your payments", "cancel_invoice": "cancel invoices",
}

// callBase derives tool call ids from the user's message and its position.
func callBase(user string, h int) string {
	f := fnv.New32a()
	fmt.Fprintf(f, "%d\x00%s", h, user)
	return fmt.Sprintf("call_%08x", f.Sum32())
}

func lastHuman(messages []llms.MessageContent) int {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == llms.ChatMessageTypeHuman || messages[i].Role == llms.ChatMessageTypeGeneric {
			return i
		}
	}
	return -1
}

func humanText(mc llms.MessageContent) string {
	var parts []string
	for _, p := range mc.Parts {
		if t, ok := p.(llms.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func aiText(mc llms.MessageContent) (string, bool) {
	if mc.Role != llms.ChatMessageTypeAI {
		return "", false
	}
	var parts []string
	for _, p := range mc.Parts {
		switch v := p.(type) {
		case llms.TextContent:
			parts = append(parts, v.Text)
		case llms.ToolCall:
			return "", false
		}
	}
	return strings.Join(parts, "\n"), true
}

// continued joins a bare reply to the planner's own question with the
// message that prompted it: "send USDC to bob" / "How much USDC…?" / "10".
func continued(messages []llms.MessageContent, h int, acts []action) (string, bool) {
	if h < 2 {
		return "", false
	}
	q, ok := aiText(messages[h-1])
	if !ok || messages[h-2].Role != llms.ChatMessageTypeHuman {
		return "", false
	}
	reply := humanText(messages[h])
	if wordCount(reply) > 4 {
		return "", false
	}
	// The reply must not be a request of its own; a lone name (which
	// alone would be looked up) answers "Who should I send … to?".
	bareName := wordCount(reply) == 1 && (strings.HasPrefix(q, qWho) || strings.HasPrefix(q, qWhere))
	for _, a := range acts {
		if a.kind != "unknown" && !bareName {
			return "", false
		}
	}
	prev := humanText(messages[h-2])
	for _, p := range continuationPrefixes {
		if strings.HasPrefix(q, p) {
			if p == qWho || p == qWhere {
				return prev + " to " + reply, true
			}
			return prev + " " + reply, true
		}
	}
	return "", false
}

// result is a tool call and what it returned.
type result struct {
	name   string
	args   map[string]any
	status string // success or error
	detail any    // decoded detail JSON, or a string
}

// collectResults pairs the tool results after message h with their calls.
func collectResults(messages []llms.MessageContent, h int) []result {
	calls := map[string]llms.ToolCall{}
	var out []result
	for i := h + 1; i < len(messages); i++ {
		for _, p := range messages[i].Parts {
			switch v := p.(type) {
			case llms.ToolCall:
				calls[v.ID] = v
			case llms.ToolCallResponse:
				r := result{name: v.Name}
				if c, ok := calls[v.ToolCallID]; ok && c.FunctionCall != nil {
					r.name = c.FunctionCall.Name
					_ = json.Unmarshal([]byte(c.FunctionCall.Arguments), &r.args)
				}
				decodeResult(&r, v.Content)
				out = append(out, r)
			}
		}
	}
	return out
}

// decodeResult reads a tool message's content: {name, status, detail}
// (detail a JSON string or value), {"error": …}, or a bare result.
func decodeResult(r *result, content string) {
	r.status = "success"
	var env map[string]any
	if err := json.Unmarshal([]byte(content), &env); err != nil || env == nil {
		r.detail = decodeMaybe(content)
		return
	}
	if st, ok := env["status"].(string); ok && (st == "success" || st == "error") {
		r.status = st
		if n, ok := env["name"].(string); ok && r.name == "" {
			r.name = n
		}
		if d, ok := env["detail"].(string); ok {
			r.detail = decodeMaybe(d)
		} else {
			r.detail = env["detail"]
		}
		return
	}
	if _, ok := env["error"]; ok && len(env) <= 3 {
		r.status = "error"
	}
	r.detail = env
}

func decodeMaybe(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}
