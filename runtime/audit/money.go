package audit

import "time"

// The money movements that no request of the account's keys makes: a
// payer's "I paid" on the public pay page, an x402 payment, a schedule's
// run, and a payment the agent received (found by the scanner, or by a
// claim that named its transaction). Their records carry no key; Source
// says what made them, Method and Route are empty (no request of the
// account), and Outcome is ok, or failed for a schedule run that failed.
const (
	// ActionInvoiceClaim: a payer's notice on the public pay page (POST
	// /pay/:id/paid) settled an invoice, verified on chain.
	ActionInvoiceClaim = "invoice.claim"
	// ActionInvoiceX402: an x402 payment (GET /pay/:id/x402) was settled
	// to an invoice's address.
	ActionInvoiceX402 = "invoice.x402"
	// ActionScheduleRun: a schedule's slot paid, or failed for good.
	ActionScheduleRun = "schedule.run"
	// ActionPaymentReceived: a payment to the agent was recorded.
	ActionPaymentReceived = "payment.received"
)

// Sources of the money records.
const (
	SourcePayPage  = "pay page"
	SourceX402     = "x402"
	SourceSchedule = "schedule"
	SourceChain    = "chain"
)

// Money is the record of a money movement of the agent agentID, of
// account accountID, that no API request made.
func Money(now time.Time, accountID, agentID, action, source, outcome, detail string, paymentIDs ...string) Record {
	var ids []string
	for _, id := range paymentIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	return Record{Time: now, AccountID: accountID, AgentID: agentID, Action: action, Source: source, Outcome: outcome, Detail: detail, PaymentIDs: ids}
}
