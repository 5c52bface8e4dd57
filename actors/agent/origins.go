package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/persistence"
)

// TableScheduleOrigins remembers the conversation that created each
// schedule: "<agentID>/<scheduleID>" → conversation id. A scheduled run's
// outcome is recorded there as a system message.
const TableScheduleOrigins = "schedule_origins"

// originSchedules records where a schedule was created.
type originSchedules struct {
	tools.Schedules
	st      persistence.Store
	agentID string
	convID  string
}

func (o originSchedules) Create(ctx context.Context, s tools.Schedule) (tools.Schedule, error) {
	sc, err := o.Schedules.Create(ctx, s)
	if err != nil || o.convID == "" {
		return sc, err
	}
	// Best effort and after the schedule: without it, outcomes are still
	// notified, only not echoed in the conversation.
	_, _ = o.st.Apply(ctx, persistence.Put(TableScheduleOrigins, o.agentID+"/"+sc.ID, []byte(o.convID), persistence.Any()))
	return sc, nil
}

// scheduleOrigin is the conversation that created the schedule, or "".
func (a *Actor) scheduleOrigin(ctx context.Context, scheduleID string) string {
	rec, err := a.deps.Store.Get(ctx, TableScheduleOrigins, a.id+"/"+scheduleID)
	if err != nil {
		if !errors.Is(err, persistence.ErrNotFound) {
			a.log(ctx).Warn("schedule origin unreadable", "err", err)
		}
		return ""
	}
	return string(rec.Value)
}

// recipientName shows a meta-address as the Veil agent it belongs to when
// one of ours has it (approvals show names the owner recognises).
func (a *Actor) recipientName(ctx context.Context, meta string) string {
	// Payments to names are resolved to meta-addresses before they reach
	// the chain; the reverse lookup is a scan we avoid: the meta-address
	// is what is paid, shortened for display.
	_ = ctx
	if strings.HasPrefix(strings.ToLower(meta), "st:") && len(meta) > 24 {
		return meta[:14] + "…" + meta[len(meta)-6:]
	}
	return meta
}
