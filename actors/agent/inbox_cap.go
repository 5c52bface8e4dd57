package agent

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/veilhq/veil/persistence"
)

// Inbox bounds. An agent keeps at most InboxCap notifications plus the ones
// raised since the last trim (fewer than inboxTrimEvery): every
// inboxTrimEvery-th notification trims the inbox back to InboxCap, dropping
// the oldest read notifications first and, only when every one is unread,
// the oldest unread ones. Ids are never reused.
const (
	InboxCap       = 500
	inboxTrimEvery = 50
)

// capInbox trims the inbox when its turn comes. A failure is logged, never
// returned: the notification it follows is stored, and the next turn trims.
func (a *Actor) capInbox(ctx context.Context) {
	if a.rec.LastNotificationID%inboxTrimEvery != 0 || a.rec.LastNotificationID <= InboxCap {
		return
	}
	if err := a.trimInbox(ctx, InboxCap); err != nil {
		a.log(ctx).Warn("inbox trim failed", slog.Any("err", err))
	}
}

// trimInbox deletes notifications until at most keep remain.
func (a *Actor) trimInbox(ctx context.Context, keep int) error {
	recs, err := a.deps.Store.List(ctx, TableNotifications, persistence.Query{Prefix: a.id + "/"})
	if err != nil || len(recs) <= keep {
		return err
	}
	excess := len(recs) - keep
	var read, unread []persistence.Record // oldest first (key order is id order)
	for _, r := range recs {
		var n struct {
			Read bool `json:"read"`
		}
		if err := json.Unmarshal(r.Value, &n); err != nil {
			return err
		}
		if n.Read {
			read = append(read, r)
		} else {
			unread = append(unread, r)
		}
	}
	victims := append(read, unread...)[:excess]
	ops := make([]persistence.Op, 0, len(victims))
	for _, r := range victims {
		ops = append(ops, persistence.Delete(TableNotifications, r.Key, persistence.AtVersion(r.Version)))
	}
	_, err = a.deps.Store.Apply(ctx, ops...)
	return err
}
