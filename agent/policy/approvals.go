package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// Approvals are the policy's rules for payments the owner must approve
// first (docs/approvals.md). They are part of what the owner signs.
type Approvals struct {
	// ApprovalAbove holds a payment of more than this amount of the asset
	// for the owner's approval, by asset symbol.
	ApprovalAbove map[string]string `json:"approvalAbove,omitempty"`
	// ApproveNewRecipients holds a payment to a recipient this agent never
	// paid (was never authorized to pay) before.
	ApproveNewRecipients bool `json:"approveNewRecipients,omitempty"`
	// ApprovalExpiry is how long a held payment waits for a decision, as a
	// Go duration ("24h", "90m"); empty means DefaultApprovalExpiry.
	ApprovalExpiry string `json:"approvalExpiry,omitempty"`
}

// Bounds of an approval's expiry.
const (
	DefaultApprovalExpiry = 24 * time.Hour
	MinApprovalExpiry     = 5 * time.Minute
	MaxApprovalExpiry     = 7 * 24 * time.Hour
)

func normalizeApprovals(a Approvals) (Approvals, error) {
	out := Approvals{ApproveNewRecipients: a.ApproveNewRecipients}
	if len(a.ApprovalAbove) > MaxAssets {
		return Approvals{}, fmt.Errorf("%w: approvalAbove names %d assets; at most %d", ErrInvalid, len(a.ApprovalAbove), MaxAssets)
	}
	for asset, amount := range a.ApprovalAbove {
		sym := strings.ToUpper(strings.TrimSpace(asset))
		if !assetRE.MatchString(sym) {
			return Approvals{}, fmt.Errorf("%w: approvalAbove: %q is not an asset symbol (2-12 letters or digits, e.g. USDC)", ErrInvalid, asset)
		}
		if amount != "0" {
			if _, err := amountOf(amount); err != nil {
				return Approvals{}, fmt.Errorf("%w: approvalAbove.%s: %v (or 0: every payment)", ErrInvalid, sym, err)
			}
		}
		if out.ApprovalAbove == nil {
			out.ApprovalAbove = map[string]string{}
		}
		out.ApprovalAbove[sym] = amount
	}
	if e := strings.TrimSpace(a.ApprovalExpiry); e != "" {
		d, err := time.ParseDuration(e)
		if err != nil || d < MinApprovalExpiry || d > MaxApprovalExpiry {
			return Approvals{}, fmt.Errorf("%w: approvalExpiry %q must be a duration from 5m to 168h, such as \"24h\" or \"90m\"", ErrInvalid, truncate(e))
		}
		out.ApprovalExpiry = d.String()
	}
	return out, nil
}

// Expiry is how long a held payment waits for the owner.
func (a Approvals) Expiry() time.Duration {
	if d, err := time.ParseDuration(a.ApprovalExpiry); err == nil && d > 0 {
		return d
	}
	return DefaultApprovalExpiry
}

// Reasons says why a payment of amount asset (all: everything, amount
// zero) to a recipient needs the owner's approval under these rules; none means it
// does not. isNew reports whether the agent never paid the recipient.
func (a Approvals) Reasons(asset string, amount chains.Amount, all, isNew bool) []string {
	var out []string
	sym := strings.ToUpper(asset)
	if limit, ok := a.ApprovalAbove[sym]; ok {
		switch {
		case all:
			out = append(out, fmt.Sprintf("paying all of a balance of %s needs approval (approvalAbove %s %s)", sym, limit, sym))
		case limit == "0":
			out = append(out, fmt.Sprintf("every %s payment needs approval", sym))
		default:
			// The amount is typed (parsed once, where the payment was
			// read); only the owner's threshold is text here.
			lim, err := amountOf(limit)
			if err != nil || amount.Sign() <= 0 || amount.Rat().Cmp(lim) > 0 {
				out = append(out, fmt.Sprintf("%s %s is above the approval threshold of %s %s", amount, sym, limit, sym))
			}
		}
	}
	if a.ApproveNewRecipients && isNew {
		out = append(out, "the agent has never paid this recipient")
	}
	return out
}

// Tables of approvals.
const (
	TableApprovals    = "approvals"         // agent id/approval id → Approval
	TableApprovalKeys = "approval_keys"     // agent id/payment idempotency key → approval id
	TableApprovalDue  = "approval_due"      // time (dueLayout)/agent id/approval id → "" (the reminder wakes the agent)
	TableRecipients   = "policy_recipients" // agent id/recipient → first authorized (RFC 3339)
)

