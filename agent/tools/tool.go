// Package tools holds the agent's tools (docs/tools.md) as plain functions over small
// interfaces: no actor code, no HTTP. The agent actor's chat loop offers
// them to the model (Name, Description, Parameters) and runs the calls the
// model makes with Run.
//
// A tool's failure is a result, not a Go error the loop aborts on: Run
// returns (nil, err) and the loop reports {status: "error", detail} to the
// model and the client. Errors meant for the model (bad arguments, unknown
// recipient, insufficient funds) say what was wrong and what would work.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// Tool is one tool the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments object.
	Parameters map[string]any
	// Payment marks tools that send money now: they get an idempotency key
	// (a call without one is refused before the tool runs) and count in
	// the payments metric.
	Payment bool
	// MovesValue marks tools that move value now or later (payments,
	// withdrawals, schedules): Call runs them only behind the money gate
	// (Gate, package intent).
	MovesValue bool
	// ReadOnly marks tools that only read (the agent's records, the
	// chains, the directory): they write no record, sign nothing and
	// notify no one, so a call leaves nothing to recover after a crash.
	// The chat loop makes nothing durable around a response whose calls
	// are all ReadOnly (the user's message and their outcomes are stored
	// with the answer, in one commit), and MCP lists them with its
	// readOnlyHint. A tool that moves value is never ReadOnly
	// (TestReadOnlyToolsMoveNoValue).
	ReadOnly bool
	// Run validates args and does the work. The result is marshalled to
	// JSON as the call's detail.
	Run func(ctx context.Context, env *Env, args json.RawMessage) (any, error)
	// needs lists the Env services the tool cannot run without: withArgs
	// refuses a call when one is missing, before the tool runs.
	needs []service
}

// Call runs the tool: a tool that moves value only when the user's
// message instructs the agent (Gate). The chat loop runs every tool
// through Call.
func (t Tool) Call(ctx context.Context, env *Env, args json.RawMessage) (any, error) {
	if t.MovesValue {
		if err := Gate(env, t.Name); err != nil {
			return nil, err
		}
	}
	return t.Run(ctx, env, args)
}

// Agent is the identity of the agent a tool runs for.
type Agent struct {
	ID            string
	Name          string
	AccountID     string
	Chains        []chains.ID // deployed, canonical order; Chains[0] is the default
	Addresses     map[chains.ID]string
	MetaAddresses map[chains.ID]string
}

// Env is everything a tool may use. The agent actor builds one per call.
type Env struct {
	Agent Agent
	// Source is what asks for this call's payments: the conversation, or
	// a direct call (MCP) with no conversation. A payment request carries
	// it to its record (PaymentRequest.Record); the store refuses a record
	// without one, so a payment nobody asked for is never signed.
	Source PaymentSource
	// IdempotencyKey is unique to this tool call within this chat request
	// and stable if the same request is retried (see the chat loop): a
	// payment tool passes it to the chain so a retry never pays twice.
	IdempotencyKey string
	// UserText is the user's message of this turn (prompt-injection
	// limits: a payment the user did not ask for needs a restatement).
	UserText string
	// Explicit marks a direct tool call (MCP): the call itself is the
	// caller's instruction, so the restatement rule and the money gate,
	// which guard against a model acting on text the user did not
	// instruct, do not apply. Validation, the owner's approval rules and
	// the enclave's spending policy still do.
	Explicit bool
	// Confirmed marks a call the user confirmed as it stands (the
	// conversation's pending action, answered "yes"): checks that end in
	// ErrNeedsConfirmation pass. Policy, approvals and the enclave's
	// spending checks still apply.
	Confirmed bool
	// Earlier holds the user's own earlier messages of this conversation
	// (the last few, joined by JoinEarlier): a follow-up ("again", "the
	// same to carol", "send him 5 usdc") takes its amount, asset or
	// recipient from them, and a payment that does needs the user's
	// confirmation (ErrNeedsConfirmation); it never runs on them alone.
	Earlier string
	// ConfirmAbove is the owner's amount, by asset symbol, above which a
	// payment made in chat needs the user's confirmation
	// (policy.Policy.ConfirmAbove); nil: none.
	ConfirmAbove map[string]string
	Now          func() time.Time
	// askFirst is set by Gate for a statement or an ambiguous request: the
	// payment tools make such a call wait for the user's yes.
	askFirst string

	Chains    ChainOps
	Directory Directory
	Invoices  Invoices
	Schedules Schedules
	Memories  Memories
	Payments  Payments
	// Outgoing is the agent's payment records (docs/payments.md): a
	// payment tool names its record and asks before repeating one.
	Outgoing OutgoingPayments
	// InvoiceLookup finds this server's invoices (pay_invoice); HTTP
	// fetches another server's payment links (nil: a client with a
	// timeout that follows no redirect).
	InvoiceLookup InvoiceLookup
	HTTP          *http.Client
	// Notifier, when set, receives payment_sent and withdrawal
	// notifications after a payment tool succeeds; its errors never fail
	// the tool (the money has moved).
	Notifier Notifier
}

