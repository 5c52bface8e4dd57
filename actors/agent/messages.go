package agent

import (
	"time"

	"github.com/veilhq/veil/chains"
)

// Messages the agent actor answers. Every message but Create carries the
// caller's account: an agent of another account answers ErrNotFound, so its
// existence never leaks. They are plain Go values while agents live in one
// process; the cluster issue moves the ones that cross nodes to protobuf.

// Create makes this (new) agent. The answer is *Record.
type Create struct {
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
type Get struct{ AccountID string }

// GetStatus answers *Status.
type GetStatus struct {
	AccountID string
	// Chain is the chain to report ("" = the agent's first chain); one
	// the agent is not deployed on is ErrNotOnChain.
	Chain string
}

// Export answers the account key of the agent's first chain (0x hex) after
// the owner's fresh signature. The actor verifies the signature itself,
// against the stored owner wallet.
type Export struct {
	AccountID string
	Signature string
	Message   string
}

// Attest answers the enclave's attestation of this agent's keys.
type Attest struct {
	AccountID string
	Nonce     string
}

// ListConversations answers []Conversation, most recently updated first.
type ListConversations struct{ AccountID string }

// CreateConversation answers *Conversation (empty, title "").
type CreateConversation struct{ AccountID string }

// ListMessages answers []Message in chronological order.
type ListMessages struct {
	AccountID      string
	ConversationID string
}

// DeleteConversation removes the conversation and all its messages.
type DeleteConversation struct {
	AccountID      string
	ConversationID string
}

// ListNotifications answers *Inbox.
type ListNotifications struct{ AccountID string }

// MarkNotificationsRead marks every notification read.
type MarkNotificationsRead struct{ AccountID string }

// DeleteNotifications deletes every notification.
type DeleteNotifications struct{ AccountID string }

// Notify stores a notification raised by a service (scanner, invoices,
// schedules). It carries no account: only in-process services send it.
type Notify struct {
	Type  string
	Title string
	Body  string
}
