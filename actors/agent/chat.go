package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
)

// Chat limits (DESIGN.md).
const (
	// MaxModelCalls caps the model calls of one chat request.
	MaxModelCalls = 10
	// MaxMessageRunes caps a user message.
	MaxMessageRunes = 8000
	// historyTokenBudget bounds the stored history the model sees; the
	// oldest messages go first.
	historyTokenBudget = 6000
	titleRunes         = 60
)

// Chat is one chat request. The answer is *ChatReply.
type Chat struct {
	answers[*ChatReply]
	AccountID      string
	ConversationID string // "" starts a new conversation
	Message        string
	Provider       string // X-AI-Provider, validated by the HTTP layer
	ProviderKey    string // X-AI-Key: used for this request only, never stored
	// IdempotencyKey (the Idempotency-Key header) makes a retried request
	// reuse the payment keys of the first attempt, so a retry after a
	// crash never pays twice. Without it every request is a new intent.
	IdempotencyKey string
	// RequestID names this one HTTP request (the HTTP layer makes it
	// fresh for each). Without an IdempotencyKey it stands in for one, so
	// that if the request itself is ever run twice (in a cluster, a
	// forwarded copy the sender took for undelivered and sent again) both
	// runs derive the same payment keys and pay once; a client's own retry is a new request
	// and a new intent, as before.
	RequestID string
	// Audit, when set, is the HTTP request's audit record (runtime/audit),
	// complete but for what the chat did. The turn notes on it the tools
	// run and the payments they reported (NoteChatAudit) and writes it in
	// the commit that stores the answer: one commit per chat instead of
	// two (issue 38), and the record is durable exactly when the answer
	// is. The reply's Audited says it was written; a chat that fails
	// writes none and leaves the record to the caller.
	Audit *audit.Record `json:",omitempty"`
}

// ToolCall is the spec's ToolCall.
type ToolCall struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// The call as made, for the conversation state (convstate.go): its
	// arguments, idempotency key, and whether it waits for the user's yes
	// (tools.ErrNeedsConfirmation).
	args, key    string
	needsConfirm bool
}

// ChatReply is the spec's ChatResponse.
type ChatReply struct {
	Response       string     `json:"response"`
	ToolCalls      []ToolCall `json:"toolCalls,omitempty"`
	ConversationID string     `json:"conversationId"`
	// Audited reports that the turn wrote the request's audit record
	// (Chat.Audit). It is for the HTTP layer, which clears it before it
	// answers: the spec's ChatResponse has no such field.
	Audited bool `json:"audited,omitempty"`
}

// NoteChatAudit notes on rec what a chat did: the tools it ran and the
// payments (payment ids, transaction hashes, invoices, approvals) they
// reported. It changes nothing when no tool ran.
func NoteChatAudit(rec *audit.Record, calls []ToolCall) {
	if len(calls) == 0 {
		return
	}
	var ran, ids []string
	seen := map[string]bool{}
	for _, tc := range calls {
		ran = append(ran, tc.Name+" ("+tc.Status+")")
		c := client.ToolCall{Name: tc.Name, Status: tc.Status, Detail: tc.Detail}
		for _, f := range []string{"paymentId", "txHash", "invoiceId", "approvalId"} {
			if v := c.Field(f); v != "" && !seen[v] && len(ids) < 20 {
				seen[v] = true
				ids = append(ids, cutText(v, 100))
			}
		}
	}
	rec.Detail = cutText("tools: "+strings.Join(ran, ", "), 300)
	rec.PaymentIDs = ids
}

// Models builds the model of one request.
type Models func(provider, key string) (llms.Model, error)

