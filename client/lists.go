package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// The paged lists (docs/api.md, "Lists and paging"): each call answers one
// page, newest first; pass the page's NextCursor as the next call's Cursor
// until it is empty.

// Page sizes the server accepts.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// InvoiceExpired filters ListInvoices to unpaid invoices past their
// expiry (their Status stays InvoicePending).
const InvoiceExpired = "expired"

// ListQuery filters and pages a list. The zero value is the first page of
// everything.
type ListQuery struct {
	// Status keeps one status ("" every one).
	Status string
	// Since keeps what was created at or after it (zero: no bound).
	Since time.Time
	// Limit is the page's size, 1 to MaxPageLimit (0: the server's
	// DefaultPageLimit).
	Limit int
	// Cursor is the previous page's NextCursor ("" the first page).
	Cursor string
}

func (q ListQuery) values() url.Values {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	return v
}

// InvoicePage is one page of GET /agent/:id/invoices.
type InvoicePage struct {
	Invoices []Invoice `json:"invoices"`
	// NextCursor fetches the next page; "" on the last one.
	NextCursor string `json:"nextCursor,omitempty"`
}

// ListInvoices calls GET /agent/:id/invoices: one page of the agent's
// invoices, newest first. q.Status is InvoicePending (can still be paid),
// InvoicePaid, InvoiceExpired or "".
func (c *Client) ListInvoices(ctx context.Context, id string, q ListQuery, opts ...CallOption) (*InvoicePage, error) {
	r := get("/agent/"+esc(id)+"/invoices", opts)
	r.query = q.values()
	return answer[InvoicePage](ctx, c, r)
}

// AllInvoices follows ListInvoices's cursor to the end (q.Cursor is the
// start) and returns every invoice q selects, newest first.
func (c *Client) AllInvoices(ctx context.Context, id string, q ListQuery, opts ...CallOption) ([]Invoice, error) {
	return allPages(&q.Cursor, func() ([]Invoice, string, error) {
		p, err := c.ListInvoices(ctx, id, q, opts...)
		if err != nil {
			return nil, "", err
		}
		return p.Invoices, p.NextCursor, nil
	})
}

// Payment record statuses (docs/payments.md): pending (recorded before
// signing; it may have reached the node, nobody knows yet) → broadcast →
// confirmed | failed; refused when nothing was signed.
const (
	PaymentPending   = "pending"
	PaymentBroadcast = "broadcast"
	PaymentConfirmed = "confirmed"
	PaymentFailed    = "failed"
	PaymentRefused   = "refused"
)

// PaymentSource is what asked for a payment: conversation, schedule,
// approval, mcp or api, with its id where it has one.
type PaymentSource struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
}

