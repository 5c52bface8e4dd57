package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/persistence"
)

// Cancel cancels the agent's invoice id (cancel_invoice): from now on it
// cannot be paid. It keeps the spec's status pending and expires now
// (ExpiresAt), with CancelledAt saying why, so every rule that refuses an
// expired invoice (MarkPaid, pay_invoice, an approval decided later, the
// pay page) refuses it too. Cancelling a cancelled invoice changes
// nothing (changed false); a paid or expired one is refused with an error
// matching tools.ErrInvoiceNotCancellable, an unknown one with
// tools.ErrUnknownInvoice (and ErrNotFound).
func (s *Invoices) Cancel(ctx context.Context, id string) (inv tools.Invoice, changed bool, err error) {
	if err := checkAgentID(s.agentID); err != nil {
		return tools.Invoice{}, false, err
	}
	err = retry(ctx, func() error {
		rec, v, err := s.record(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: %w", tools.ErrUnknownInvoice, err)
		}
		if err != nil {
			return err
		}
		now := s.now().UTC()
		switch {
		case rec.Status == InvoicePaid:
			return fmt.Errorf("%w: invoice %s is already paid; a paid invoice cannot be cancelled", tools.ErrInvoiceNotCancellable, id)
		case rec.CancelledAt != nil:
			inv, changed = rec.invoice(), false
			return nil
		case rec.Expired(now):
			return fmt.Errorf("%w: invoice %s already expired at %s", tools.ErrInvoiceNotCancellable, id, rec.ExpiresAt.UTC().Format(time.RFC3339))
		}
		at := now
		rec.CancelledAt, rec.ExpiresAt = &at, &at
		if _, err := s.store.Apply(ctx, persistence.Put(TableInvoices, s.key(id), mustJSON(rec), persistence.AtVersion(v))); err != nil {
			return err
		}
		inv, changed = rec.invoice(), true
		return nil
	})
	return inv, changed, err
}
