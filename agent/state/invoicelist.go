package state

import (
	"context"
	"fmt"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// InvoiceExpired is a filter of InvoiceFilter.Status, not a stored status:
// an invoice past its expiry keeps status pending (the spec's two states)
// with expiresAt in the past.
const InvoiceExpired = "expired"

// InvoiceFilter selects one page of an agent's invoices (GET
// /agent/:id/invoices).
type InvoiceFilter struct {
	// Status: "" every invoice; InvoicePending those that can still be
	// paid; InvoicePaid; InvoiceExpired those pending past their expiry.
	Status string `json:"status,omitempty"`
	// Since keeps invoices created at or after it (zero: no bound).
	Since time.Time `json:"since,omitzero"`
	// After is where the page starts (the zero Cursor: the newest).
	After Cursor `json:"after,omitzero"`
	// Limit caps the page (0: DefaultPageLimit).
	Limit int `json:"limit,omitempty"`
}

// CheckInvoiceStatus says whether s is a status InvoiceFilter knows.
func CheckInvoiceStatus(s string) error {
	switch s {
	case "", InvoicePending, InvoicePaid, InvoiceExpired:
		return nil
	}
	return fmt.Errorf("%w: status %q is not one of pending, paid, expired", ErrInvalid, s)
}

// InvoicePage is one page of invoices, newest first. NextCursor is empty
// on the last page.
type InvoicePage struct {
	Invoices   []tools.Invoice `json:"invoices"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// Page lists one page of the agent's invoices, newest first, as f selects.
func (s *Invoices) Page(ctx context.Context, f InvoiceFilter) (InvoicePage, error) {
	if err := CheckInvoiceStatus(f.Status); err != nil {
		return InvoicePage{}, err
	}
	if f.Limit < 0 || f.Limit > MaxPageLimit {
		return InvoicePage{}, fmt.Errorf("%w: limit %d is not from 1 to %d", ErrInvalid, f.Limit, MaxPageLimit)
	}
	recs, err := jsonrec.List[InvoiceRecord](ctx, s.store, TableInvoices, persistence.Query{Prefix: s.agentID + "/"})
	if err != nil {
		return InvoicePage{}, err
	}
	now := s.now()
	out := make([]tools.Invoice, 0, len(recs))
	for _, rec := range recs {
		inv := rec.invoice()
		if inv.CreatedAt.Before(f.Since) || !invoiceIs(inv, f.Status, now) {
			continue
		}
		out = append(out, inv)
	}
	page, next := pageOf(out, func(inv tools.Invoice) Cursor { return Cursor{At: inv.CreatedAt, ID: inv.ID} }, f.After, f.Limit)
	return InvoicePage{Invoices: page, NextCursor: next}, nil
}

func invoiceIs(inv tools.Invoice, status string, now time.Time) bool {
	switch status {
	case InvoicePending:
		return inv.Status == InvoicePending && !inv.Expired(now)
	case InvoiceExpired:
		return inv.Status == InvoicePending && inv.Expired(now)
	case InvoicePaid:
		return inv.Status == InvoicePaid
	}
	return true
}
