package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// Notification types of approvals (docs/approvals.md).
const (
	NoteApprovalRequired = client.NotifyApprovalRequired
	NoteApprovalDecided  = client.NotifyApprovalDecided
	NoteApprovalExpired  = client.NotifyApprovalExpired
)

// FailAfterApprovedSend is the failpoint right after an approved payment
// was broadcast, before its outcome is stored.
const FailAfterApprovedSend = "approval.after-send"

// Retries of an approved payment that failed in a way that may heal (the
// chain unreachable, funds not there yet); then it fails for good.
var approvedRetryBackoff = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}

// ListApprovals answers []ApprovalView, newest first.
type ListApprovals struct {
	answers[[]ApprovalView]
	AccountID string
	Status    string // "" or one of policy.Status*
}

// GetApproval answers *ApprovalView.
type GetApproval struct {
	answers[*ApprovalView]
	AccountID  string
	ApprovalID string
}

// DecideApproval is the owner's signed decision on a held payment. Answers
// *ApprovalDecision. An approved payment is sent before the answer.
type DecideApproval struct {
	answers[*ApprovalDecision]
	AccountID  string
	ApprovalID string
	Decision   string // "approve" or "deny"
	Signature  string
	Message    string
}

// WakeApproval is the reminder's: the approval's due time came (it
// expires, or an approved payment whose run was interrupted runs again).
// In-process only (no account). Answers nothing.
type WakeApproval struct {
	answers[None]
	ApprovalID string
}

// ApprovalView is an approval as the API shows it: the Go client's
// Approval, so the wire shape is defined once. It is policy.Approval
// without what only the payment's run needs (its idempotency key, the
// withdrawal's source, the schedule slot, the retry state).
type ApprovalView = client.Approval

func viewApproval(a *policy.Approval) *ApprovalView {
	return &ApprovalView{ID: a.ID, AgentID: a.AgentID, Status: a.Status, Kind: a.Kind, Chain: string(a.Chain), Asset: a.Asset,
		Amount: a.Amount, Recipient: a.Recipient, PayTo: a.PayTo, Reasons: a.Reasons, ScheduleID: a.ScheduleID,
		ConversationID: a.ConversationID, TxHash: a.TxHash, Error: a.Error, CreatedAt: a.CreatedAt, ExpiresAt: a.ExpiresAt, DecidedAt: a.DecidedAt}
}

// ApprovalDecision is the answer of a decision: {id, status, txHash?}, and
// error when an approved payment could not be sent (the client's type).
type ApprovalDecision = client.ApprovalDecision

func (a *Actor) policies() *policy.Store { return policy.NewStore(a.deps.Store, a.deps.Now) }

func (a *Actor) listApprovals(ctx context.Context, status string) ([]ApprovalView, error) {
	aps, err := policy.ListApprovals(ctx, a.deps.Store, a.id, status)
	if err != nil {
		return nil, err
	}
	out := make([]ApprovalView, 0, len(aps))
	for i := range aps {
		out = append(out, *viewApproval(&aps[i]))
	}
	return out, nil
}

func (a *Actor) getApproval(ctx context.Context, id string) (*policy.Approval, uint64, error) {
	ap, version, err := policy.GetApproval(ctx, a.deps.Store, a.id, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, 0, ErrApprovalNotFound
	}
	return ap, version, err
}

