package agent

import "errors"

// Errors the agent actor answers, all in one place. The status in each
// comment is the one httpapi answers for it (apiError in httpapi/agents.go,
// moneyError in httpapi/invoices.go, chatError in httpapi/chat.go); each
// crosses the cluster wire under its code in sentinelCodes, so errors.Is
// holds on the caller's member as on the host's.
var (
	// ErrNotFound: no such agent, or it belongs to another account (404).
	ErrNotFound = errors.New("agent not found")
	// ErrNameTaken: another agent has the name (409).
	ErrNameTaken = errors.New("agent name is already taken")
	// ErrReplayed: the owner signature was already used (400).
	ErrReplayed = errors.New("this signature was already used: sign a new message")
	// ErrConversationNotFound: no such conversation for this agent (404).
	ErrConversationNotFound = errors.New("conversation not found")
	// ErrBadChat: an empty or over-long chat message (400).
	ErrBadChat = errors.New("bad chat message")
	// ErrBadToolCall: a direct tool call (CallTool) the agent cannot take.
	// httpapi checks the same limit before it asks, so the API never
	// answers it.
	ErrBadToolCall = errors.New("bad tool call")
	// ErrNotOnChain: a status asked for a chain the agent is not deployed
	// on (400).
	ErrNotOnChain = errors.New("the agent is not deployed on that chain")

	// ErrInvoiceNotFound: no such invoice, or another account's (404).
	ErrInvoiceNotFound = errors.New("invoice not found")
	// ErrNoPayment: the chain shows no payment that settles the invoice
	// (400). Its message says what was checked.
	ErrNoPayment = errors.New("no payment settles this invoice")
	// ErrInvoiceExpired: the invoice is past its expiry and cannot be
	// paid (409). Its message says when it expired.
	ErrInvoiceExpired = errors.New("invoice expired")
	// ErrInvoiceSettled: a claim names a transaction other than those
	// that paid the already paid invoice (409).
	ErrInvoiceSettled = errors.New("invoice already paid")
	// ErrScheduleNotFound: no such schedule for this agent (404).
	ErrScheduleNotFound = errors.New("schedule not found")
	// ErrScheduleTransition: the action is not allowed in the schedule's
	// status (409).
	ErrScheduleTransition = errors.New("schedule action not allowed")

	// ErrApprovalNotFound: no such approval for this agent (404).
	ErrApprovalNotFound = errors.New("approval not found")
	// ErrApprovalDecided: the approval was decided or expired already (409).
	ErrApprovalDecided = errors.New("this payment was already decided")
	// ErrBadDecision: decision is neither approve nor deny (400).
	ErrBadDecision = errors.New(`decision must be "approve" or "deny"`)

	// ErrBadFilter: a list's filter, limit or cursor is not valid (400);
	// the message says which and what to send. httpapi checks the same
	// rules before it asks (lists.go).
	ErrBadFilter = errors.New("bad list filter")
	// ErrPaymentNotFound: no payment record by that id for this agent
	// (404).
	ErrPaymentNotFound = errors.New("payment not found")
)

// ModelError is a failure of the model provider (502). It crosses the wire
// as kind "agent.model" (RegisterWire).
type ModelError struct{ Err error }

func (e *ModelError) Error() string { return "model provider failed: " + e.Err.Error() }
func (e *ModelError) Unwrap() error { return e.Err }

// sentinelCode is a sentinel error with its code on the cluster wire.
type sentinelCode struct {
	code string
	err  error
}

// sentinelCodes gives every error above its code on the cluster wire
// (RegisterWire); TestEverySentinelHasACode fails when one is
// missing. A code, once used, keeps its meaning: members of two adjacent
// versions talk during a rolling upgrade.
var sentinelCodes = []sentinelCode{
	{"agent.not-found", ErrNotFound},
	{"agent.name-taken", ErrNameTaken},
	{"agent.replayed", ErrReplayed},
	{"agent.conversation-not-found", ErrConversationNotFound},
	{"agent.bad-chat", ErrBadChat},
	{"agent.invoice-not-found", ErrInvoiceNotFound},
	{"agent.no-payment", ErrNoPayment},
	{"agent.invoice-expired", ErrInvoiceExpired},
	{"agent.invoice-settled", ErrInvoiceSettled},
	{"agent.schedule-not-found", ErrScheduleNotFound},
	{"agent.schedule-transition", ErrScheduleTransition},
	{"agent.approval-not-found", ErrApprovalNotFound},
	{"agent.approval-decided", ErrApprovalDecided},
	{"agent.bad-decision", ErrBadDecision},
	{"agent.not-on-chain", ErrNotOnChain},
	{"agent.bad-tool-call", ErrBadToolCall},
	{"agent.bad-filter", ErrBadFilter},
	{"agent.payment-not-found", ErrPaymentNotFound},
}
