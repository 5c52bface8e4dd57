package client

import (
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
)

// The client's types mirror the spec's JSON (spec/agent-platform-api.md
// §2 and DESIGN.md). Where the server has no type of its own layer for a
// shape (agent info, the create answer, webhooks and their deliveries, the
// request bodies), httpapi uses these: a change here changes the server's
// JSON too, which httpapi's OpenAPI tests check against openapi.json.

// Chain identifiers.
const (
	ChainHorizen  = "horizen"
	ChainEthereum = "ethereum"
	ChainPolygon  = "polygon"
	ChainBase     = "base"
	ChainStellar  = "stellar"
	ChainSolana   = "solana"
	ChainAll      = "all"
)

// NameSuffix is the suffix of an agent's full name (alice.veil).
const NameSuffix = chains.NameSuffix

// Health is GET /health.
type Health struct {
	Status string `json:"status"`
}

// AgentInfo is the spec's AgentInfo (lists and lookups).
type AgentInfo struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Chains        []string          `json:"chains"`
	Addresses     map[string]string `json:"addresses"`
	MetaAddresses map[string]string `json:"metaAddresses"`
}

// FullName is the name with the .veil suffix.
func (a AgentInfo) FullName() string { return a.Name + NameSuffix }

// CreateAgentRequest is the body of POST /agent/create. Build a signed one
// with SignCreate.
type CreateAgentRequest struct {
	Name      string `json:"name"`
	Chain     string `json:"chain"`
	Wallet    string `json:"wallet"`
	Signature string `json:"signature"`
	Message   string `json:"message,omitempty"`
}

// CreatedAgent is the single-chain answer of POST /agent/create: the
// spec's five fields, then every chain's addresses as AgentInfo has them
// (additive; docs/compat-wraith.md).
type CreatedAgent struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Chain         string            `json:"chain"`
	Address       string            `json:"address"`
	MetaAddress   string            `json:"metaAddress"`
	Chains        []string          `json:"chains"`
	Addresses     map[string]string `json:"addresses"`
	MetaAddresses map[string]string `json:"metaAddresses"`
}

// AgentStatus is the spec's AgentStatus (the agent's first chain).
type AgentStatus struct {
	Balance         string            `json:"balance"`
	Tokens          map[string]string `json:"tokens"`
	PendingInvoices int               `json:"pendingInvoices"`
	Address         string            `json:"address"`
	MetaAddress     string            `json:"metaAddress"`
	Chain           string            `json:"chain"`
}

// ExportRequest is the body of POST /agent/:id/export. Build a signed one
// with SignExport.
type ExportRequest struct {
	Signature string `json:"signature"`
	Message   string `json:"message"`
}

// ExportedKey is the answer of POST /agent/:id/export: the agent's private
// key as 0x-prefixed hex.
type ExportedKey struct {
	Secret string `json:"secret"`
}

// ChatRequest is the body of POST /agent/:id/chat. An empty ConversationID
// starts a new conversation.
type ChatRequest struct {
	Message        string `json:"message"`
	ConversationID string `json:"conversationId,omitempty"`
}

// ChatResponse is the spec's ChatResponse.
type ChatResponse struct {
	Response       string     `json:"response"`
	ToolCalls      []ToolCall `json:"toolCalls,omitempty"`
	ConversationID string     `json:"conversationId"`
}

// Links returns every link the tool calls reported (tx links, invoice pay
// links), in call order, without repeats.
func (r *ChatResponse) Links() []Link {
	var out []Link
	seen := map[string]bool{}
	for _, tc := range r.ToolCalls {
		for _, l := range tc.Links() {
			if !seen[l.URL] {
				seen[l.URL] = true
				out = append(out, l)
			}
		}
	}
	return out
}

// Tool call statuses.
const (
	ToolSuccess = "success"
	ToolError   = "error"
)

// ToolCall is the spec's ToolCall: one tool the agent ran.
type ToolCall struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Detail is a JSON string: the tool's result, or its error.
	Detail string `json:"detail,omitempty"`
}

