package tools

import (
	"context"
	"errors"
	"time"

	"github.com/veilhq/veil/chains"
)

// PaymentStatus is where an outgoing payment stands. It only moves
// forward (CanBecome): pending → broadcast → confirmed | failed, and
// pending → refused. docs/payments.md has the states and what each
// promises.
type PaymentStatus string

const (
	// PaymentPending: recorded before its signing request; it may have been
	// signed and may have reached the node, and nobody knows yet. Never
	// "nothing was done": a retry under the same idempotency key resumes
	// it, and the settlement tells how it ended.
	PaymentPending PaymentStatus = "pending"
	// PaymentBroadcast: the node accepted the transaction (TxHash); it is
	// not yet confirmed.
	PaymentBroadcast PaymentStatus = "broadcast"
	// PaymentConfirmed: mined and final enough (Confirmations). Final.
	PaymentConfirmed PaymentStatus = "confirmed"
	// PaymentFailed: signed, and reverted on chain or provably never
	// mined (its nonce or sequence went to another transaction; the
	// connector dropped it for good). Reason says why. Final.
	PaymentFailed PaymentStatus = "failed"
	// PaymentRefused: nothing was signed (the policy, funds, a bad
	// request, the chain unreachable before signing). Reason says why.
	// Final.
	PaymentRefused PaymentStatus = "refused"
)

// Final reports whether s is an end state (confirmed, failed, refused).
func (s PaymentStatus) Final() bool {
	return s == PaymentConfirmed || s == PaymentFailed || s == PaymentRefused
}

// Open reports whether the payment may still move money or settle
// (pending, broadcast).
func (s PaymentStatus) Open() bool { return s == PaymentPending || s == PaymentBroadcast }

// Valid reports whether s is one of the five statuses.
func (s PaymentStatus) Valid() bool { return s.Open() || s.Final() }

// CanBecome is the one rule of the record's life: a status moves only
// forward. The same status again is allowed (it may add a transaction
// hash, as a fee bump or rebroadcast does, or confirmations); a final
// status never changes; refused (nothing signed) follows only pending.
func (s PaymentStatus) CanBecome(next PaymentStatus) bool {
	switch {
	case !next.Valid():
		return false
	case s == next:
		return true
	case s == PaymentPending:
		return true
	case s == PaymentBroadcast:
		return next == PaymentConfirmed || next == PaymentFailed
	}
	return false
}

// PaymentKind is the operation that moves the value.
type PaymentKind string

const (
	KindSendPayment PaymentKind = "send_payment" // a stealth payment (send_payment, pay_agent, a schedule's run, an approved payment)
	KindPayInvoice  PaymentKind = "pay_invoice"  // a plain transfer to an invoice's one-time address
	KindWithdraw    PaymentKind = "withdraw"     // from a received payment's one-time address (withdraw, withdraw_all)
	KindX402        PaymentKind = "x402"         // an EIP-3009 authorization signed for fetch_paid
	KindGasFunding  PaymentKind = "gas_funding"  // native asset sent to a one-time address so it can pay gas
	KindRelayerFee  PaymentKind = "relayer_fee"  // the relayer's fee taken from a withdrawal it pays the fees of
	KindRemainder   PaymentKind = "remainder"    // the native rest sent after an everything-withdrawal of a token
)

// SourceType names what asked for a payment.
type SourceType string

const (
	SourceConversation SourceType = "conversation" // a chat message (ID: the conversation)
	SourceSchedule     SourceType = "schedule"     // a schedule's run (ID: the schedule)
	SourceApproval     SourceType = "approval"     // a payment the owner approved (ID: the approval)
	SourceMCP          SourceType = "mcp"          // a direct tool call (MCP, POST /agent/:id/tools/...)
	SourceAPI          SourceType = "api"          // an HTTP route that pays (no conversation)
)

// PaymentSource is what asked for a payment: its type and id ("" when
// the source has none, e.g. an MCP call).
type PaymentSource struct {
	Type SourceType `json:"type"`
	ID   string     `json:"id,omitempty"`
}