// hold asks the owner's approval rules about a payment about to be made.
// A payment that needs approval and has none is held: the approval and
// the approval_required notification are stored in one write, and the
// answer is a *tools.HeldError. nil means: pay (no approval needed, or the
// owner approved this payment).
func (a *Actor) hold(ctx context.Context, h policy.Hold) error {
	ap, ops, err := a.policies().Check(ctx, h)
	if err != nil {
		if errors.Is(err, policy.ErrNotApproved) {
			return fmt.Errorf("%w: %w", enclave.ErrPolicy, err)
		}
		return err
	}
	if ap == nil {
		return nil
	}
	if len(ops) > 0 {
		what := fmt.Sprintf("%s %s to %s on %s", ap.Amount, ap.Asset, ap.Recipient, ap.Chain)
		if ap.Kind == policy.KindSchedule {
			what = "the scheduled payment of " + what
		}
		if _, err := a.notify(ctx, &Notify{Type: NoteApprovalRequired,
			Title: fmt.Sprintf("Approval needed: %s %s to %s", ap.Amount, ap.Asset, ap.Recipient),
			Body: fmt.Sprintf("Approval %s: %s is held because %s. Approve or deny it with a signature of the owner wallet before %s; otherwise it expires and is not paid.",
				ap.ID, what, joinReasons(ap.Reasons), ap.ExpiresAt.Format(time.RFC3339))}, ops...); err != nil {
			return fmt.Errorf("agent %s: hold payment: %w", a.id, err)
		}
	}
	return &tools.HeldError{ApprovalID: ap.ID, Reasons: ap.Reasons, ExpiresAt: ap.ExpiresAt}
}

func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out
}

// decide verifies the owner's signed decision and applies it. The status
// change and the signature's replay record are one write guarded by the
// approval's version, so of two concurrent decisions exactly one wins
// (the other is a 409). An approved payment is then sent with its own
// idempotency key; the enclave still applies the spending policy.
func (a *Actor) decide(ctx context.Context, m *DecideApproval) (*ApprovalDecision, error) {
	if m.Decision != "approve" && m.Decision != "deny" {
		return nil, ErrBadDecision
	}
	ap, version, err := a.getApproval(ctx, m.ApprovalID)
	if err != nil {
		return nil, err
	}
	deny := m.Decision == "deny"
	proof, err := walletsig.VerifyApproval(walletsig.ApprovalRequest{AgentID: a.id, ApprovalID: ap.ID, Wallet: a.rec.OwnerWallet,
		Deny: deny, Signature: m.Signature, Message: m.Message}, a.deps.now())
	if err != nil {
		return nil, err
	}
	now := a.deps.now()
	if ap.Status == policy.StatusPending && !now.Before(ap.ExpiresAt) {
		if err := a.expire(ctx, ap, version); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: approval %s expired at %s", ErrApprovalDecided, ap.ID, ap.ExpiresAt.Format(time.RFC3339))
	}
	if ap.Status != policy.StatusPending {
		return nil, fmt.Errorf("%w: approval %s is %s", ErrApprovalDecided, ap.ID, ap.Status)
	}
	next := *ap
	next.DecidedAt = &now
	ops := []persistence.Op{usedSignature(proof.ReplayKey, proof.KeepUntil),
		persistence.Delete(policy.TableApprovalDue, policy.DueKey(ap.ExpiresAt, a.id, ap.ID), persistence.Any())}
	if deny {
		next.Status = policy.StatusDenied
	} else {
		next.Status = policy.StatusApproved
		// Until its outcome is stored, the reminder wakes it: a crash while
		// sending runs it once more, with the same idempotency key, as soon
		// as the reminder runs again. Due now is safe: the wake-up queues
		// behind this decision in the agent's mailbox and finds it done.
		next.RetryAt = now
		ops = append(ops, persistence.Put(policy.TableApprovalDue, policy.DueKey(next.RetryAt, a.id, ap.ID), nil, persistence.Any()))
	}
	put, err := policy.PutOp(&next, version)
	if err != nil {
		return nil, err
	}
	ops = append(ops, put)
	if deny {
		err = a.outcome(ctx, &Notify{Type: NoteApprovalDecided, Title: fmt.Sprintf("Payment denied: %s %s to %s", ap.Amount, ap.Asset, ap.Recipient),
			Body: fmt.Sprintf("The owner denied approval %s: %s %s to %s on %s was not paid.", ap.ID, ap.Amount, ap.Asset, ap.Recipient, ap.Chain)},
			ap.ConversationID, fmt.Sprintf("The owner denied the payment of %s %s to %s on %s (approval %s). Nothing was paid.", ap.Amount, ap.Asset, ap.Recipient, ap.Chain, ap.ID),
			ops...)
	} else {
		_, err = a.deps.Store.Apply(ctx, ops...)
	}
	if err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			// The approval changed meanwhile (another decision won), or
			// this signature was used: say which.
			if cur, _, gerr := a.getApproval(ctx, ap.ID); gerr == nil && cur.Status != policy.StatusPending {
				return nil, fmt.Errorf("%w: approval %s is %s", ErrApprovalDecided, ap.ID, cur.Status)
			}
			return nil, ErrReplayed
		}
		return nil, fmt.Errorf("agent %s: decide approval: %w", a.id, err)
	}
	if deny {
		return &ApprovalDecision{ID: ap.ID, Status: policy.StatusDenied}, nil
	}
	done, err := a.runApproved(ctx, ap.ID)
	if err != nil {
		return nil, err
	}
	return &ApprovalDecision{ID: done.ID, Status: done.Status, TxHash: done.TxHash, Error: done.Error}, nil
}

