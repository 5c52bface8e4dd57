// Package reminder is the durable next-run index's service: it wakes the
// agents whose schedules fall due, whether their actors are active,
// passivated, or were lost with a node that restarted. The index is
// agent/state's schedule_due table (one entry per active schedule, written
// atomically with the schedule); the reminder keeps no state of its own that
// matters: after a restart it reads the index and every slot that fell due
// meanwhile runs once (the agent advances a schedule to its first slot after
// now, so three missed days are one payment, not three).
//
// It also wakes the agents of approvals that fell due (approvals.go) and
// of withdrawals due to be sent once their gas funding or relayer fee
// confirmed (withdrawals.go); each index is durable, so a restart loses
// none.
//
// The reminder only says "slot S of schedule X is due" (agent.RunSchedule);
// the agent actor pays it with the slot's idempotency key, stores the
// outcome with its notification, retries failures with backoff and advances
// the schedule. See docs/schedules.md.
package reminder

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/background"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/internal/defaults"
	"github.com/veilhq/veil/persistence"
)

// Agents delivers messages to agent actors (host.Host).
type Agents interface {
	Request(ctx context.Context, id string, msg any) (any, error)
}

// Options configure a Reminder. Store and Agents are required.
type Options struct {
	Store  persistence.Store
	Agents Agents
	// Now is the clock (default time.Now); tests inject a fake one and
	// call RunDue themselves.
	Now func() time.Time
	// Poll is the background loop's period (default 1s): a schedule runs
	// at most this late.
	Poll time.Duration
	// Parallel bounds the agents woken at once (default 512): more agents
	// share each group commit of the store.
	Parallel int
	// Page is how many due entries are read at a time (default 4096).
	Page int
	// RunTimeout bounds one RunSchedule (default 2m).
	RunTimeout time.Duration
	// ErrorBackoff is how long a slot whose agent did not answer (an
	// error, not a payment failure) waits before it is tried again
	// (default 10s).
	ErrorBackoff time.Duration
	Log          *slog.Logger
}

// Reminder wakes agents for their due schedule slots.
type Reminder struct {
	opts Options

	pass sync.Mutex
	mu   sync.Mutex
	wait map[string]time.Time // due key → not before (retries, errors)

	loop *background.Loop // runs RunDue every Poll (Start, Stop)
}

// New builds a reminder; Start runs it in the background.
func New(opts Options) *Reminder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Poll = defaults.Positive(opts.Poll, time.Second)
	opts.Parallel = defaults.Positive(opts.Parallel, 512)
	opts.Page = defaults.Positive(opts.Page, 4096)
	opts.RunTimeout = defaults.Positive(opts.RunTimeout, 2*time.Minute)
	opts.ErrorBackoff = defaults.Positive(opts.ErrorBackoff, 10*time.Second)
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	return &Reminder{opts: opts, wait: map[string]time.Time{}, loop: background.New()}
}

// Report counts what one RunDue did.
type Report struct {
	Due     int // due entries read
	Waiting int // skipped: waiting for their retry time
	Paid    int
	Retry   int
	Failed  int
	Skipped int
	Errors  int
	// Held: runs held for the owner's approval; Approvals: approvals woken
	// (expired, or an approved payment run again).
	Held      int
	Approvals int
	// Withdrawals: due withdrawals woken (sent once their gas funding or
	// relayer fee confirmed).
	Withdrawals int
}

// Runs is the number of slots that reached an outcome (paid or failed).
func (r Report) Runs() int { return r.Paid + r.Failed }

// Start runs RunDue every Poll until Stop.
func (r *Reminder) Start() {
	r.loop.Every(r.opts.Poll, func(ctx context.Context) {
		if rep, err := r.RunDue(ctx); err != nil && ctx.Err() == nil {
			r.opts.Log.Warn("reminder: pass failed", "err", err)
		} else if rep.Errors > 0 {
			r.opts.Log.Warn("reminder: some agents did not answer; they are tried again", "errors", rep.Errors)
		}
	})
}

// Stop ends the background loop; a running pass is cancelled (its slots
// run again on the next start: the agent's run state makes that safe).
func (r *Reminder) Stop() {
	r.loop.Stop()
}