// OK reports a successful tool call.
func (t ToolCall) OK() bool { return t.Status == ToolSuccess }

// Result decodes Detail into v.
func (t ToolCall) Result(v any) error { return json.Unmarshal([]byte(t.Detail), v) }

// Field returns a top-level string (or number, as text) member of Detail,
// such as "txHash" (send_payment) or "id" (create_invoice); "" when absent.
func (t ToolCall) Field(name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(t.Detail), &m) != nil {
		return ""
	}
	raw, ok := m[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// ErrorText is the error a failed tool reported ("" for a success).
func (t ToolCall) ErrorText() string {
	if t.OK() {
		return ""
	}
	if s := t.Field("error"); s != "" {
		return s
	}
	if s := t.Field("message"); s != "" {
		return s
	}
	var s string
	if json.Unmarshal([]byte(t.Detail), &s) == nil {
		return s
	}
	return t.Detail
}

// Link is a URL a tool reported: Kind is the JSON member's name
// ("txLink", "paymentLink", …).
type Link struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
}

// Links returns the http(s) URLs in Detail whose member names end in
// "link" (any case, at any depth), sorted by where they appear in the
// JSON text.
func (t ToolCall) Links() []Link {
	var v any
	if json.Unmarshal([]byte(t.Detail), &v) != nil {
		return nil
	}
	var out []Link
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			if strings.HasSuffix(strings.ToLower(key), "link") && (strings.HasPrefix(x, "http://") || strings.HasPrefix(x, "https://")) {
				out = append(out, Link{Kind: key, URL: x})
			}
		}
	}
	walk("", v)
	sort.SliceStable(out, func(i, j int) bool {
		return strings.Index(t.Detail, out[i].URL) < strings.Index(t.Detail, out[j].URL)
	})
	return out
}

// Conversation is the spec's Conversation.
type Conversation struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Message roles.
const (
	RoleUser   = "user"
	RoleAgent  = "agent"
	RoleTool   = "tool"
	RoleSystem = "system"
)

// Message is the spec's Message. For role "tool", Text is a JSON string
// {name, status, detail} (see ToolCall).
type Message struct {
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"createdAt"`
}

// ToolCall decodes the Text of a role "tool" message.
func (m Message) ToolCall() (ToolCall, bool) {
	var tc ToolCall
	if m.Role != RoleTool || json.Unmarshal([]byte(m.Text), &tc) != nil || tc.Name == "" {
		return ToolCall{}, false
	}
	return tc, true
}

// Invoice statuses.
const (
	InvoicePending = "pending"
	InvoicePaid    = "paid"
)

// Invoice is the spec's Invoice. Chain and PayTo are Veil's additions
// (the chain and one-time address to pay); they may be empty.
type Invoice struct {
	ID          string    `json:"id"`
	AgentName   string    `json:"agentName"`
	Amount      string    `json:"amount"`
	Asset       string    `json:"asset"`
	Memo        string    `json:"memo"`
	Status      string    `json:"status"`
	TxHash      *string   `json:"txHash"`
	PaymentLink string    `json:"paymentLink"`
	CreatedAt   time.Time `json:"createdAt"`
	Chain       string    `json:"chain,omitempty"`
	PayTo       string    `json:"payTo,omitempty"`
	// ExpiresAt is when the invoice stops accepting payment (nil: never).
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// CancelledAt is when its agent cancelled it (cancel_invoice); a
	// cancelled invoice expired at that moment (ExpiresAt) and can no
	// longer be paid.
	CancelledAt *time.Time `json:"cancelledAt,omitempty"`
}

// Notification types named by the spec and DESIGN.md.
const (
	NotifyPaymentReceived = "payment_received"
	NotifyPaymentSent     = "payment_sent"
	// NotifyPaymentFailed: a payment that was signed did not go through
	// (reverted, or never mined); docs/payments.md.
	NotifyPaymentFailed    = "payment_failed"
	NotifyInvoicePaid      = "invoice_paid"
	NotifyScheduleExecuted = "schedule_executed"
	NotifyScheduleFailed   = "schedule_failed"
	NotifyWithdrawal       = "withdrawal"
	// The approval notifications (docs/approvals.md).
	NotifyApprovalRequired = "approval_required"
	NotifyApprovalDecided  = "approval_decided"
	NotifyApprovalExpired  = "approval_expired"
)

// Payment events (docs/payments.md, "Events"): one per outgoing payment
// that settles, on webhooks and the notification stream alongside the
// notifications. They are not notifications (the inbox does not list
// them): a payment the user was already told was sent confirms without a
// second notification, and still has its event.
const (
	EventPaymentConfirmed = "payment.confirmed"
	EventPaymentFailed    = "payment.failed"
)

// PaymentEvent is the data of a payment event: shaped as a Notification
// (id from the same sequence, type, title, body, createdAt), so a reader
// of the stream that knows only notifications still reads it, with the
// payment record as GET /agent/:id/payments/:paymentId shows it.
type PaymentEvent struct {
	ID        int64         `json:"id"`
	Type      string        `json:"type"`
	Title     string        `json:"title"`
	Body      string        `json:"body"`
	Read      bool          `json:"read"`
	CreatedAt time.Time     `json:"createdAt"`
	Payment   PaymentRecord `json:"payment"`
}

// Notification is the spec's Notification.
type Notification struct {
	ID        int64     `json:"id"`
	Type      string    `json:"type"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Read      bool      `json:"read"`
	CreatedAt time.Time `json:"createdAt"`
}