// runApproved sends an approved payment that has no outcome yet and stores
// the outcome: the tx hash (payment_sent or schedule_executed) or the
// error, with a system message in the conversation that asked for it, in
// one write. A failure that may heal is retried after a backoff (the
// reminder wakes it).
func (a *Actor) runApproved(ctx context.Context, id string) (*policy.Approval, error) {
	ap, version, err := a.getApproval(ctx, id)
	if err != nil {
		return nil, err
	}
	if ap.Status != policy.StatusApproved || ap.Done() {
		return ap, nil
	}
	res, payErr := a.sendApproved(ctx, ap)
	if payErr == nil {
		if err := a.deps.fail(FailAfterApprovedSend); err != nil {
			return nil, err
		}
	}
	if payErr != nil && ctx.Err() != nil {
		return nil, ctx.Err() // stopping: the reminder runs it again
	}
	next := *ap
	next.Attempts++
	ops := []persistence.Op{persistence.Delete(policy.TableApprovalDue, policy.DueKey(ap.RetryAt, a.id, ap.ID), persistence.Any())}
	var note *Notify
	var text string
	label := fmt.Sprintf("%s %s to %s on %s", ap.Amount, ap.Asset, ap.Recipient, ap.Chain)
	switch {
	case payErr == nil:
		next.TxHash, next.Error, next.RetryAt = res.TxHash, "", time.Time{}
		typ, title := NotePaymentSent, fmt.Sprintf("Sent %s %s", ap.Amount, ap.Asset)
		if ap.Kind == policy.KindSchedule {
			typ, title = NoteScheduleExecuted, fmt.Sprintf("Scheduled payment sent: %s %s to %s", ap.Amount, ap.Asset, ap.Recipient)
		}
		note = &Notify{Type: typ, Title: title, Body: fmt.Sprintf("Approved by the owner (approval %s): sent %s. Transaction %s", ap.ID, label, res.TxHash)}
		text = fmt.Sprintf("The owner approved the payment of %s (approval %s). It was sent: transaction %s.", label, ap.ID, res.TxHash)
	case retryable(payErr) && !isPending(payErr) && next.Attempts <= len(approvedRetryBackoff) && !errors.Is(payErr, enclave.ErrPolicy):
		next.RetryAt = a.deps.now().Add(approvedRetryBackoff[next.Attempts-1])
		next.Error = ""
		ops = append(ops, persistence.Put(policy.TableApprovalDue, policy.DueKey(next.RetryAt, a.id, ap.ID), nil, persistence.Any()))
		put, err := policy.PutOp(&next, version)
		if err != nil {
			return nil, err
		}
		if _, err := a.deps.Store.Apply(ctx, append(ops, put)...); err != nil {
			return nil, fmt.Errorf("agent %s: approval %s retry: %w", a.id, ap.ID, err)
		}
		a.log(ctx).Warn("approved payment failed; it is retried", slog.String("approval", ap.ID), slog.String("err", payErr.Error()))
		return &next, nil
	case isPending(payErr):
		// Signed and recorded, its outcome unknown: not a failure, and not
		// "nothing was paid". The record's settlement tells the user.
		pe := pendingOf(payErr)
		next.TxHash, next.Error, next.RetryAt = firstOf(pe.TxHash, "pending:"+pe.PaymentID), "", time.Time{}
		note = &Notify{Type: NoteApprovalDecided, Title: fmt.Sprintf("Payment on its way: %s %s to %s", ap.Amount, ap.Asset, ap.Recipient),
			Body: fmt.Sprintf("Approved by the owner (approval %s): %s was signed and handed to the network (payment %s); its confirmation has not come back yet. You will be told when it confirms or fails.", ap.ID, label, pe.PaymentID)}
		text = fmt.Sprintf("The owner approved the payment of %s (approval %s). It is on its way (payment %s, pending): you will be told when it confirms. Do not send it again.", label, ap.ID, pe.PaymentID)
	default:
		next.Error, next.RetryAt = payErr.Error(), time.Time{}
		typ := NotePaymentFailed
		if ap.Kind == policy.KindSchedule {
			typ = NoteScheduleFailed
		}
		note = &Notify{Type: typ, Title: fmt.Sprintf("Approved payment failed: %s %s to %s", ap.Amount, ap.Asset, ap.Recipient),
			Body: fmt.Sprintf("The owner approved %s (approval %s), but it could not be sent: %v. Nothing was paid.", label, ap.ID, payErr)}
		text = fmt.Sprintf("The owner approved the payment of %s (approval %s), but it could not be sent: %v. Nothing was paid.", label, ap.ID, payErr)
	}
	put, err := policy.PutOp(&next, version)
	if err != nil {
		return nil, err
	}
	if err := a.outcome(ctx, note, ap.ConversationID, text, append(ops, put)...); err != nil {
		return nil, fmt.Errorf("agent %s: approval %s outcome: %w", a.id, ap.ID, err)
	}
	return &next, nil
}

