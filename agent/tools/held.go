package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
)

// StatusPendingApproval is the status of a payment held for the owner.
const StatusPendingApproval = "pending_approval"

// PaymentHeld is the detail of send_payment and pay_agent when the owner's
// policy holds the payment for approval (docs/approvals.md): the tool
// succeeded, nothing was paid yet, and the owner decides.
type PaymentHeld struct {
	ApprovalID string    `json:"approvalId"`
	Status     string    `json:"status"`
	Amount     string    `json:"amount"`
	Asset      string    `json:"asset"`
	Chain      chains.ID `json:"chain"`
	Recipient  string    `json:"recipient"`
	Reasons    []string  `json:"reasons"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Message    string    `json:"message"`
}

// HeldError is what Chains.SendStealth answers for a payment it held
// instead of sending. The payment tools turn it into a PaymentHeld detail.
type HeldError struct {
	ApprovalID string
	Reasons    []string
	ExpiresAt  time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("payment held for the owner's approval (approval %s): %s", e.ApprovalID, strings.Join(e.Reasons, "; "))
}

// notSent answers a payment (req) that the chain did not answer with a
// transaction (err): held for the owner's approval, the tool succeeds
// with a *PaymentHeld (nothing was paid yet); on its way with its outcome
// unknown, with a *PendingPayment (never "nothing was done"); else it
// failed, explained (chainErr) as what.
func notSent(ctx context.Context, env *Env, err error, req PaymentRequest, what string) (any, error) {
	amount, asset, c, who := req.Amount().String(), req.Asset().Symbol, req.Chain(), req.who()
	var he *HeldError
	if errors.As(err, &he) {
		return held(he, amount, asset, c, who), nil
	}
	if outcomeUnknown(err) {
		return pendingResult(ctx, env, err, amount, asset, c, who, req.IdempotencyKey()), nil
	}
	return nil, chainErr(what, c, err)
}

func held(e *HeldError, amount, asset string, c chains.ID, recipient string) *PaymentHeld {
	return &PaymentHeld{ApprovalID: e.ApprovalID, Status: StatusPendingApproval, Amount: amount, Asset: asset, Chain: c,
		Recipient: recipient, Reasons: e.Reasons, ExpiresAt: e.ExpiresAt,
		Message: fmt.Sprintf("Nothing was paid yet: the owner's policy holds this payment for approval (%s). The owner approves or denies it with a signature from the owner wallet before %s.",
			strings.Join(e.Reasons, "; "), e.ExpiresAt.UTC().Format(time.RFC3339))}
}
