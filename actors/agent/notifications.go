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

// Notification types (DESIGN.md "Decisions"): the client's names, so each
// type is spelled once.
const (
	NotePaymentReceived  = client.NotifyPaymentReceived
	NotePaymentSent      = client.NotifyPaymentSent
	NotePaymentFailed    = client.NotifyPaymentFailed
	NoteInvoicePaid      = client.NotifyInvoicePaid
	NoteScheduleExecuted = client.NotifyScheduleExecuted
	NoteScheduleFailed   = client.NotifyScheduleFailed
	NoteWithdrawal       = client.NotifyWithdrawal
)

// NotificationTypes is every type a notification can have, for clients
// that filter on them (webhooks).
func NotificationTypes() []string {
	return []string{NotePaymentReceived, NotePaymentSent, NotePaymentFailed, NoteInvoicePaid, NoteScheduleExecuted, NoteScheduleFailed, NoteWithdrawal,
		NoteApprovalRequired, NoteApprovalDecided, NoteApprovalExpired}
}

// EventTypes is every type a webhook may subscribe to: the notification
// types and the payment events (docs/payments.md, "Events").
func EventTypes() []string {
	return append(NotificationTypes(), client.EventPaymentConfirmed, client.EventPaymentFailed)
}

// Notification is the spec's Notification, stored as the API shows it
// (the client's type, so the wire shape is defined once).
type Notification = client.Notification

// Inbox is the answer of the list endpoint.
type Inbox = client.Inbox

func (a *Actor) noteKey(id int64) string { return fmt.Sprintf("%s/%016x", a.id, id) }

// notify stores a notification, with ops in the same atomic batch.
func (a *Actor) notify(ctx context.Context, n *Notify, ops ...persistence.Op) (*Notification, error) {
	return a.notifyAs(ctx, a.rec.clone(), n, ops...)
}

// notifyAs is notify with the next agent record given (other counters of
// it already moved by ops).
func (a *Actor) notifyAs(ctx context.Context, next *Record, n *Notify, ops ...persistence.Op) (*Notification, error) {
	note, nops, err := a.noteOps(ctx, next, n)
	if err != nil {
		return nil, err
	}
	if err := a.saveRecord(ctx, next, append(ops, nops...)...); err != nil {
		return nil, err
	}
	a.deps.Feed.Publish(a.id)
	a.capInbox(ctx)
	return note, nil
}

// noteOps is the writes of notification n, numbered from next (whose
// LastNotificationID it moves): the notification and its webhook outbox
// record. The caller commits them with next.
func (a *Actor) noteOps(ctx context.Context, next *Record, n *Notify) (*Notification, []persistence.Op, error) {
	next.LastNotificationID++
	note := &Notification{ID: next.LastNotificationID, Type: n.Type, Title: n.Title, Body: n.Body, CreatedAt: a.deps.now()}
	raw, err := json.Marshal(note)
	if err != nil {
		return nil, nil, err
	}
	ops := []persistence.Op{persistence.Put(TableNotifications, a.noteKey(note.ID), raw, persistence.Absent())}
	// The webhook outbox record commits with the notification: a crash
	// cannot keep one without the other (docs/webhooks.md).
	out, err := webhook.OutboxOps(ctx, a.deps.Store, a.rec.AccountID, a.id, note.Type, note.CreatedAt, note)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: webhook outbox: %w", a.id, err)
	}
	return note, append(ops, out...), nil
}

func (a *Actor) readInbox(ctx context.Context) ([]Notification, []persistence.Record, error) {
	recs, err := a.deps.Store.List(ctx, TableNotifications, persistence.Query{Prefix: a.id + "/", Reverse: true})
	if err != nil {
		return nil, nil, err
	}
	out, err := jsonrec.Decode[Notification](TableNotifications, recs)
	return out, recs, err
}

func (a *Actor) listNotifications(ctx context.Context) (*Inbox, error) {
	notes, _, err := a.readInbox(ctx)
	if err != nil {
		return nil, err
	}
	inbox := &Inbox{Notifications: notes}
	for _, n := range notes {
		if !n.Read {
			inbox.UnreadCount++
		}
	}
	return inbox, nil
}

func (a *Actor) markRead(ctx context.Context) error {
	notes, recs, err := a.readInbox(ctx)
	if err != nil {
		return err
	}
	var ops []persistence.Op
	for i, n := range notes {
		if n.Read {
			continue
		}
		n.Read = true
		raw, err := json.Marshal(n)
		if err != nil {
			return err
		}
		ops = append(ops, persistence.Put(TableNotifications, recs[i].Key, raw, persistence.AtVersion(recs[i].Version)))
	}
	if len(ops) == 0 {
		return nil
	}
	_, err = a.deps.Store.Apply(ctx, ops...)
	return err
}

func (a *Actor) deleteNotifications(ctx context.Context) error {
	_, err := a.deps.Store.Apply(ctx, persistence.DeletePrefix(TableNotifications, a.id+"/"))
	return err
}

// NotificationsAfter reads the agent's notifications with an id above
// after, oldest first, at most limit. The notification stream reads the
// store directly: a notification another cluster member stored is there
// too.
func NotificationsAfter(ctx context.Context, st persistence.Store, agentID string, after int64, limit int) ([]Notification, error) {
	return jsonrec.List[Notification](ctx, st, TableNotifications, persistence.Query{Prefix: agentID + "/", After: fmt.Sprintf("%s/%016x", agentID, after), Limit: limit})
}
