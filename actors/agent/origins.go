package agent

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
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

// namingDirectory is the request's directory: it remembers the Veil name
// of every meta-address it resolved.
type namingDirectory struct {
	Directory
	mu    sync.Mutex
	known map[string]string // meta-address → name.veil
}

func (d *namingDirectory) LookupAgent(ctx context.Context, name string) (tools.Agent, error) {
	ag, err := d.Directory.LookupAgent(ctx, name)
	if err == nil {
		d.mu.Lock()
		if d.known == nil {
			d.known = map[string]string{}
		}
		for _, m := range ag.MetaAddresses {
			d.known[m] = ag.Name + chains.NameSuffix
		}
		d.mu.Unlock()
	}
	return ag, err
}

// name is how a held payment shows its recipient: the Veil name when this
// request resolved it, else the meta-address shortened.
func (d *namingDirectory) name(meta string) string {
	d.mu.Lock()
	n, ok := d.known[meta]
	d.mu.Unlock()
	if ok {
		return n
	}
	if strings.HasPrefix(strings.ToLower(meta), "st:") && len(meta) > 24 {
		return meta[:14] + "…" + meta[len(meta)-6:]
	}
	return meta
}