// sendApproved makes the approved payment with its idempotency key: a
// payment broadcast before a crash is found by the chain's ledger, not
// sent again.
func (a *Actor) sendApproved(ctx context.Context, ap *policy.Approval) (chains.TxResult, error) {
	if _, err := a.deps.Chains.Chain(ap.Chain); err != nil {
		return chains.TxResult{}, err
	}
	// Signed as a spend under the approval's key: the enclave's gate finds
	// the approval by that key. The payment is read once from the
	// approval (tools.StoredPayment, StoredInvoicePayment).
	to := tools.PaymentRecipient{Name: ap.Recipient, Address: ap.PayTo}
	if ap.Kind == policy.KindInvoice {
		// Decided on today's facts: an invoice of this server paid,
		// expired or cancelled since it was held is not paid now (the
		// approval ends failed with the reason). Another server's invoice
		// cannot be read again here: its payee's answer to the transfer
		// decides.
		inv, err := invoiceLookup{st: a.deps.Store, publicURL: a.deps.PublicURL, now: a.deps.now}.ByAddress(ctx, ap.Chain, ap.PayTo)
		switch {
		case err == nil:
			if err := tools.CheckPayable(inv, a.deps.now(), a.id); err != nil {
				return chains.TxResult{}, err
			}
		case !errors.Is(err, tools.ErrUnknownInvoice):
			return chains.TxResult{}, err
		}
		// An invoice's one-time address is a plain address (PayAddress).
		pr, err := tools.StoredInvoicePayment(approvalSource(ap), ap.Chain, ap.Asset, ap.Amount, to, ap.Key)
		if err == nil {
			pr, err = a.bound(pr)
		}
		if err != nil {
			return chains.TxResult{}, err
		}
		return a.payToAddress(ctx, pr)
	}
	pr, err := tools.StoredPayment(approvalSource(ap), ap.Chain, ap.Asset, ap.Amount, to, ap.Key)
	if err == nil {
		pr, err = a.bound(pr)
	}
	if err != nil {
		return chains.TxResult{}, err
	}
	return a.sendStealth(ctx, pr)
}

