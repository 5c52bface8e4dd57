package reminder

import (
	"context"
	"errors"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/persistence"
)

// wakeWithdrawals wakes the agent of every due withdrawal (actors/agent's
// withdraw_due index): a withdrawal that waited on its gas funding or the
// relayer's fee, whose prerequisite is confirmed, is sent under its key
// by its agent, which then removes the entry (docs/payments.md, "Gas
// funding"). An entry left by a crash, before or after the send, wakes
// the agent again on the next pass, after a restart too.
func (r *Reminder) wakeWithdrawals(ctx context.Context, now time.Time, rep *Report) error {
	after := ""
	for {
		recs, err := r.opts.Store.List(ctx, agent.TableWithdrawDue, persistence.Query{After: after, Limit: r.opts.Page})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			agentID, id, ok := agent.ParseWithdrawDueKey(rec.Key)
			if !ok {
				r.opts.Log.Error("reminder: corrupt withdraw_due key", "key", rec.Key)
				continue
			}
			if r.waiting(rec.Key, now) {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, r.opts.RunTimeout)
			_, err := r.opts.Agents.Request(rctx, agentID, &agent.WakeWithdrawal{PaymentID: id})
			cancel()
			switch {
			case errors.Is(err, agent.ErrNotFound):
				// The agent is gone, and its records with it.
				_, _ = r.opts.Store.Apply(ctx, persistence.Delete(agent.TableWithdrawDue, rec.Key, persistence.Any()))
			case err != nil:
				rep.Errors++
				if ctx.Err() == nil {
					r.opts.Log.Warn("reminder: withdrawal wake-up failed", "agent", agentID, "payment", id, "err", err)
					r.setWait(rec.Key, now.Add(r.opts.ErrorBackoff))
				}
			default:
				rep.Withdrawals++
			}
		}
		if len(recs) < r.opts.Page {
			return nil
		}
		after = recs[len(recs)-1].Key
	}
}