// Errors a tool's error result may match (errors.Is). Service
// implementations return them too.
var (
	// ErrUnknownRecipient: no Veil agent (or on-chain name) by that name.
	ErrUnknownRecipient = errors.New("unknown recipient")
	// ErrInvalidArgs: the call's arguments do not fit the tool's schema.
	ErrInvalidArgs = errors.New("invalid arguments")
	// ErrNotConfirmed: a payment tool's amount (or withdrawal address) is
	// not in the user's message of this turn (the restatement rule).
	ErrNotConfirmed = errors.New("payment not confirmed by the user")
	// ErrNotConfigured: a service the tool needs is missing from Env.
	ErrNotConfigured = errors.New("service not configured")
	// ErrNeedsConfirmation: the call is well formed but does not run until
	// the user confirms exactly it (a payment whose asset was not stated,
	// one that repeats a payment still on its way, one above the owner's
	// confirmation amount). The error's text states what would be paid and
	// to whom. The conversation keeps the call as its pending action; a
	// "yes" runs the same call once more with Env.Confirmed set and the
	// same idempotency key.
	ErrNeedsConfirmation = errors.New("needs the user's confirmation")
)

// Notifier raises a notification in the agent's inbox.
type Notifier interface {
	// Notify raises one notification. key is the tool call's idempotency
	// key: a retried call (same key) raising the same notification again
	// raises it once. "" raises it every time.
	Notify(ctx context.Context, key, typ, title, body string) error
}

// ChainOps reaches the chain actors on behalf of this agent. Keys stay in
// the enclave: the implementation signs with the agent's KeyRef.
type ChainOps interface {
	Balance(ctx context.Context, chain chains.ID) (chains.Balance, error)
	// Assets lists what chain's connector carries, its own descriptors
	// (chains.Connector.Assets): a payment tool binds its request's asset
	// to one of them (PaymentRequest.Bind) before it is paid. A chain
	// this node cannot reach answers an error matching
	// chains.ErrUnavailable.
	Assets(ctx context.Context, chain chains.ID) ([]chains.Asset, error)
	// SendStealth pays req (a stealth payment to its meta-address, as
	// the tool read it: PaymentRequest) from the agent's account, under
	// the owner's approval rules (a payment they hold answers a
	// *HeldError), recorded (req.Record) before it is signed as exactly
	// req.SendRequest.
	SendStealth(ctx context.Context, req PaymentRequest) (chains.TxResult, error)
	// Withdraw spends a received stealth payment (req, KindWithdraw, as
	// withdraw or withdraw_all read it: its one-time address req.From) to
	// a plain address; req.All withdraws everything less fees. It is
	// recorded (req.Record) before it is signed as exactly
	// req.WithdrawRequest.
	Withdraw(ctx context.Context, req PaymentRequest) (chains.TxResult, error)
	RegisterName(ctx context.Context, chain chains.ID) (chains.TxResult, error)
	ResolveName(ctx context.Context, chain chains.ID, name string) (string, error)
	Fund(ctx context.Context, chain chains.ID) (chains.TxResult, error)
	// Scan runs the chain's scanner now and returns how many new payments
	// it delivered to this agent.
	Scan(ctx context.Context, chain chains.ID) (int, error)
	TxLink(chain chains.ID, txHash string) string
	// AuthorizationDomain finds, among the agent's EVM chains, the one
	// with chainID, and its token at contract; it answers the chain and
	// the token's EIP-712 domain and symbol (Name, Version, ChainID,
	// Contract, Asset), or an error matching chains.ErrNoAuthorizations.
	AuthorizationDomain(ctx context.Context, chainID *big.Int, contract string) (chains.ID, chains.TransferAuthorization, error)
	// SignAuthorization has the agent's account sign the EIP-3009
	// authorization of the x402 payment pr (KindX402, read once by
	// fetch_paid): terms gives the token's domain, the validity window and
	// the nonce; pr.Authorization sets what it moves (asset, amount, payee),
	// its From is set to the account. The owner's approval rules take pr
	// first (a payment they would hold is refused with a *HeldError: an
	// x402 payment cannot wait), the record is pr.Record() and the spend is
	// signed under pr's key; the enclave checks the spending policy. It
	// answers the authorization as signed and the 65-byte signature
	// (fetch_paid, docs/x402.md).
	SignAuthorization(ctx context.Context, pr PaymentRequest, terms chains.TransferAuthorization) (chains.TransferAuthorization, []byte, error)
}

// Directory resolves Veil agents by name (the platform's own registry).
type Directory interface {
	// LookupAgent answers the agent's deployed chains and meta-addresses,
	// or an error matching ErrUnknownRecipient.
	LookupAgent(ctx context.Context, name string) (Agent, error)
}