// Title makes a conversation title from its first message: at most 60
// runes, cut on a word boundary, with an ellipsis when cut.
func Title(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if utf8.RuneCountInString(msg) <= titleRunes {
		return msg
	}
	r := []rune(msg)[:titleRunes-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > titleRunes/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:-") + "…"
}

func validateChat(msg string) error {
	if strings.TrimSpace(msg) == "" {
		return fmt.Errorf("%w: message is empty: send the text for the agent", ErrBadChat)
	}
	if n := utf8.RuneCountInString(msg); n > MaxMessageRunes {
		return fmt.Errorf("%w: message has %d characters; the limit is %d", ErrBadChat, n, MaxMessageRunes)
	}
	if !utf8.ValidString(msg) {
		return fmt.Errorf("%w: message is not valid UTF-8", ErrBadChat)
	}
	return nil
}

// chat runs the tool loop for one request.
func (a *Actor) chat(ctx context.Context, c *Chat) (*ChatReply, error) {
	if err := validateChat(c.Message); err != nil {
		return nil, err
	}
	start := time.Now()
	defer func() { a.deps.Metrics.Chat(a.id, time.Since(start)) }()
	if a.deps.Models == nil {
		return nil, errors.New("chat is not configured on this node")
	}
	// An unknown or foreign conversation is a 404 before anything runs.
	var conv *Conversation
	var convVersion uint64
	var history []Message
	if c.ConversationID != "" {
		var err error
		if conv, convVersion, err = a.getConversation(ctx, c.ConversationID); err != nil {
			return nil, err
		}
		if history, err = a.listMessages(ctx, conv.ID); err != nil {
			return nil, err
		}
	}
	model, err := a.deps.Models(c.Provider, c.ProviderKey)
	if err != nil {
		return nil, err
	}
	if conv == nil {
		now := a.deps.now()
		conv = &Conversation{ID: newConversationID(), Title: Title(c.Message), CreatedAt: now, UpdatedAt: now}
	} else if conv.Title == "" {
		// A conversation created empty (POST …/conversations) is named by
		// its first message, like one the chat creates (DESIGN.md).
		conv.Title = Title(c.Message)
	}
	// The user's message is durable before any tool runs; a chat that runs
	// none stores it with the answer, in one commit (issue 21). A model
	// failure still leaves it stored, as an error returned below does.
	w := &chatWriter{a: a, conv: conv, version: convVersion, pending: []Message{{Role: "user", Text: c.Message}}, audit: c.Audit}

	env := a.toolEnv(ctx, conv.ID)
	env.UserText = c.Message
	// The conversation's state: what follow-ups refer to, and an action
	// waiting for the user's yes (convstate.go).
	if w.state, err = a.beginTurn(ctx, conv, convVersion != 0, history, &env); err != nil {
		return nil, err
	}
	offered, defs := a.deps.tools(), a.deps.toolDefs
	if defs == nil { // Deps not from Loader (tests)
		defs = toolDefinitions(offered)
	}
	msgs, err := a.prompt(ctx, env, history, c.Message)
	if err != nil {
		return nil, err
	}
	msgs = withState(msgs, w.state, a.deps.now())
	if reply, done, err := a.answerPending(ctx, c, w, env, offered, defs, model, msgs); done {
		return reply, err
	}

	var calls []ToolCall
	var answer string
	for turn := 1; ; turn++ {
		resp, err := model.GenerateContent(ctx, msgs, llms.WithTools(defs))
		if err != nil {
			if ferr := w.flush(ctx); ferr != nil {
				a.log(ctx).Warn("the user's message of a failed chat was not stored", slog.Any("err", ferr))
			}
			return nil, &ModelError{Err: err}
		}
		prompt, completion := llm.Usage(resp)
		a.deps.Metrics.Model(a.id, c.Provider, prompt, completion)
		text, toolCalls := llm.Reply(resp)
		if len(toolCalls) == 0 {
			answer = text
			break
		}
		// A response whose calls all only read leaves nothing to recover
		// after a crash: its user's message and outcomes wait for the
		// answer's commit. Any other call runs only once the user's
		// message is durable, and under a request key taken from it.
		readOnly := readsOnly(offered, toolCalls)
		requestKey := ""
		if !readOnly {
			if err := w.flush(ctx); err != nil {
				return nil, err
			}
			requestKey = w.requestKey(c)
		}
		results := a.runTools(ctx, env, offered, requestKey, turn, toolCalls)
		for _, r := range results {
			if movesValue(offered, r.Name) {
				// A new request to move value replaces the action that
				// waited for a yes (or drops it, when it failed).
				w.state.Pending = nil
			}
			w.state.note(r, env, a.deps.now())
		}
		if err := a.deps.fail(FailAfterTools); err != nil {
			return nil, err
		}
		calls = append(calls, results...)
		stored := make([]Message, len(results))
		for i, r := range results {
			stored[i] = Message{Role: "tool", Text: toolContent(r)}
		}
		// Tool outcomes are durable before the model sees them, so a
		// crash after a payment leaves its record; a read's outcome is
		// stored with the answer.
		if readOnly {
			w.pending = append(w.pending, stored...)
		} else if err := w.flush(ctx, stored...); err != nil {
			return nil, err
		}
		msgs = append(msgs, llm.AssistantMessage(text, toolCalls))
		for i, tc := range toolCalls {
			msgs = append(msgs, llm.ToolMessage(tc, toolContent(results[i])))
		}
		if turn == MaxModelCalls {
			answer = capAnswer(text, calls)
			break
		}
	}
	if strings.TrimSpace(answer) == "" {
		answer = "Done."
	}
	audited, err := w.finish(ctx, calls, answer)
	if err != nil {
		return nil, err
	}
	return &ChatReply{Response: answer, ToolCalls: calls, ConversationID: conv.ID, Audited: audited}, nil
}

// chatWriter appends one chat's messages to its conversation, holding the
// user's message until the first write that must be durable (before a tool
// that does more than read runs, or the answer), so that a chat that runs
// no tool, or only tools that read (tools.Tool.ReadOnly), commits once.
type chatWriter struct {
	a       *Actor
	conv    *Conversation
	version uint64 // the conversation's; 0 until it is stored
	pending []Message
	key     string // the request key, fixed at the first flush
	// state is the conversation's state, written with every flush (in the
	// conversation's record).
	state *convState
	// audit is the request's audit record (Chat.Audit), written by finish
	// with the answer; nil when the caller writes its own.
	audit *audit.Record
}

// finish stores the answer, and with it the request's audit record noted
// with calls when there is one; audited reports that there was.
func (w *chatWriter) finish(ctx context.Context, calls []ToolCall, answer string) (audited bool, err error) {
	var extra []persistence.Op
	if w.audit != nil {
		rec := *w.audit
		NoteChatAudit(&rec, calls)
		_, op, err := audit.Prepare(rec)
		if err != nil {
			return false, fmt.Errorf("agent %s: audit record: %w", w.a.id, err)
		}
		// The system may run one request twice (a forwarded chat sent
		// again; its tools pay once, TestChatRunTwiceByTheSystemPaysOnce):
		// the second run rewrites the request's one record rather than
		// failing its answer on it.
		op.Expect = persistence.Any()
		extra = append(extra, op)
	}
	if err := w.flushWith(ctx, extra, Message{Role: "agent", Text: answer}); err != nil {
		return false, err
	}
	return w.audit != nil, nil
}

// flush stores the held messages and msgs in one commit.
func (w *chatWriter) flush(ctx context.Context, msgs ...Message) error {
	return w.flushWith(ctx, nil, msgs...)
}

// flushWith is flush with more operations in the same commit.
func (w *chatWriter) flushWith(ctx context.Context, extra []persistence.Op, msgs ...Message) error {
	all := append(w.pending, msgs...)
	if len(all) == 0 {
		return nil
	}
	if w.state != nil {
		// The state is written with the conversation's record. One a
		// stored conversation's record did not hold yet (stored before
		// issue 38, or last written by an earlier build) moves there, and
		// its old record goes: an earlier build (a rolling upgrade's
		// rollback) then finds no state rather than a stale one.
		if w.conv.state == nil && w.version != 0 {
			extra = append(extra, persistence.Delete(TableConvState, w.a.convKey(w.conv.ID), persistence.Any()))
		}
		w.conv.state = w.state
	}
	v, err := w.a.appendMessagesWith(ctx, w.conv, w.version, extra, all...)
	if err != nil {
		return err
	}
	w.pending, w.version = nil, v
	return nil
}

// requestKey names this request for its tools' idempotency keys: the
// client's Idempotency-Key, else the HTTP request's id, else the id of the
// last message the request's first flush stored (the user's, or a read's
// outcome held with it): ids are unique per agent, and the chat loop asks
// only after a flush.
func (w *chatWriter) requestKey(c *Chat) string {
	switch {
	case c.IdempotencyKey != "":
		return c.IdempotencyKey
	case c.RequestID != "":
		return "request/" + c.RequestID
	case w.key == "":
		w.key = fmt.Sprintf("msg-%d", w.a.nextMessageID-1)
	}
	return w.key
}

func capAnswer(partial string, calls []ToolCall) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("I stopped after %d model calls, the limit for one request, before finishing. ", MaxModelCalls))
	ok, failed := 0, 0
	for _, c := range calls {
		if c.Status == "success" {
			ok++
		} else {
			failed++
		}
	}
	b.WriteString(fmt.Sprintf("So far %d tool call(s) succeeded and %d failed; ask me to continue if something is left.", ok, failed))
	if s := strings.TrimSpace(partial); s != "" {
		b.WriteString(" ")
		b.WriteString(s)
	}
	return b.String()
}