// Inbox is the answer of GET /agent/:id/notifications.
type Inbox struct {
	Notifications []Notification `json:"notifications"`
	UnreadCount   int            `json:"unreadCount"`
}

// Schedule intervals and statuses.
const (
	IntervalDaily   = "daily"
	IntervalWeekly  = "weekly"
	IntervalMonthly = "monthly"
	// IntervalHourly; also "every-N-hours" (N 2-23) and the weekdays "monday" … "sunday".
	IntervalHourly = "hourly"

	ScheduleActive    = "active"
	SchedulePaused    = "paused"
	ScheduleCancelled = "cancelled"
)

// Schedule is the spec's Schedule (a recurring payment), with the stored
// fields DESIGN.md's endpoints also return.
type Schedule struct {
	ID        string     `json:"id"`
	Recipient string     `json:"recipient"`
	Amount    string     `json:"amount"`
	Asset     string     `json:"asset"`
	Interval  string     `json:"interval"`
	Status    string     `json:"status"`
	NextRun   time.Time  `json:"nextRun"`
	LastRun   *time.Time `json:"lastRun,omitempty"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	EndDate   *time.Time `json:"endDate,omitempty"`
	Chain     string     `json:"chain,omitempty"`
}

// TEEInfo is GET /tee/info (docs/enclave.md).
type TEEInfo struct {
	Provider             string `json:"provider"`
	Measurement          string `json:"measurement"`
	InstanceID           string `json:"instanceId"`
	AttestationKeyType   string `json:"attestationKeyType"`
	AttestationPublicKey string `json:"attestationPublicKey"`
	Note                 string `json:"note"`
}

// AttestedKeys are one chain's public keys in an Attestation.
type AttestedKeys struct {
	Epoch            uint32 `json:"epoch"`
	Address          string `json:"address"`
	MetaAddress      string `json:"metaAddress"`
	AccountPublicKey string `json:"accountPublicKey"`
}

// Attestation is GET /tee/attest/:agentId (docs/enclave.md says how to
// verify one).
type Attestation struct {
	AgentID     string                  `json:"agentId"`
	PublicKeys  map[string]AttestedKeys `json:"publicKeys"`
	ReportData  string                  `json:"reportData"`
	Provider    string                  `json:"provider"`
	Measurement string                  `json:"measurement"`
	InstanceID  string                  `json:"instanceId"`
	QuoteType   string                  `json:"quoteType"`
	Quote       string                  `json:"quote"`
	Statement   string                  `json:"statement,omitempty"`
	Nonce       string                  `json:"nonce"`
	IssuedAt    string                  `json:"issuedAt"`
}