// approvalSource names the approval as what asked for its payment.
func approvalSource(ap *policy.Approval) tools.PaymentSource {
	return tools.PaymentSource{Type: tools.SourceApproval, ID: ap.ID}
}

// wakeApproval is the reminder's wake-up: a pending approval past its
// expiry expires; an approved one without an outcome runs (again).
func (a *Actor) wakeApproval(ctx context.Context, id string) error {
	ap, version, err := a.getApproval(ctx, id)
	if errors.Is(err, ErrApprovalNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	now := a.deps.now()
	switch {
	case ap.Status == policy.StatusPending && !now.Before(ap.ExpiresAt):
		return a.expire(ctx, ap, version)
	case ap.Status == policy.StatusApproved && !ap.Done() && !now.Before(ap.RetryAt):
		_, err := a.runApproved(ctx, id)
		return err
	}
	return nil
}

// expire marks a pending approval expired, with its notification and the
// system message, in one write.
func (a *Actor) expire(ctx context.Context, ap *policy.Approval, version uint64) error {
	next := *ap
	next.Status = policy.StatusExpired
	put, err := policy.PutOp(&next, version)
	if err != nil {
		return err
	}
	label := fmt.Sprintf("%s %s to %s on %s", ap.Amount, ap.Asset, ap.Recipient, ap.Chain)
	err = a.outcome(ctx, &Notify{Type: NoteApprovalExpired, Title: fmt.Sprintf("Approval expired: %s %s to %s", ap.Amount, ap.Asset, ap.Recipient),
		Body: fmt.Sprintf("Nobody decided on approval %s before %s: %s was not paid.", ap.ID, ap.ExpiresAt.Format(time.RFC3339), label)},
		ap.ConversationID, fmt.Sprintf("The payment of %s (approval %s) expired without the owner's decision. Nothing was paid.", label, ap.ID),
		put, persistence.Delete(policy.TableApprovalDue, policy.DueKey(ap.ExpiresAt, a.id, ap.ID), persistence.Any()))
	if errors.Is(err, persistence.ErrConflict) {
		return nil // decided meanwhile
	}
	return err
}

// outcome stores ops with a notification and, when convID is one of this
// agent's conversations (still there), a system message recording the
// outcome, all in one write.
func (a *Actor) outcome(ctx context.Context, n *Notify, convID, text string, ops ...persistence.Op) error {
	next := a.rec.clone()
	ops, err := a.systemMessageOps(ctx, next, convID, text, ops)
	if err != nil {
		return err
	}
	_, err = a.notifyAs(ctx, next, n, ops...)
	return err
}

// systemMessageOps adds to ops the writes of a system message text in
// conversation convID (numbered from next), when both are given and the
// conversation is still there.
func (a *Actor) systemMessageOps(ctx context.Context, next *Record, convID, text string, ops []persistence.Op) ([]persistence.Op, error) {
	if convID != "" && text != "" {
		conv, cv, err := a.getConversation(ctx, convID)
		switch {
		case errors.Is(err, ErrConversationNotFound):
			// Deleted: the notification still says it.
		case err != nil:
			return nil, err
		default:
			now := a.deps.now()
			next.LastMessageID++
			// Numbered from the record's counter, above the block the
			// chats take ids from: the next append reserves above it.
			a.dropMessageBlock()
			raw, err := json.Marshal(storedMessage{ID: next.LastMessageID, Message: Message{Role: RoleSystem, Text: text, CreatedAt: now}})
			if err != nil {
				return nil, err
			}
			c := *conv
			c.UpdatedAt = now
			craw, err := json.Marshal(c.stored())
			if err != nil {
				return nil, err
			}
			ops = append(ops,
				persistence.Put(TableMessages, msgKey(a.msgPrefix(convID), next.LastMessageID), raw, persistence.Absent()),
				persistence.Put(TableConversations, a.convKey(convID), craw, persistence.AtVersion(cv)))
		}
	}
	return ops, nil
}

// RoleSystem is the role of the messages Veil itself records in a
// conversation (outcomes of held payments and scheduled runs).
const RoleSystem = "system"
