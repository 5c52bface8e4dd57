package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
)

// ListInvoices is GET /agent/:id/invoices: one page of the agent's
// invoices, newest first, as Filter selects (docs/api.md, "Lists and
// paging"). A filter the store refuses is ErrBadFilter.
type ListInvoices struct {
	answers[*state.InvoicePage]
	AccountID string
	Filter    state.InvoiceFilter
}

func (m *ListInvoices) Account() string { return m.AccountID }

func (a *Actor) listInvoices(ctx context.Context, m *ListInvoices) (*state.InvoicePage, error) {
	p, err := a.invoices().Page(ctx, m.Filter)
	if errors.Is(err, state.ErrInvalid) {
		return nil, fmt.Errorf("%w: %w", ErrBadFilter, err)
	}
	if err != nil {
		return nil, err
	}
	if p.Invoices == nil {
		p.Invoices = []tools.Invoice{}
	}
	return &p, nil
}