type due struct {
	key     string
	agentID string
	id      string
	slot    time.Time
}

// RunDue wakes the agents of every slot due at Now, in index order, a
// page at a time: one agent's slots run one after another, Parallel agents
// at once.
func (r *Reminder) RunDue(ctx context.Context) (Report, error) {
	r.pass.Lock()
	defer r.pass.Unlock()
	var rep Report
	now := r.opts.Now().UTC()
	end, _, _ := strings.Cut(state.DueKey(now, "a", "s"), "/")
	after := ""
	for {
		recs, err := r.opts.Store.List(ctx, state.TableScheduleDue, persistence.Query{After: after, Limit: r.opts.Page})
		if err != nil {
			return rep, err
		}
		var page []due
		last := false
		for _, rec := range recs {
			ts, rest, _ := strings.Cut(rec.Key, "/")
			if ts > end {
				last = true
				break
			}
			agentID, id, ok := strings.Cut(rest, "/")
			slot, err := time.Parse(time.RFC3339Nano, ts)
			if !ok || err != nil {
				r.opts.Log.Error("reminder: corrupt schedule_due key", "key", rec.Key)
				continue
			}
			rep.Due++
			if r.waiting(rec.Key, now) {
				rep.Waiting++
				continue
			}
			page = append(page, due{key: rec.Key, agentID: agentID, id: id, slot: slot})
		}
		r.run(ctx, page, now, &rep)
		if last || len(recs) < r.opts.Page {
			if err := r.wakeApprovals(ctx, now, &rep); err != nil {
				return rep, err
			}
			if err := r.wakeWithdrawals(ctx, now, &rep); err != nil {
				return rep, err
			}
			r.prune(now)
			return rep, ctx.Err()
		}
		after = recs[len(recs)-1].Key
	}
}

func (r *Reminder) waiting(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.wait[key]
	if ok && !now.Before(t) {
		delete(r.wait, key)
		return false
	}
	return ok
}

// prune forgets waits that ended without their slot being due any more
// (the schedule was paused, cancelled or advanced meanwhile).
func (r *Reminder) prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, t := range r.wait {
		if !now.Before(t) {
			delete(r.wait, k)
		}
	}
}

func (r *Reminder) setWait(key string, t time.Time) {
	r.mu.Lock()
	r.wait[key] = t
	r.mu.Unlock()
}

// run wakes the agents of one page.
func (r *Reminder) run(ctx context.Context, page []due, now time.Time, rep *Report) {
	byAgent := map[string][]due{}
	var order []string
	for _, d := range page {
		if _, ok := byAgent[d.agentID]; !ok {
			order = append(order, d.agentID)
		}
		byAgent[d.agentID] = append(byAgent[d.agentID], d)
	}
	var mu sync.Mutex
	sem := make(chan struct{}, r.opts.Parallel)
	var wg sync.WaitGroup
	for _, id := range order {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(ds []due) {
			defer wg.Done()
			defer func() { <-sem }()
			for _, d := range ds {
				rctx, cancel := context.WithTimeout(ctx, r.opts.RunTimeout)
				v, err := r.opts.Agents.Request(rctx, d.agentID, &agent.RunSchedule{ScheduleID: d.id, Slot: d.slot})
				cancel()
				mu.Lock()
				switch res, _ := v.(*agent.RunReport); {
				case errors.Is(err, agent.ErrNotFound):
					rep.Skipped++ // the agent is gone
				case err != nil:
					rep.Errors++
					if ctx.Err() == nil {
						r.opts.Log.Warn("reminder: schedule run failed", "agent", d.agentID, "schedule", d.id, "slot", d.slot, "err", err)
						r.setWait(d.key, now.Add(r.opts.ErrorBackoff))
					}
				case res == nil:
					rep.Errors++
				case res.Outcome == agent.RunPaid:
					rep.Paid++
				case res.Outcome == agent.RunFailed:
					rep.Failed++
				case res.Outcome == agent.RunHeld:
					rep.Held++
				case res.Outcome == agent.RunRetry:
					rep.Retry++
					r.setWait(d.key, res.RetryAt)
				default:
					rep.Skipped++
				}
				mu.Unlock()
			}
		}(byAgent[id])
	}
	wg.Wait()
}
