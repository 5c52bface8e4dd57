package agent

import (
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// Messages of invoices, received payments and schedules (issue 8). Those
// with an AccountID come from the API and are account-scoped like every
// other message; those without one come only from in-process services (the
// scanner, the reminder, the public pay page), which is why the HTTP layer
// never builds them from client input beyond an id.

// Incoming is one payment found on chain for this agent: an announced
// stealth payment or a plain transfer to one of its invoices' addresses.
type Incoming struct {
	StealthAddress string
	// EphemeralPubKey of an announcement; nil for a plain transfer, whose
	// key is the invoice's.
	EphemeralPubKey []byte
	Asset           string
	Amount          string
	TxHash          string
}

// DeliverPayments records payments the chain scanner matched to this agent:
// each new one once (payment_received), and the invoice it settles paid
// (invoice_paid). Answers *DeliverReport. Redelivery changes nothing.
type DeliverPayments struct {
	answers[*DeliverReport]
	Chain    chains.ID
	Payments []Incoming
}

// DeliverReport says what a delivery changed.
type DeliverReport struct {
	New          int      // payments seen for the first time
	InvoicesPaid []string // invoices that flipped to paid
}

// GetInvoice answers the spec's Invoice (tools.Invoice).
type GetInvoice struct {
	answers[*tools.Invoice]
	AccountID string
	InvoiceID string
}

// ConfirmInvoicePaid is POST /invoice/:id/paid: with a TxHash the
// transaction is verified on chain; without one, the payments the scanner
// recorded at the invoice's address must cover it. Answers the Invoice;
// ErrNoPayment when nothing settles it. Idempotent.
type ConfirmInvoicePaid struct {
	answers[*tools.Invoice]
	AccountID string
	InvoiceID string
	TxHash    string
}

// ClaimInvoicePaid is the public POST /pay/:id/paid: anyone may name the
// transaction that paid the invoice, which is verified on chain (the
// proof is the chain's, not the caller's). Answers the pay page's view;
// ErrNoPayment when the transaction does not settle it, ErrInvoiceSettled
// when the invoice was paid by other transactions. Idempotent.
type ClaimInvoicePaid struct {
	answers[*PayView]
	InvoiceID string
	TxHash    string
}

// PublicInvoice answers *PayView for the unauthenticated pay page.
type PublicInvoice struct {
	answers[*PayView]
	InvoiceID string
}

// PayView is what a payer may see of an invoice: no agent id, account or
// keys. Its first part is what a payer's agent reads to pay it
// (tools.PayableInvoice: id, payee, amount, asset, memo, chain, payTo,
// status, expiresAt, expired, token and chainId — the asset's contract,
// mint or issuer and the EVM chain id, empty when the chain's connector
// cannot say; docs/invoices.md).
type PayView struct {
	tools.PayableInvoice
	TxHash    *string    `json:"txHash"`
	TxLink    string     `json:"txLink,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	PaidAt    *time.Time `json:"paidAt,omitempty"`
	// PaymentURI is what the QR code and the "Open in wallet" link hold
	// (chains/payuri).
	PaymentURI string `json:"paymentUri,omitempty"`
}

// ListSchedules answers []tools.Schedule, oldest first.
type ListSchedules struct {
	answers[[]tools.Schedule]
	AccountID string
}

// ScheduleAction is pause, resume or cancel of one schedule (full id).
// Answers the tools.Schedule after the change.
type ScheduleAction struct {
	answers[*tools.Schedule]
	AccountID  string
	ScheduleID string
	Action     string
}

// RunSchedule runs the slot Slot of a schedule (the reminder service sends
// it when the slot is due). Answers *RunReport. Running a slot that already
// ran, or that is no longer the schedule's next run, does nothing.
type RunSchedule struct {
	answers[*RunReport]
	ScheduleID string
	Slot       time.Time
}

// RunReport says what became of a RunSchedule.
type RunReport struct {
	// Outcome is one of the Run* constants.
	Outcome string
	TxHash  string
	// RetryAt is when to try again (Outcome RunRetry).
	RetryAt time.Time
	// Next is the schedule after the run (zero when it did not change).
	Next *tools.Schedule
	Err  string
}

// Outcomes of a RunSchedule.
const (
	RunPaid    = "paid"    // the payment went out (or had already): schedule advanced
	RunRetry   = "retry"   // failed; try again at RetryAt
	RunFailed  = "failed"  // retries exhausted: schedule_failed raised, slot skipped
	RunSkipped = "skipped" // stale slot, paused or cancelled schedule: nothing done
	RunHeld    = "held"    // held for the owner's approval: the approval pays it (docs/approvals.md)
)