// Payment is a stealth payment the agent received.
type Payment struct {
	Chain           chains.ID `json:"chain"`
	StealthAddress  string    `json:"stealthAddress"`
	EphemeralPubKey string    `json:"ephemeralPubKey"`
	Asset           string    `json:"asset"`
	Amount          string    `json:"amount"`
	Balance         string    `json:"balance"`
	TxHash          string    `json:"txHash"`
	Withdrawn       bool      `json:"withdrawn"`
	ReceivedAt      time.Time `json:"receivedAt"`
	// WithdrawnTo lists the addresses withdrawals of this payment went to
	// (privacy_check looks for addresses shared by several payments).
	WithdrawnTo []string `json:"withdrawnTo,omitempty"`
}

// Withdrawal records a withdrawal from a received payment.
type Withdrawal struct {
	Chain          chains.ID
	StealthAddress string
	To             string
	// Amount withdrawn; "" means everything (the payment is emptied).
	Amount string
	TxHash string
}

// Payments lists what the agent received.
type Payments interface {
	// Received lists the payments received on chain, oldest first.
	Received(ctx context.Context, chain chains.ID) ([]Payment, error)
	// MarkWithdrawn records a withdrawal; recording the same TxHash twice
	// changes nothing.
	MarkWithdrawn(ctx context.Context, w Withdrawal) error
}

// Invoice is the spec's Invoice as this server keeps and answers it: the
// client's wire type, defined once there, with what the server adds. Its
// Chain (typed) and PayTo shadow client.Invoice's, which are optional
// (omitempty) for servers that may not set them: this server always does,
// so they are always in the JSON, at the same place as before. The
// embedded Invoice's own Chain and PayTo stay empty.
type Invoice struct {
	client.Invoice
	AgentID string    `json:"-"`
	Chain   chains.ID `json:"chain"`
	PayTo   string    `json:"payTo"`
	// ExpiresAt is when the invoice stops accepting payment (null: never);
	// create_invoice's expires_in sets it (docs/invoices.md).
	ExpiresAt *time.Time `json:"expiresAt"`
}

// Expired says whether inv can no longer be paid at now.
func (inv Invoice) Expired(now time.Time) bool {
	return inv.ExpiresAt != nil && !now.Before(*inv.ExpiresAt)
}

// Closed says, for a refusal, why an unpaid invoice past its ExpiresAt can
// no longer be paid: cancelled by its payee (cancel_invoice sets both
// times) or expired.
func (inv Invoice) Closed() string { return closedWords(inv.CancelledAt, inv.ExpiresAt) }

// closedWords is the one wording of why an invoice stopped accepting
// payment, for Invoice and PayableInvoice.
func closedWords(cancelledAt, expiresAt *time.Time) string {
	switch {
	case cancelledAt != nil:
		return "was cancelled by its payee at " + cancelledAt.UTC().Format(time.RFC3339)
	case expiresAt != nil:
		return "expired at " + expiresAt.UTC().Format(time.RFC3339)
	}
	return "expired"
}

// Invoices creates and lists the agent's invoices.
type Invoices interface {
	// Create stores a pending invoice for inv's Chain, Amount, Asset and
	// Memo and fills in the rest, under a fresh random id (the id is
	// public: the pay page is /pay/<id>). A non-empty idempotencyKey makes
	// the call idempotent: creating again with the same key returns the
	// invoice first created with it. The key is never the id, and the id
	// cannot be derived from it.
	Create(ctx context.Context, inv Invoice, idempotencyKey string) (Invoice, error)
	// List returns the agent's invoices, newest first.
	List(ctx context.Context) ([]Invoice, error)
}

// Schedule is the spec's Schedule.
type Schedule struct {
	ID        string     `json:"id"`
	Recipient string     `json:"recipient"`
	Amount    string     `json:"amount"`
	Asset     string     `json:"asset"`
	Chain     chains.ID  `json:"chain"`
	Interval  string     `json:"interval"`
	Status    string     `json:"status"`
	NextRun   time.Time  `json:"nextRun"`
	LastRun   *time.Time `json:"lastRun"`
	EndDate   *time.Time `json:"endDate,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Schedules manages recurring payments.
type Schedules interface {
	// Create stores an active schedule from s's Recipient, Amount, Asset,
	// Chain, Interval and EndDate; the service sets Status, CreatedAt and
	// NextRun (see NextRun). A non-empty s.ID makes it idempotent.
	Create(ctx context.Context, s Schedule) (Schedule, error)
	List(ctx context.Context) ([]Schedule, error)
	// Transition applies pause|resume|cancel to the schedule whose id
	// starts with idPrefix (unique prefix of at least 4 characters).
	Transition(ctx context.Context, idPrefix, action string) (Schedule, error)
}

// Memory is something the agent was asked to remember.
type Memory struct {
	ID         string    `json:"id"`
	Content    string    `json:"content"`
	Type       string    `json:"type"`
	Importance int       `json:"importance"`
	CreatedAt  time.Time `json:"createdAt"`
}

// Memories stores what the agent remembers across conversations.
type Memories interface {
	// Save stores m's Content, Type and Importance; the service sets
	// CreatedAt (and ID when empty: a preset ID makes it idempotent).
	Save(ctx context.Context, m Memory) (Memory, error)
	List(ctx context.Context) ([]Memory, error)
}