// PaymentRecipient is who a payment goes to: a name people read
// ("bob.veil", "invoice 3f2a… of shop.veil"; may be "") and the address
// the chain pays (a meta-address for a stealth payment, a plain address
// for an invoice, a withdrawal or an x402 payee).
type PaymentRecipient struct {
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// OutgoingPayment is the record of one payment this agent makes: one per
// value-moving request (per idempotency key), written before its signing
// request and moved forward as the chain answers (agent/state Outgoing
// stores it; docs/payments.md). Fee bumps and rebroadcasts stay one
// record with several TxHashes.
type OutgoingPayment struct {
	// ID is time-ordered (a UUIDv7): newer payments have larger ids.
	ID      string      `json:"id"`
	AgentID string      `json:"agentId"`
	Kind    PaymentKind `json:"kind"`
	// Source is what asked for it.
	Source PaymentSource `json:"source"`
	Chain  chains.ID     `json:"chain"`
	Asset  string        `json:"asset"`
	// Amount is what was asked for, in the asset's decimals; zero with
	// All (a withdrawal of everything less fees).
	Amount    chains.Amount    `json:"amount"`
	All       bool             `json:"all,omitempty"`
	Recipient PaymentRecipient `json:"recipient"`
	// From is the one-time address a withdrawal spends ("" otherwise).
	From string `json:"from,omitempty"`
	// ForPayment is the id of the payment this one serves: the withdrawal
	// of a gas_funding, relayer_fee or remainder record ("" otherwise).
	ForPayment string `json:"forPayment,omitempty"`
	// SameTx: a relayer_fee paid inside its withdrawal's own transaction
	// (Stellar, Solana: chains.SideSpend.SameTx), which has no settlement
	// of its own and settles with the withdrawal's, hash or not; false for
	// one in a transaction of its own (EVM).
	SameTx bool `json:"sameTx,omitempty"`
	// IdempotencyKey is the key the chain's connector sends it under; a
	// retry with it resumes this record.
	IdempotencyKey string        `json:"idempotencyKey"`
	Status         PaymentStatus `json:"status"`
	// TxHash is the latest transaction; TxHashes every one (fee bumps,
	// rebuilt attempts), oldest first.
	TxHash   string   `json:"txHash,omitempty"`
	TxHashes []string `json:"txHashes,omitempty"`
	// Confirmations counted when it was confirmed.
	Confirmations uint64 `json:"confirmations,omitempty"`
	// Reason says why it failed or was refused.
	Reason      string     `json:"reason,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	UpdatedAt   time.Time  `json:"updatedAt"`
	BroadcastAt *time.Time `json:"broadcastAt,omitempty"`
	SettledAt   *time.Time `json:"settledAt,omitempty"`
}

// PaymentUpdate is what the chain told about a payment: its status (which
// must be allowed by CanBecome), a transaction hash to add, the
// confirmations, the reason of a failure or refusal.
type PaymentUpdate struct {
	Status        PaymentStatus
	TxHash        string
	Confirmations uint64
	Reason        string
}

// OutgoingPayments reads the agent's payment records (agent/state
// Outgoing): a tool reports the record of its call and asks before
// repeating a payment still on its way.
type OutgoingPayments interface {
	// ByKey finds the record sent under the idempotency key on chain, or
	// an error matching ErrNoPaymentRecord.
	ByKey(ctx context.Context, chain chains.ID, key string) (OutgoingPayment, error)
	// FindRecent lists the payments of amount asset on chain to address
	// that are still open (pending, broadcast), or confirmed within
	// window, newest first.
	FindRecent(ctx context.Context, chain chains.ID, address, asset string, amount chains.Amount, window time.Duration) ([]OutgoingPayment, error)
	// OpenOn lists the payments on chain still on their way (pending,
	// broadcast), newest first (get_balance mentions them).
	OpenOn(ctx context.Context, chain chains.ID) ([]OutgoingPayment, error)
	// Advance moves record id forward by u (CanBecome); moved says
	// whether this call changed its status (fetch_paid: the x402 server
	// settled the authorization).
	Advance(ctx context.Context, id string, u PaymentUpdate) (rec OutgoingPayment, moved bool, err error)
}

// ErrNoPaymentRecord: no payment record by that id or key.
var ErrNoPaymentRecord = errors.New("no such payment record")