// PaymentRecipient is who a payment goes to: a name people read (may be
// empty) and the address the chain pays.
type PaymentRecipient struct {
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// PaymentRecord is one payment the agent made (GET /agent/:id/payments):
// one record per payment from the moment it is signed, whose status only
// moves forward.
type PaymentRecord struct {
	ID      string `json:"id"`
	AgentID string `json:"agentId"`
	// Kind: send_payment, pay_invoice, withdraw, x402, gas_funding,
	// relayer_fee or remainder.
	Kind   string        `json:"kind"`
	Source PaymentSource `json:"source"`
	Chain  string        `json:"chain"`
	Asset  string        `json:"asset"`
	// Amount is a decimal; "0" with All (everything, less fees).
	Amount    string           `json:"amount"`
	All       bool             `json:"all,omitempty"`
	Recipient PaymentRecipient `json:"recipient"`
	// From is the one-time address a withdrawal spends.
	From string `json:"from,omitempty"`
	// ForPayment is the id of the payment this one serves: the withdrawal
	// of a gas_funding, relayer_fee or remainder record.
	ForPayment string `json:"forPayment,omitempty"`
	Status     string `json:"status"`
	// TxHash is the latest transaction; TxHashes every one (fee bumps and
	// rebroadcasts stay one record), oldest first.
	TxHash        string     `json:"txHash,omitempty"`
	TxHashes      []string   `json:"txHashes,omitempty"`
	Confirmations uint64     `json:"confirmations,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	BroadcastAt   *time.Time `json:"broadcastAt,omitempty"`
	SettledAt     *time.Time `json:"settledAt,omitempty"`
}

// PaymentPage is one page of GET /agent/:id/payments.
type PaymentPage struct {
	Payments []PaymentRecord `json:"payments"`
	// NextCursor fetches the next page; "" on the last one.
	NextCursor string `json:"nextCursor,omitempty"`
}

// PaymentQuery is ListPayments's filter and page: ListQuery's, plus the
// chain.
type PaymentQuery struct {
	ListQuery
	Chain string
}

// ListPayments calls GET /agent/:id/payments: one page of the payments
// the agent made, newest first. q.Status is one of the Payment* statuses
// or ""; q.Chain a chain or "".
func (c *Client) ListPayments(ctx context.Context, id string, q PaymentQuery, opts ...CallOption) (*PaymentPage, error) {
	r := get("/agent/"+esc(id)+"/payments", opts)
	r.query = q.values()
	if q.Chain != "" {
		r.query.Set("chain", q.Chain)
	}
	return answer[PaymentPage](ctx, c, r)
}

// AllPayments follows ListPayments's cursor to the end (q.Cursor is the
// start) and returns every payment q selects, newest first.
func (c *Client) AllPayments(ctx context.Context, id string, q PaymentQuery, opts ...CallOption) ([]PaymentRecord, error) {
	return allPages(&q.Cursor, func() ([]PaymentRecord, string, error) {
		p, err := c.ListPayments(ctx, id, q, opts...)
		if err != nil {
			return nil, "", err
		}
		return p.Payments, p.NextCursor, nil
	})
}

// GetPayment calls GET /agent/:id/payments/:paymentId.
func (c *Client) GetPayment(ctx context.Context, id, paymentID string, opts ...CallOption) (*PaymentRecord, error) {
	return answer[PaymentRecord](ctx, c, get("/agent/"+esc(id)+"/payments/"+esc(paymentID), opts))
}

// Received payment statuses, ReceivedQuery's Status: a payment that still
// holds some of its money, or one withdrawn to the last unit.
const (
	ReceivedHeld      = "held"
	ReceivedWithdrawn = "withdrawn"
)

// ReceivedPayment is one stealth payment the agent received (GET
// /agent/:id/payments/received): the spec's Payment (stealthAddress,
// balance, ephemeralPubKey) with the chain, asset, amount and
// transactions. There is one per one-time address and chain; a second
// transaction to the same address adds to its Amount and TxHashes.
type ReceivedPayment struct {
	Chain           string `json:"chain"`
	StealthAddress  string `json:"stealthAddress"`
	EphemeralPubKey string `json:"ephemeralPubKey"`
	Asset           string `json:"asset"`
	// Amount is every transaction's to this address, a decimal; Balance
	// what is left of it after withdrawals.
	Amount  string `json:"amount"`
	Balance string `json:"balance"`
	// TxHash is the first transaction; TxHashes every one, oldest first.
	TxHash    string   `json:"txHash"`
	TxHashes  []string `json:"txHashes"`
	Withdrawn bool     `json:"withdrawn"`
	// ReceivedAt is when the server first recorded it.
	ReceivedAt time.Time `json:"receivedAt"`
}

// ReceivedPage is one page of GET /agent/:id/payments/received.
type ReceivedPage struct {
	Payments []ReceivedPayment `json:"payments"`
	// NextCursor fetches the next page; "" on the last one.
	NextCursor string `json:"nextCursor,omitempty"`
}

// ReceivedQuery is ListReceived's filter and page: ListQuery's (Status is
// ReceivedHeld, ReceivedWithdrawn or ""; Since bounds ReceivedAt), plus
// the chain.
type ReceivedQuery struct {
	ListQuery
	Chain string
}

// ListReceived calls GET /agent/:id/payments/received: one page of the
// stealth payments the agent received, newest first.
func (c *Client) ListReceived(ctx context.Context, id string, q ReceivedQuery, opts ...CallOption) (*ReceivedPage, error) {
	r := get("/agent/"+esc(id)+"/payments/received", opts)
	r.query = q.values()
	if q.Chain != "" {
		r.query.Set("chain", q.Chain)
	}
	return answer[ReceivedPage](ctx, c, r)
}

// AllReceived follows ListReceived's cursor to the end (q.Cursor is the
// start) and returns every received payment q selects, newest first.
func (c *Client) AllReceived(ctx context.Context, id string, q ReceivedQuery, opts ...CallOption) ([]ReceivedPayment, error) {
	return allPages(&q.Cursor, func() ([]ReceivedPayment, string, error) {
		p, err := c.ListReceived(ctx, id, q, opts...)
		if err != nil {
			return nil, "", err
		}
		return p.Payments, p.NextCursor, nil
	})
}

// allPages calls page until its next cursor is "" (or the cursor it was
// asked with: a server repeating a page ends the walk rather than looping),
// moving *cursor to each next one, and returns every item, in order; on an
// error, what came before it and the error.
func allPages[T any](cursor *string, page func() ([]T, string, error)) ([]T, error) {
	var out []T
	for {
		items, next, err := page()
		if err != nil {
			return out, err
		}
		out = append(out, items...)
		if next == "" || next == *cursor {
			return out, nil
		}
		*cursor = next
	}
}