func toolContent(r ToolCall) string { return llm.ResultContent(r.Name, r.Status, r.Detail) }

// runTools runs every call of one model response concurrently and returns
// their results in call order. A tool's failure is a result, not an error.
func (a *Actor) runTools(ctx context.Context, env tools.Env, offered []tools.Tool, requestKey string, turn int, tcs []llms.ToolCall) []ToolCall {
	out := make([]ToolCall, len(tcs))
	var wg sync.WaitGroup
	for i, tc := range tcs {
		wg.Add(1)
		go func(i int, tc llms.ToolCall) {
			defer wg.Done()
			out[i] = a.runTool(ctx, env, offered, requestKey, turn, i, tc)
			a.deps.Metrics.Tool(a.id, out[i].Name, out[i].Status)
		}(i, tc)
	}
	wg.Wait()
	return out
}

func (a *Actor) runTool(ctx context.Context, env tools.Env, offered []tools.Tool, requestKey string, turn, index int, tc llms.ToolCall) ToolCall {
	name, args := "", "{}"
	if tc.FunctionCall != nil {
		name, args = tc.FunctionCall.Name, tc.FunctionCall.Arguments
	}
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	// Stable across a retried request: same request key, same turn and
	// position, same call.
	h := sha256.Sum256([]byte(strings.Join([]string{a.id, requestKey, fmt.Sprint(turn), fmt.Sprint(index), name, args}, "\x00")))
	return a.execTool(ctx, env, offered, name, args, hex.EncodeToString(h[:16]))
}

