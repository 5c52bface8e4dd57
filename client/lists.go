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
	var out []Invoice
	for {
		p, err := c.ListInvoices(ctx, id, q, opts...)
		if err != nil {
			return out, err
		}
		out = append(out, p.Invoices...)
		if p.NextCursor == "" || p.NextCursor == q.Cursor {
			return out, nil
		}
		q.Cursor = p.NextCursor
	}
}
