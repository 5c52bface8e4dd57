package agent

import (
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

// Messages the agent actor answers. Each declares its answer type
// (answers[R]) and is registered once in protocol.go. Every message the API
// sends carries the caller's account (Scoped): an agent of another account
// answers ErrNotFound, so its existence never leaks. Across cluster members
// they travel as JSON inside the actors/msg envelope (RegisterWire).

// Create makes this (new) agent. The answer is *Record.
type Create struct {
	answers[*Record]
	AccountID   string
	Name        string
	Chain       string      // as requested: one chain id or "all"
	Chains      []chains.ID // resolved, canonical order
	OwnerWallet string
	OwnerScheme string
	// ReplayKey and KeepUntil record the owner signature as used, in the
	// same atomic write that creates the agent.
	ReplayKey string
	KeepUntil time.Time
}

// Get answers *Record.
type Get struct {
	answers[*Record]
	AccountID string
}

// GetStatus answers *Status.
type GetStatus struct {
	answers[*Status]
	AccountID string
	// Chain is the chain to report ("" = the agent's first chain); one
	// the agent is not deployed on is ErrNotOnChain.
	Chain string
}

// Export answers the account key of the agent's first chain (0x hex) after
// the owner's fresh signature. The actor verifies the signature itself,
// against the stored owner wallet.
type Export struct {
	answers[string]
	AccountID string
	Signature string
	Message   string
}

// Attest answers the enclave's attestation of this agent's keys.
type Attest struct {
	answers[enclave.Attestation]
	AccountID string
	Nonce     string
}

// ListConversations answers []Conversation, most recently updated first.
type ListConversations struct {
	answers[[]Conversation]
	AccountID string
}

// CreateConversation answers *Conversation (empty, title "").
type CreateConversation struct {
	answers[*Conversation]
	AccountID string
}

// ListMessages answers []Message in chronological order.
type ListMessages struct {
	answers[[]Message]
	AccountID      string
	ConversationID string
}

// DeleteConversation removes the conversation and all its messages.
type DeleteConversation struct {
	answers[None]
	AccountID      string
	ConversationID string
}

// ListNotifications answers *Inbox.
type ListNotifications struct {
	answers[*Inbox]
	AccountID string
}

// MarkNotificationsRead marks every notification read.
type MarkNotificationsRead struct {
	answers[None]
	AccountID string
}

// DeleteNotifications deletes every notification.
type DeleteNotifications struct {
	answers[None]
	AccountID string
}

// Notify stores a notification raised by a service (scanner, invoices,
// schedules). It carries no account: only in-process services send it.
type Notify struct {
	answers[*Notification]
	Type  string
	Title string
	Body  string
}
