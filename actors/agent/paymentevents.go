package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/veilhq/veil/actors/webhook"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// TablePaymentEvents holds the agent's payment events (docs/payments.md,
// "Events"): agent id/event id (hex) → client.PaymentEvent. An event's id
// comes from the notification sequence (Record.LastNotificationID), so
// the notification stream sends both in one order and resumes both after
// one Last-Event-ID.
const TablePaymentEvents = "payment_events"

// PaymentEvent is client.PaymentEvent: the wire shape is defined once.
type PaymentEvent = client.PaymentEvent

// paymentEventCap is how many payment events an agent keeps for the
// stream to resume from; older ones go when a new one is written.
const paymentEventCap = InboxCap

// eventOps numbers ev from next (moving its LastNotificationID) and
// answers its writes: the event and its webhook outbox record, to commit
// with next, so the event exists exactly when the move it reports does.
func (a *Actor) eventOps(ctx context.Context, next *Record, ev *PaymentEvent) ([]persistence.Op, error) {
	next.LastNotificationID++
	ev.ID, ev.CreatedAt = next.LastNotificationID, a.deps.now()
	raw, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	ops := []persistence.Op{persistence.Put(TablePaymentEvents, a.noteKey(ev.ID), raw, persistence.Absent())}
	out, err := webhook.OutboxOps(ctx, a.deps.Store, a.rec.AccountID, a.id, ev.Type, ev.CreatedAt, ev)
	if err != nil {
		return nil, fmt.Errorf("agent %s: webhook outbox: %w", a.id, err)
	}
	return append(ops, out...), nil
}

// trimPaymentEvents keeps the newest paymentEventCap events. Best effort:
// a failure leaves a few more for the next write to remove.
func (a *Actor) trimPaymentEvents(ctx context.Context) {
	recs, err := a.deps.Store.List(ctx, TablePaymentEvents, persistence.Query{Prefix: a.id + "/"})
	if err != nil || len(recs) <= paymentEventCap {
		return
	}
	var ops []persistence.Op
	for _, r := range recs[:len(recs)-paymentEventCap] {
		ops = append(ops, persistence.Delete(TablePaymentEvents, r.Key, persistence.AtVersion(r.Version)))
	}
	if _, err := a.deps.Store.Apply(ctx, ops...); err != nil {
		a.log(ctx).Warn("payment events trim failed", "err", err)
	}
}

// PaymentEventsAfter reads the agent's payment events with an id above
// after, oldest first, at most limit (the notification stream).
func PaymentEventsAfter(ctx context.Context, st persistence.Store, agentID string, after int64, limit int) ([]PaymentEvent, error) {
	return jsonrec.List[PaymentEvent](ctx, st, TablePaymentEvents, persistence.Query{Prefix: agentID + "/", After: fmt.Sprintf("%s/%016x", agentID, after), Limit: limit})
}
