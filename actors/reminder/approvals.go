package reminder

import (
	"context"
	"errors"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/persistence"
)

// wakeApprovals wakes the agents of every approval whose due time came
// (agent/policy's approval_due index): a pending approval expires with its
// notification, and an approved payment whose run was interrupted (a
// crash, a chain that was down) runs again with its idempotency key
// (docs/approvals.md).
func (r *Reminder) wakeApprovals(ctx context.Context, now time.Time, rep *Report) error {
	after := ""
	for {
		recs, err := r.opts.Store.List(ctx, policy.TableApprovalDue, persistence.Query{After: after, Limit: r.opts.Page})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			at, agentID, id, ok := policy.ParseDueKey(rec.Key)
			if !ok {
				r.opts.Log.Error("reminder: corrupt approval_due key", "key", rec.Key)
				continue
			}
			if at.After(now) {
				return nil
			}
			if r.waiting(rec.Key, now) {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, r.opts.RunTimeout)
			_, err := r.opts.Agents.Request(rctx, agentID, &agent.WakeApproval{ApprovalID: id})
			cancel()
			switch {
			case errors.Is(err, agent.ErrNotFound):
				// The agent is gone: nothing will ever decide it.
				_, _ = r.opts.Store.Apply(ctx, persistence.Delete(policy.TableApprovalDue, rec.Key, persistence.Any()))
			case err != nil:
				rep.Errors++
				if ctx.Err() == nil {
					r.opts.Log.Warn("reminder: approval wake-up failed", "agent", agentID, "approval", id, "error", err)
					r.setWait(rec.Key, now.Add(r.opts.ErrorBackoff))
				}
			default:
				rep.Approvals++
			}
		}
		if len(recs) < r.opts.Page {
			return nil
		}
		after = recs[len(recs)-1].Key
	}
}
