package agent

import (
	"context"
	"log/slog"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
)

// The audit records of the money movements that no API request of the
// account makes (runtime/audit.Money): the API writes one record per
// request, so a payer's claim on the public pay page, an x402 payment, a
// schedule's run and a payment received are recorded here, by the agent
// that owns them. Where the movement is one write (a schedule run, an x402
// settlement) its record is in the same batch; otherwise it follows it.

// moneyAudit is the write of one such record; ok is false when it cannot
// be made (an agent without an account: never for a created agent).
func (a *Actor) moneyAudit(ctx context.Context, action, source, outcome, detail string, ids ...string) (persistence.Op, bool) {
	if a.rec == nil || a.rec.AccountID == "" {
		return persistence.Op{}, false
	}
	_, op, err := audit.Prepare(audit.Money(a.deps.now(), a.rec.AccountID, a.id, action, source, outcome, detail, ids...))
	if err != nil {
		a.log(ctx).Error("audit record not made", slog.String("action", action), slog.Any("err", err))
		return persistence.Op{}, false
	}
	return op, true
}

// appendMoneyAudit writes the record of a movement already committed; a
// failure is logged (the movement stands).
func (a *Actor) appendMoneyAudit(ctx context.Context, action, source, outcome, detail string, ids ...string) {
	op, ok := a.moneyAudit(ctx, action, source, outcome, detail, ids...)
	if !ok {
		return
	}
	if _, err := a.deps.Store.Apply(context.WithoutCancel(ctx), op); err != nil {
		a.log(ctx).Error("audit record not written", slog.String("action", action), slog.Any("err", err))
	}
}
