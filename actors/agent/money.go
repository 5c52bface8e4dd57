package agent

import "context"

// receiveMoney handles the messages of invoices, received payments and
// schedules; handled is false for any other message.
func (a *Actor) receiveMoney(ctx context.Context, msg any) (v any, handled bool, err error) {
	switch m := msg.(type) {
	case *DeliverPayments, *RunSchedule, *PublicInvoice:
		// In-process services only (no account).
		if a.rec == nil {
			if _, ok := msg.(*PublicInvoice); ok {
				return nil, true, ErrInvoiceNotFound
			}
			return nil, true, ErrNotFound
		}
	case *GetInvoice:
		if !a.ownedBy(m.AccountID) {
			return nil, true, ErrInvoiceNotFound
		}
	case *ConfirmInvoicePaid:
		if !a.ownedBy(m.AccountID) {
			return nil, true, ErrInvoiceNotFound
		}
	case *ListSchedules:
		if !a.ownedBy(m.AccountID) {
			return nil, true, ErrNotFound
		}
	case *ScheduleAction:
		if !a.ownedBy(m.AccountID) {
			return nil, true, ErrNotFound
		}
	default:
		return nil, false, nil
	}
	switch m := msg.(type) {
	case *DeliverPayments:
		v, err = a.deliverPayments(ctx, m)
	case *RunSchedule:
		v, err = a.runSchedule(ctx, m)
	case *PublicInvoice:
		v, err = a.publicInvoice(ctx, m)
	case *GetInvoice:
		v, err = a.getInvoice(ctx, m)
	case *ConfirmInvoicePaid:
		v, err = a.confirmInvoicePaid(ctx, m)
	case *ListSchedules:
		v, err = a.listSchedules(ctx)
	case *ScheduleAction:
		v, err = a.scheduleAction(ctx, m)
	}
	return v, true, err
}

func (a *Actor) ownedBy(account string) bool {
	return a.rec != nil && account != "" && account == a.rec.AccountID
}