// Statuses of an approval.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusExpired  = "expired"
)

// Kinds of held payments.
const (
	KindPayment    = "payment"    // send_payment, pay_agent
	KindSchedule   = "schedule"   // a scheduled run
	KindWithdrawal = "withdrawal" // withdraw
	KindInvoice    = "invoice"    // pay_invoice: PayTo is the invoice's one-time address
)

// Approval is one held payment and what became of it. It holds everything
// needed to make the payment when approved: the payment runs with Key, its
// idempotency key, so it is made once whatever is retried.
type Approval struct {
	ID        string    `json:"id"`
	AgentID   string    `json:"agentId"`
	Status    string    `json:"status"`
	Kind      string    `json:"kind"`
	Chain     chains.ID `json:"chain"`
	Asset     string    `json:"asset"`
	Amount    string    `json:"amount"`
	Recipient string    `json:"recipient"`
	// PayTo is the meta-address (payments) or address (withdrawals) paid.
	PayTo string `json:"payTo"`
	// From is the stealth address a withdrawal spends.
	From    string   `json:"from,omitempty"`
	Key     string   `json:"key"`
	Reasons []string `json:"reasons"`
	// ScheduleID and Slot: the scheduled run held (KindSchedule).
	ScheduleID string    `json:"scheduleId,omitempty"`
	Slot       time.Time `json:"slot,omitzero"`
	// ConversationID is where the payment was asked for (or where the
	// schedule was created): its outcome is recorded there.
	ConversationID string     `json:"conversationId,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      time.Time  `json:"expiresAt"`
	DecidedAt      *time.Time `json:"decidedAt,omitempty"`
	// TxHash of the approved payment once sent; Error when it could not be
	// sent (the policy refused it when it ran, the chain failed for good).
	TxHash string `json:"txHash,omitempty"`
	Error  string `json:"error,omitempty"`
	// Attempts counts the runs of an approved payment; RetryAt is when a
	// failed one that may heal is tried again.
	Attempts int       `json:"attempts,omitempty"`
	RetryAt  time.Time `json:"retryAt,omitzero"`
}

// Done says an approved payment has its outcome.
func (a *Approval) Done() bool { return a.TxHash != "" || a.Error != "" }

// ApprovalKey is the approval's record key.
func ApprovalKey(agentID, id string) string { return agentID + "/" + id }

// dueLayout is fixed-width, so that key order is time order.
const dueLayout = "2006-01-02T15:04:05.000000000Z"

// DueKey is the reminder's index key of an approval's next wake-up.
func DueKey(at time.Time, agentID, id string) string {
	return at.UTC().Format(dueLayout) + "/" + agentID + "/" + id
}

// ParseDueKey splits a DueKey.
func ParseDueKey(key string) (at time.Time, agentID, id string, ok bool) {
	ts, rest, ok1 := strings.Cut(key, "/")
	agentID, id, ok2 := strings.Cut(rest, "/")
	t, err := time.Parse(dueLayout, ts)
	return t, agentID, id, ok1 && ok2 && err == nil
}

// GetApproval reads one approval with its version.
func GetApproval(ctx context.Context, st persistence.Store, agentID, id string) (*Approval, uint64, error) {
	rec, err := st.Get(ctx, TableApprovals, ApprovalKey(agentID, id))
	if err != nil {
		return nil, 0, err
	}
	var a Approval
	if err := json.Unmarshal(rec.Value, &a); err != nil {
		return nil, 0, fmt.Errorf("approval %s: %w", rec.Key, err)
	}
	return &a, rec.Version, nil
}

// ListApprovals returns the agent's approvals, newest first, in status
// when status is not empty.
func ListApprovals(ctx context.Context, st persistence.Store, agentID, status string) ([]Approval, error) {
	recs, err := st.List(ctx, TableApprovals, persistence.Query{Prefix: agentID + "/"})
	if err != nil {
		return nil, err
	}
	out := []Approval{}
	for _, rec := range recs {
		var a Approval
		if err := json.Unmarshal(rec.Value, &a); err != nil {
			return nil, fmt.Errorf("approval %s: %w", rec.Key, err)
		}
		if status == "" || a.Status == status {
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// PutOp writes a (stored, version) approval; version 0 creates it.
func PutOp(a *Approval, version uint64) (persistence.Op, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return persistence.Op{}, err
	}
	expect := persistence.Absent()
	if version > 0 {
		expect = persistence.AtVersion(version)
	}
	return persistence.Put(TableApprovals, ApprovalKey(a.AgentID, a.ID), raw, expect), nil
}

// Hold is a payment the agent is about to make.
type Hold struct {
	AgentID string
	Kind    string
	Chain   chains.ID
	Asset   string
	// Amount is the payment's amount as its request parsed it (base units
	// and decimals): nothing here parses it again. All is a withdrawal of
	// everything (Amount is then zero).
	Amount    chains.Amount
	All       bool
	Recipient string // as the user named it
	PayTo     string
	From      string
	Key       string
	// ScheduleID, Slot and ConversationID say where it came from.
	ScheduleID     string
	Slot           time.Time
	ConversationID string
}

// amountText is the amount as the approval record keeps it (its JSON
// field "amount", unchanged: whole units, "" for everything), converted
// here at the record's edge.
func (h Hold) amountText() string {
	if h.All {
		return ""
	}
	return h.Amount.String()
}

// ErrNotApproved reports a held payment the owner denied or let expire:
// it is not made, and not held again.
var ErrNotApproved = errors.New("the owner did not approve this payment")

// Check decides whether h may run now. It answers:
//   - nil, nil, nil: no approval needed (or the owner approved it and it
//     has not failed): pay;
//   - the approval and the writes that hold it: a new approval, to be
//     applied with the approval_required notification;
//   - an existing pending approval and no writes: still held;
//   - ErrNotApproved: denied.
//
// An approval decides once, on the facts of its day: one that expired, or
// was approved and then failed (the policy refused it when it ran, its
// invoice was paid meanwhile), is final, and the same request (same key)
// later is held for a new approval, whatever the policy says by then.
func (s *Store) Check(ctx context.Context, h Hold) (*Approval, []persistence.Op, error) {
	p, ok, err := s.Get(ctx, h.AgentID)
	if err != nil || !ok {
		return nil, nil, err
	}
	isNew, err := s.isNewRecipient(ctx, h.AgentID, h.PayTo, p.ApproveNewRecipients)
	if err != nil {
		return nil, nil, err
	}
	if !h.All && h.Amount.Sign() <= 0 {
		return nil, nil, fmt.Errorf("%w: a held payment moves a positive amount or everything", chains.ErrInvalidAmount)
	}
	reasons := p.Approvals.Reasons(h.Asset, h.Amount, h.All, isNew)
	existing, keyVersion, err := s.approvalFor(ctx, h.AgentID, h.Key)
	if err != nil {
		return nil, nil, err
	}
	if existing != nil {
		switch {
		case existing.Status == StatusApproved && existing.Error == "":
			return nil, nil, nil
		case existing.Status == StatusPending:
			return existing, nil, nil
		case existing.Status == StatusDenied:
			return nil, nil, fmt.Errorf("%w: approval %s is %s", ErrNotApproved, existing.ID, existing.Status)
		}
		// Expired, or approved and failed: final. Asked again, the
		// payment needs a new approval.
		what := "expired"
		if existing.Status == StatusApproved {
			what = "was approved but failed (" + existing.Error + ")"
		}
		reasons = append(reasons, fmt.Sprintf("an earlier approval of this payment (%s) %s; a new request needs a new approval", existing.ID, what))
	}
	if len(reasons) == 0 {
		return nil, nil, nil
	}
	// A payment the policy refuses anyway is refused now: the owner is not
	// asked to approve what could not be paid.
	pay := Payment{Asset: h.Asset, Recipient: h.PayTo}
	if !h.All {
		pay.Amount = h.Amount.Rat()
	}
	if pay, err = s.withIssuer(ctx, p, h.Chain, pay); err != nil {
		return nil, nil, err
	}
	if err := p.Check(pay); err != nil {
		return nil, nil, err
	}
	now := s.now().UTC()
	a := &Approval{ID: uuid.NewString(), AgentID: h.AgentID, Status: StatusPending, Kind: h.Kind, Chain: h.Chain,
		Asset: strings.ToUpper(h.Asset), Amount: h.amountText(), Recipient: h.Recipient, PayTo: h.PayTo, From: h.From, Key: h.Key,
		Reasons: reasons, ScheduleID: h.ScheduleID, Slot: h.Slot, ConversationID: h.ConversationID,
		CreatedAt: now, ExpiresAt: now.Add(p.Approvals.Expiry())}
	put, err := PutOp(a, 0)
	if err != nil {
		return nil, nil, err
	}
	return a, []persistence.Op{
		put,
		persistence.Put(TableApprovalKeys, h.AgentID+"/"+h.Key, []byte(a.ID), keyExpect(keyVersion)),
		persistence.Put(TableApprovalDue, DueKey(a.ExpiresAt, a.AgentID, a.ID), nil, persistence.Absent()),
	}, nil
}

// approvalFor is the latest approval of the payment under key, and the
// version of the key's entry (0: none).
func (s *Store) approvalFor(ctx context.Context, agentID, key string) (*Approval, uint64, error) {
	rec, err := s.st.Get(ctx, TableApprovalKeys, agentID+"/"+key)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	a, _, err := GetApproval(ctx, s.st, agentID, string(rec.Value))
	return a, rec.Version, err
}

// keyExpect guards the write of a key's entry: absent for a first
// approval, at its version for a new approval after a final one.
func keyExpect(version uint64) persistence.Expect {
	if version == 0 {
		return persistence.Absent()
	}
	return persistence.AtVersion(version)
}

func (s *Store) isNewRecipient(ctx context.Context, agentID, recipient string, care bool) (bool, error) {
	if !care {
		return false, nil
	}
	_, err := s.st.Get(ctx, TableRecipients, agentID+"/"+recipientKey(recipient))
	if errors.Is(err, persistence.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// knownOp records the recipient as paid (authorized) by the agent.
func (s *Store) knownOp(agentID, recipient string) persistence.Op {
	return persistence.Put(TableRecipients, agentID+"/"+recipientKey(recipient), []byte(s.now().UTC().Format(time.RFC3339)), persistence.Any())
}

// approvalGate is the enclave-side check of approvals: a payment the rules
// hold can be signed only with the owner's approval, whatever path asked
// for it (a tool, a schedule, a retry). It runs before the spending policy
// (caps, allowlist, daily budget), which still applies to an approved
// payment.
func (s *Store) approvalGate(ctx context.Context, p Policy, agentID, key, asset string, amount chains.Amount, all bool, recipient string) error {
	isNew, err := s.isNewRecipient(ctx, agentID, recipient, p.ApproveNewRecipients)
	if err != nil {
		return err
	}
	reasons := p.Approvals.Reasons(asset, amount, all, isNew)
	if len(reasons) == 0 {
		return nil
	}
	a, _, err := s.approvalFor(ctx, agentID, key)
	if err != nil {
		return err
	}
	if a != nil && a.Status == StatusApproved && a.Error == "" {
		return nil // approved, and not failed (a failed approval is final)
	}
	return fmt.Errorf("%w: this needs the owner's approval (%s) and has none; payments the agent makes are held for approval by themselves, a withdrawal cannot be: withdraw an amount at or under the threshold, or ask the owner to change the policy", enclave.ErrPolicy, strings.Join(reasons, "; "))
}

// Gate is the enclave's Authorizer with approvals: a spend the approval
// rules hold is refused unless the owner approved it, then the spending
// policy (Store.Authorize) decides and counts it; an allowed spend's
// recipient is recorded as known (approveNewRecipients).
type Gate struct{ s *Store }

var _ enclave.Authorizer = Gate{}

// WithApprovals returns the Authorizer veild gives the enclave.
func (s *Store) WithApprovals() Gate { return Gate{s: s} }

// Authorize implements enclave.Authorizer.
func (g Gate) Authorize(ctx context.Context, sp chains.Spend) error {
	p, ok, err := g.s.Get(ctx, sp.AgentID)
	if err != nil {
		return err
	}
	if ok {
		if err := g.s.approvalGate(ctx, p, sp.AgentID, sp.Key, sp.Asset, sp.Amount, sp.All, sp.Recipient); err != nil {
			return err
		}
	}
	if err := g.s.Authorize(ctx, sp); err != nil {
		return err
	}
	return g.s.remember(ctx, sp.AgentID, sp.Recipient)
}

// remember records a recipient the agent was allowed to pay, once.
func (s *Store) remember(ctx context.Context, agentID, recipient string) error {
	if recipient == "" {
		return nil
	}
	if _, err := s.st.Get(ctx, TableRecipients, agentID+"/"+recipientKey(recipient)); err == nil || !errors.Is(err, persistence.ErrNotFound) {
		return err
	}
	_, err := s.st.Apply(ctx, s.knownOp(agentID, recipient))
	return err
}
