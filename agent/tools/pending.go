package tools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/veilhq/veil/chains"
)

// StatusPending is the status of a payment that was recorded and may have
// been signed and sent, whose outcome is not known yet (docs/payments.md).
const StatusPending = "pending"

// PendingError is what ChainOps answers for a payment whose record is
// pending and whose outcome is unknown: the transaction was (or may have
// been) signed and sent, and the node's answer did not come
// (chains.ErrOutcomeUnknown, a time-out, an error after signing). The
// payment tools turn it into a *PendingPayment detail: never "nothing was
// done", never "try again".
type PendingError struct {
	PaymentID string
	TxHash    string
	Err       error
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("payment %s is pending: %v", e.PaymentID, e.Err)
}

func (e *PendingError) Unwrap() error { return e.Err }

// PendingPayment is the detail of a payment tool whose payment is on its
// way but not known to have arrived: the tool succeeded in what it can
// say (the payment is recorded), and the user is told when it settles.
type PendingPayment struct {
	PaymentID string    `json:"paymentId"`
	Status    string    `json:"status"` // StatusPending
	TxHash    string    `json:"txHash,omitempty"`
	TxLink    string    `json:"txLink,omitempty"`
	Amount    string    `json:"amount"`
	Asset     string    `json:"asset"`
	Chain     chains.ID `json:"chain"`
	Recipient string    `json:"recipient"`
	Message   string    `json:"message"`
}

// outcomeUnknown reports whether err leaves a payment's outcome unknown:
// the connector says so, or the call was cut off while the chain had it.
func outcomeUnknown(err error) bool {
	var pe *PendingError
	return errors.As(err, &pe) || errors.Is(err, chains.ErrOutcomeUnknown) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// pendingResult is the detail of a payment (amount asset on c to
// recipient) whose outcome is unknown (err; outcomeUnknown).
func pendingResult(ctx context.Context, env *Env, err error, amount, asset string, c chains.ID, recipient, key string) *PendingPayment {
	p := &PendingPayment{Status: StatusPending, Amount: amount, Asset: asset, Chain: c, Recipient: recipient}
	var pe *PendingError
	rec, haveRec := recordOf(ctx, env, c, key)
	if errors.As(err, &pe) {
		p.PaymentID, p.TxHash = pe.PaymentID, pe.TxHash
	} else if haveRec {
		p.PaymentID, p.TxHash = rec.ID, rec.TxHash
	}
	if p.TxHash != "" && env.Chains != nil {
		p.TxLink = env.Chains.TxLink(c, p.TxHash)
	}
	id := ""
	if p.PaymentID != "" {
		id = " (payment " + p.PaymentID + ")"
	}
	if haveRec && rec.Status == StatusPending && rec.TxHash == "" && rec.Reason != "" {
		// The payment itself was not signed: what is unknown is a step
		// before it (a withdrawal's gas funding). Its record says which;
		// "signed and handed to the network" would not be true of it.
		p.Message = fmt.Sprintf("The payment of %s %s to %s on %s%s has not been sent yet: %s. You will be told when that changes. Do not send it again with a new request: retry with the same idempotency key if asked to.",
			amount, asset, clip(recipient, 40), c, id, rec.Reason)
		return p
	}
	p.Message = fmt.Sprintf("The payment of %s %s to %s on %s is on its way%s: it was signed and handed to the network, and its confirmation has not come back yet. You will be told when it confirms (or if it fails). Do not send it again: a new request would pay a second time.",
		amount, asset, clip(recipient, 40), c, id)
	return p
}

// recordOf is the record of the payment sent under key on c, when the
// agent's records are reachable.
func recordOf(ctx context.Context, env *Env, c chains.ID, key string) (OutgoingPayment, bool) {
	if env.Outgoing == nil || key == "" {
		return OutgoingPayment{}, false
	}
	rec, err := env.Outgoing.ByKey(context.WithoutCancel(ctx), c, key)
	return rec, err == nil
}

// recordStatus is the id and status of the record of the payment sent
// under key on c ("" when there is none).
func recordStatus(ctx context.Context, env *Env, c chains.ID, key string) (string, string) {
	rec, _ := recordOf(ctx, env, c, key)
	return rec.ID, string(rec.Status)
}

// RepeatWindow is how long after a payment confirmed a new request for
// the same payment (recipient, asset, amount) asks first; one still on its
// way (pending, broadcast) asks however old it is.
const RepeatWindow = 10 * time.Minute

// checkRepeat asks before a payment (req) that repeats one still on its
// way or just confirmed
// (docs/payments.md, "A second request"): ErrNeedsConfirmation, naming
// the earlier payment. A retry under the same idempotency key is that
// payment, not a repeat; a call the user confirmed (Env.Confirmed) and a
// direct call (Env.Explicit: the caller's own instruction with its own
// Idempotency-Key) pass.
func checkRepeat(ctx context.Context, env *Env, req PaymentRequest) error {
	if env.Confirmed || env.Explicit || env.Outgoing == nil {
		return nil
	}
	c, address, asset, amount, who := req.Chain(), req.Recipient().Address, req.Asset().Symbol, req.Amount(), req.who()
	recent, err := env.Outgoing.FindRecent(ctx, c, address, asset, amount, RepeatWindow)
	if err != nil {
		return fmt.Errorf("checking for the same payment on its way: %w", err)
	}
	for _, p := range recent {
		if p.IdempotencyKey == req.IdempotencyKey() {
			continue
		}
		state := "is already on its way (" + string(p.Status) + ")"
		if p.Status == PaymentConfirmed {
			state = "was confirmed a few minutes ago"
		}
		return fmt.Errorf("%w: a payment of %s %s to %s on %s %s: payment %s, made %s. Sending it again would pay a second time. Nothing was sent now: ask the user whether they want a second payment of %s %s to %s; only if they confirm is it sent",
			ErrNeedsConfirmation, amount, asset, clip(who, 40), c, state, p.ID, p.CreatedAt.UTC().Format(time.RFC3339), amount, asset, clip(who, 40))
	}
	return nil
}

// txText names a transaction in a notification: its explorer link, or
// its hash where no explorer is configured (every local node, and
// mainnets by default).
func txText(link, hash string) string {
	if link != "" {
		return link
	}
	return hash
}