// execTool runs one tool call under the idempotency key key, through
// Tool.Call (the money gate, unless env is a direct call's). A tool's
// failure is a result, not an error.
func (a *Actor) execTool(ctx context.Context, env tools.Env, offered []tools.Tool, name, args, key string) (res ToolCall) {
	res.Name = name
	fail := func(err error) ToolCall {
		raw, _ := json.Marshal(map[string]string{"error": err.Error()})
		return ToolCall{Name: name, Status: "error", Detail: string(raw), args: args, key: key, needsConfirm: errors.Is(err, tools.ErrNeedsConfirmation)}
	}
	defer func() {
		// A tool that panics is a failed call, not a failed agent.
		if p := recover(); p != nil {
			a.log(ctx).Error("tool panicked", slog.String("tool", name), slog.String("panic", fmt.Sprint(p)))
			res = fail(errors.New("the tool failed unexpectedly"))
		}
	}()
	tool := offeredTool(offered, name)
	if tool == nil {
		return fail(fmt.Errorf("unknown tool %q", name))
	}
	if !json.Valid([]byte(args)) {
		return fail(errors.New("the arguments are not valid JSON"))
	}
	callEnv := env
	callEnv.IdempotencyKey = key
	v, err := tool.Call(ctx, &callEnv, json.RawMessage(args))
	if err != nil {
		return fail(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fail(fmt.Errorf("encode result: %w", err))
	}
	if tool.Payment {
		var paid struct {
			Chain chains.ID `json:"chain"`
		}
		if json.Unmarshal(raw, &paid) == nil && paid.Chain != "" {
			a.deps.Metrics.Payment(a.id, paid.Chain)
		}
	}
	return ToolCall{Name: name, Status: "success", Detail: string(raw), args: args, key: key}
}

func toolDefinitions(ts []tools.Tool) []llms.Tool {
	out := make([]llms.Tool, len(ts))
	for i, t := range ts {
		out[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}}
	}
	return out
}

// cutText cuts s to n bytes with an ellipsis, as the HTTP layer cuts the
// audit records it writes itself (httpapi's truncate).
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
