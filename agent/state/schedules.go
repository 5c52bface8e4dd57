package state

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Schedule statuses.
const (
	ScheduleActive    = "active"
	SchedulePaused    = "paused"
	ScheduleCancelled = "cancelled"
)

// Schedule actions.
const (
	ActionPause  = "pause"
	ActionResume = "resume"
	ActionCancel = "cancel"
)

// dueLayout is RFC 3339 in UTC with all nine fraction digits: fixed width,
// so the due index's key order is time order.
const dueLayout = "2006-01-02T15:04:05.000000000Z"

// DueKey is the schedule_due key of a schedule whose next run is t.
func DueKey(t time.Time, agentID, scheduleID string) string {
	return t.UTC().Format(dueLayout) + "/" + agentID + "/" + scheduleID
}

// Due is one entry of the next-run index.
type Due struct {
	NextRun    time.Time
	AgentID    string
	ScheduleID string
}

// DueSchedules lists, earliest first, the active schedules of every agent
// whose next run is at or before until (at most limit, 0 = all). The
// reminder service wakes those agents.
func DueSchedules(ctx context.Context, store persistence.Store, until time.Time, limit int) ([]Due, error) {
	end := until.UTC().Format(dueLayout)
	var out []Due
	after := ""
	for {
		page := 256
		if limit > 0 {
			page = min(page, limit-len(out))
		}
		recs, err := store.List(ctx, TableScheduleDue, persistence.Query{After: after, Limit: page})
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			ts, rest, _ := strings.Cut(r.Key, "/")
			if ts > end {
				return out, nil
			}
			agentID, id, ok := strings.Cut(rest, "/")
			t, err := time.Parse(dueLayout, ts)
			if !ok || err != nil {
				return nil, fmt.Errorf("corrupt schedule_due key %q", r.Key)
			}
			out = append(out, Due{NextRun: t, AgentID: agentID, ScheduleID: id})
		}
		if len(recs) < page || (limit > 0 && len(out) >= limit) {
			return out, nil
		}
		after = recs[len(recs)-1].Key
	}
}

// Schedules is one agent's recurring payments. It implements
// tools.Schedules; the reminder service advances them with Advance.
type Schedules struct {
	store   persistence.Store
	agentID string
	now     func() time.Time
	check   func(context.Context, tools.Schedule) error
}

// WithCheck returns s with check run on every schedule about to become
// active — one being created, one being resumed — before it is stored; an
// error refuses the change and is returned as is. The agent passes the
// owner's spending policy here (agent/policy), so that no path makes or
// resumes a schedule the policy would refuse.
func (s *Schedules) WithCheck(check func(context.Context, tools.Schedule) error) *Schedules {
	c := *s
	c.check = check
	return &c
}

var _ tools.Schedules = (*Schedules)(nil)

// NewSchedules serves the schedules of agentID.
func NewSchedules(store persistence.Store, agentID string, now func() time.Time) *Schedules {
	return &Schedules{store: store, agentID: agentID, now: clock(now)}
}

func (s *Schedules) key(id string) string { return s.agentID + "/" + id }

func (s *Schedules) dueOp(sc tools.Schedule) persistence.Op {
	return persistence.Put(TableScheduleDue, DueKey(sc.NextRun, s.agentID, sc.ID), []byte(s.key(sc.ID)), persistence.Absent())
}

func (s *Schedules) undueOp(sc tools.Schedule) persistence.Op {
	return persistence.Delete(TableScheduleDue, DueKey(sc.NextRun, s.agentID, sc.ID), persistence.AtVersion(1))
}

