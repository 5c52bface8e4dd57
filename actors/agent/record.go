// Package agent is the agent actor's behaviour: it owns one agent's record,
// conversations, inbox, tool loop and schedules. The runtime
// package hosts it; this package holds no actor plumbing of its own.
package agent

import (
	"encoding/json"
	"fmt"
	"time"
)

// Tables this package owns. Keys are chosen so that key order is the order
// clients ask for.
const (
	TableAgents        = "agents"            // agent id → Record
	TableAgentNames    = "agent_names"       // name → agent id (unique)
	TableAgentWallets  = "agent_wallets"     // account id/normalized wallet/created/id → agent id
	TableAgentAccounts = "agent_accounts"    // account id/created/id → agent id
	TableConversations = "conversations"     // agent id/conversation id → Conversation
	TableMessages      = "messages"          // agent id/conversation id/message id (hex) → Message
	TableNotifications = "notifications"     // agent id/notification id (hex) → Notification
	TableUsedSigs      = "used_signatures"   // replay key → expiry
	TableCreateSigs    = "agent_create_sigs" // create replay key → agent id (a retried create answers that agent)
)

// Record is the stored agent. Version comes from the store.
type Record struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	AccountID string `json:"accountId"`
	// Chain is what the create request asked for: one chain id or "all".
	Chain string `json:"chain"`
	// Chains are the chains the agent is deployed on, in canonical order.
	Chains        []string          `json:"chains"`
	OwnerWallet   string            `json:"ownerWallet"`
	OwnerScheme   string            `json:"ownerScheme"`
	Addresses     map[string]string `json:"addresses"`
	MetaAddresses map[string]string `json:"metaAddresses"`
	// Setup tracks the create flow's on-chain steps per chain (funding and
	// name registration): "pending", "done" or "failed: …".
	Funding      map[string]string `json:"funding,omitempty"`
	Registration map[string]string `json:"registration,omitempty"`
	CreatedAt    time.Time         `json:"createdAt"`
	// Counters of the integer ids the spec gives messages and notifications.
	LastMessageID      int64 `json:"lastMessageId,omitempty"`
	LastNotificationID int64 `json:"lastNotificationId,omitempty"`
}

func decodeRecord(raw []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("agent: decode record: %w", err)
	}
	return &r, nil
}
