package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxToolKeyLen caps CallTool's IdempotencyKey, as the chat's header.
const MaxToolKeyLen = 255

// CallTool runs one of the agent's tools directly, without a model: the
// MCP endpoint sends it. The answer is *ToolCall (status "success" or
// "error" with the tool's detail, as a chat's tool call).
//
// The call is the caller's explicit instruction, so the chat's money gate
// (the user's message must instruct a payment) does not apply; the tool's
// own validation, the owner's approval rules and the enclave's spending
// policy do, exactly as in chat.
type CallTool struct {
	answers[*ToolCall]
	AccountID string
	Tool      string
	// Arguments is the JSON object of the tool's arguments ("" is {}).
	Arguments string
	// IdempotencyKey, when set, makes the call idempotent: the same key
	// with the same tool and arguments reuses the payment key of the first
	// call, so a retry never pays twice. Without it every call is a new
	// intent.
	IdempotencyKey string
}

func (a *Actor) callTool(ctx context.Context, m *CallTool) (*ToolCall, error) {
	if len(m.IdempotencyKey) > MaxToolKeyLen {
		return nil, fmt.Errorf("%w: the idempotency key is too long: at most %d characters", ErrBadToolCall, MaxToolKeyLen)
	}
	args := m.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	key := "call-" + newID()
	if m.IdempotencyKey != "" {
		// "call" keeps these keys apart from the chat's, whose hash has
		// the request key, turn and position in the same places.
		h := sha256.Sum256([]byte(strings.Join([]string{a.id, "call", m.IdempotencyKey, m.Tool, args}, "\x00")))
		key = hex.EncodeToString(h[:16])
	}
	env := a.toolEnv(ctx, "")
	env.Explicit = true
	res := a.execTool(ctx, env, a.deps.tools(), m.Tool, args, key)
	a.deps.Metrics.Tool(a.id, res.Name, res.Status)
	return &res, nil
}