// Create stores an active schedule. Its first run is one interval after
// now (tools.NextRun anchored at CreatedAt). A preset s.ID makes it
// idempotent.
func (s *Schedules) Create(ctx context.Context, in tools.Schedule) (tools.Schedule, error) {
	if err := checkAgentID(s.agentID); err != nil {
		return tools.Schedule{}, err
	}
	c, asset, amount, err := checkSpend(in.Chain, in.Asset, in.Amount)
	if err != nil {
		return tools.Schedule{}, err
	}
	if strings.TrimSpace(in.Recipient) == "" {
		return tools.Schedule{}, fmt.Errorf("%w: empty recipient", ErrInvalid)
	}
	id, preset, err := newID(in.ID)
	if err != nil {
		return tools.Schedule{}, err
	}
	now := s.now().UTC()
	next, err := tools.NextRun(now, now, in.Interval)
	if err != nil {
		return tools.Schedule{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	sc := tools.Schedule{
		ID: id, Recipient: strings.TrimSpace(in.Recipient), Amount: amount, Asset: asset.Symbol, Chain: c,
		Interval: in.Interval, Status: ScheduleActive, NextRun: next, CreatedAt: now,
	}
	if in.EndDate != nil {
		e := in.EndDate.UTC()
		if e.Before(next) {
			return tools.Schedule{}, fmt.Errorf("%w: end date %s is before the first run %s", ErrInvalid, e.Format(time.RFC3339), next.Format(time.RFC3339))
		}
		sc.EndDate = &e
	}
	if preset {
		if got, err := s.Get(ctx, id); err == nil {
			return sameSchedule(got, sc)
		} else if !errors.Is(err, ErrNotFound) {
			return tools.Schedule{}, err
		}
	}
	if s.check != nil {
		if err := s.check(ctx, sc); err != nil {
			return tools.Schedule{}, err
		}
	}
	_, err = s.store.Apply(ctx,
		persistence.Put(TableSchedules, s.key(id), mustJSON(sc), persistence.Absent()),
		s.dueOp(sc),
	)
	if errors.Is(err, persistence.ErrConflict) && preset {
		if got, gerr := s.Get(ctx, id); gerr == nil {
			return sameSchedule(got, sc)
		}
	}
	if err != nil {
		return tools.Schedule{}, fmt.Errorf("store schedule: %w", err)
	}
	return sc, nil
}

func sameSchedule(got, want tools.Schedule) (tools.Schedule, error) {
	if got.Recipient != want.Recipient || got.Amount != want.Amount || got.Asset != want.Asset || got.Chain != want.Chain || got.Interval != want.Interval {
		return tools.Schedule{}, fmt.Errorf("%w: schedule %s", ErrIDReused, want.ID)
	}
	return got, nil
}

// List returns the agent's schedules, oldest first.
func (s *Schedules) List(ctx context.Context) ([]tools.Schedule, error) {
	out, err := jsonrec.List[tools.Schedule](ctx, s.store, TableSchedules, persistence.Query{Prefix: s.agentID + "/"})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, nil
}

// Get returns one schedule by its full id.
func (s *Schedules) Get(ctx context.Context, id string) (tools.Schedule, error) {
	sc, _, err := s.get(ctx, id)
	return sc, err
}

func (s *Schedules) get(ctx context.Context, id string) (tools.Schedule, uint64, error) {
	var sc tools.Schedule
	if id == "" || strings.Contains(id, "/") {
		return sc, 0, fmt.Errorf("%w: schedule %q", ErrNotFound, id)
	}
	v, err := getJSON(ctx, s.store, TableSchedules, s.key(id), &sc)
	if errors.Is(err, ErrNotFound) {
		return sc, 0, fmt.Errorf("%w: schedule %s", ErrNotFound, id)
	}
	return sc, v, err
}

// resolve finds the one schedule whose id starts with prefix (at least 4
// characters, or a full id).
func (s *Schedules) resolve(ctx context.Context, prefix string) (string, error) {
	prefix = strings.ToLower(strings.TrimSpace(prefix))
	if len(prefix) < 4 || strings.Contains(prefix, "/") {
		return "", fmt.Errorf("%w: schedule id %q: give the id or a prefix of at least 4 characters", ErrInvalid, prefix)
	}
	recs, err := s.store.List(ctx, TableSchedules, persistence.Query{Prefix: s.key(prefix), Limit: 6})
	if err != nil {
		return "", err
	}
	switch len(recs) {
	case 0:
		return "", fmt.Errorf("%w: no schedule id starts with %q (see list_schedules)", ErrNotFound, prefix)
	case 1:
		return strings.TrimPrefix(recs[0].Key, s.agentID+"/"), nil
	}
	var ids []string
	for _, r := range recs[:min(len(recs), 5)] {
		ids = append(ids, strings.TrimPrefix(r.Key, s.agentID+"/"))
	}
	return "", fmt.Errorf("%w: %q matches several schedules (%s): give more characters", ErrAmbiguous, prefix, strings.Join(ids, ", "))
}

// Transition applies pause, resume or cancel to the schedule whose id
// starts with idPrefix. active → paused → active; active|paused →
// cancelled, which is final. Resuming sets the next run to the stored one
// if it is still ahead, else the first slot after now (paused slots are
// skipped); a schedule whose end date passed while paused is cancelled
// instead.
func (s *Schedules) Transition(ctx context.Context, idPrefix, action string) (tools.Schedule, error) {
	switch action {
	case ActionPause, ActionResume, ActionCancel:
	default:
		return tools.Schedule{}, fmt.Errorf("%w: action %q: use pause, resume or cancel", ErrInvalid, action)
	}
	id, err := s.resolve(ctx, idPrefix)
	if err != nil {
		return tools.Schedule{}, err
	}
	out, err := s.update(ctx, id, func(sc tools.Schedule) (tools.Schedule, []persistence.Op, error) {
		next := sc
		var ops []persistence.Op
		switch {
		case sc.Status == ScheduleCancelled:
			return next, nil, fmt.Errorf("%w: schedule %s is cancelled, which is final; create a new one", ErrInvalidTransition, id)
		case action == ActionPause && sc.Status == ScheduleActive:
			next.Status = SchedulePaused
			ops = append(ops, s.undueOp(sc))
		case action == ActionPause:
			return next, nil, fmt.Errorf("%w: schedule %s is already paused", ErrInvalidTransition, id)
		case action == ActionResume && sc.Status == SchedulePaused:
			if s.check != nil {
				if err := s.check(ctx, sc); err != nil {
					return next, nil, err
				}
			}
			now := s.now().UTC()
			if !next.NextRun.After(now) {
				var err error
				if next.NextRun, err = tools.NextRun(sc.CreatedAt, now, sc.Interval); err != nil {
					return next, nil, err
				}
			}
			if sc.EndDate != nil && next.NextRun.After(*sc.EndDate) {
				next.Status = ScheduleCancelled
			} else {
				next.Status = ScheduleActive
				ops = append(ops, s.dueOp(next))
			}
		case action == ActionResume:
			return next, nil, fmt.Errorf("%w: schedule %s is active, not paused", ErrInvalidTransition, id)
		default: // cancel
			next.Status = ScheduleCancelled
			if sc.Status == ScheduleActive {
				ops = append(ops, s.undueOp(sc))
			}
		}
		return next, ops, nil
	})
	if err != nil {
		return tools.Schedule{}, err
	}
	return out, nil
}

// PauseOps returns the writes that pause schedule id, as Transition's
// pause does, for the caller to apply in one batch with other writes (the
// notification that says why); ok is false when the schedule is not
// active. The writes expect the version read: a concurrent change makes
// them conflict (persistence.ErrConflict), and the caller reads again.
func (s *Schedules) PauseOps(ctx context.Context, id string) (sc tools.Schedule, ops []persistence.Op, ok bool, err error) {
	sc, v, err := s.get(ctx, id)
	if err != nil || sc.Status != ScheduleActive {
		return sc, nil, false, err
	}
	next := sc
	next.Status = SchedulePaused
	return next, []persistence.Op{s.undueOp(sc), persistence.Put(TableSchedules, s.key(id), mustJSON(next), persistence.AtVersion(v))}, true, nil
}

// Advance records that the run of slot (the schedule's NextRun) happened:
// LastRun becomes now and NextRun the first slot after both slot and now,
// so after downtime the missed slots run once, not once each. A schedule
// whose next slot is past its end date is cancelled. A slot that is not
// the current NextRun (already advanced) fails with ErrStaleSlot and
// returns the schedule as it is.
func (s *Schedules) Advance(ctx context.Context, id string, slot time.Time) (tools.Schedule, error) {
	return s.update(ctx, id, func(sc tools.Schedule) (tools.Schedule, []persistence.Op, error) {
		if sc.Status != ScheduleActive {
			return sc, nil, fmt.Errorf("%w: schedule %s is %s", ErrStaleSlot, id, sc.Status)
		}
		if !sc.NextRun.Equal(slot) {
			return sc, nil, fmt.Errorf("%w: schedule %s next runs at %s, not %s", ErrStaleSlot, id, sc.NextRun.Format(time.RFC3339Nano), slot.UTC().Format(time.RFC3339Nano))
		}
		now := s.now().UTC()
		next := sc
		next.LastRun = &now
		from := slot
		if now.After(from) {
			from = now
		}
		var err error
		if next.NextRun, err = tools.NextRun(sc.CreatedAt, from, sc.Interval); err != nil {
			return sc, nil, err
		}
		ops := []persistence.Op{s.undueOp(sc)}
		if sc.EndDate != nil && next.NextRun.After(*sc.EndDate) {
			next.Status = ScheduleCancelled
		} else {
			ops = append(ops, s.dueOp(next))
		}
		return next, ops, nil
	})
}

// update rewrites schedule id as change makes it (the schedule to store,
// and the due-index writes that go with it) in one batch that expects the
// version read, and reads again on a concurrent change. It answers the
// schedule as written or, when change refuses, as read.
func (s *Schedules) update(ctx context.Context, id string, change func(sc tools.Schedule) (tools.Schedule, []persistence.Op, error)) (tools.Schedule, error) {
	var out tools.Schedule
	err := retry(ctx, func() error {
		sc, v, err := s.get(ctx, id)
		if err != nil {
			return err
		}
		out = sc
		next, ops, err := change(sc)
		if err != nil {
			return err
		}
		ops = append(ops, persistence.Put(TableSchedules, s.key(id), mustJSON(next), persistence.AtVersion(v)))
		if _, err := s.store.Apply(ctx, ops...); err != nil {
			return err
		}
		out = next
		return nil
	})
	return out, err
}
