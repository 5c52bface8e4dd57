package agent

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// A schedule is one payment repeated: the owner's per-payment rules (the
// cap per payment, the allowlist; agent/policy.Policy.Check) hold for it
// when it is made (schedule_payment), resumed (manage_schedule, POST
// …/resume) and run; the daily budget is checked when a run is signed
// (the enclave's Authorize), and a new policy pauses the schedules that
// break it (recheckSchedules).

// checkSchedule applies the agent's current policy to one payment of sc;
// nil when the agent has no policy. A refusal matches enclave.ErrPolicy.
func (a *Actor) checkSchedule(ctx context.Context, sc tools.Schedule) error {
	p, ok, err := a.policies().Get(ctx, a.id)
	if err != nil || !ok {
		return err
	}
	return a.checkScheduleAgainst(ctx, p, sc)
}

func (a *Actor) checkScheduleAgainst(ctx context.Context, p policy.Policy, sc tools.Schedule) error {
	amount, ok := new(big.Rat).SetString(sc.Amount)
	if !ok || amount.Sign() <= 0 {
		return fmt.Errorf("%w: schedule %s has amount %q", chains.ErrInvalidAmount, sc.ID, sc.Amount)
	}
	pay := policy.Payment{Asset: sc.Asset, Amount: amount, Recipient: sc.Recipient}
	if len(p.Allowlist) > 0 {
		// A name passes when its meta-address is on the allowlist too;
		// when it cannot be resolved now, the name alone is checked.
		if meta, err := a.scheduleMeta(ctx, sc); err == nil {
			pay.ResolvedTo = meta
		}
	}
	if err := p.Check(pay); err != nil {
		return fmt.Errorf("the schedule of %s %s to %s: %w", sc.Amount, sc.Asset, recipientLabel(sc.Recipient), err)
	}
	return nil
}

// recheckSchedules pauses every active schedule that breaks p (a policy
// just set), each in one write with a schedule_failed notification that
// says which rule. It answers how many it paused. A schedule it cannot
// check stays active: its runs are still checked (and refused) one by one.
func (a *Actor) recheckSchedules(ctx context.Context, p policy.Policy) int {
	list, err := a.schedules().List(ctx)
	if err != nil {
		a.deps.Log.Error("re-check schedules under the new policy", "agent", a.id, "err", err)
		return 0
	}
	paused := 0
	for _, sc := range list {
		if sc.Status != "active" {
			continue
		}
		why := a.checkScheduleAgainst(ctx, p, sc)
		if !errors.Is(why, enclave.ErrPolicy) {
			continue
		}
		if err := a.pauseForPolicy(ctx, sc.ID, why); err != nil {
			a.deps.Log.Error("pause a schedule the new policy refuses", "agent", a.id, "schedule", sc.ID, "err", err)
			continue
		}
		paused++
	}
	return paused
}

// pauseForPolicy pauses schedule id and tells the owner why, in one write.
func (a *Actor) pauseForPolicy(ctx context.Context, id string, why error) error {
	for range 10 {
		sc, ops, ok, err := a.schedules().PauseOps(ctx, id)
		if err != nil || !ok {
			return err
		}
		_, err = a.notify(ctx, &Notify{Type: NoteScheduleFailed,
			Title: fmt.Sprintf("Scheduled payment paused: %s %s to %s breaks the new spending policy", sc.Amount, sc.Asset, recipientLabel(sc.Recipient)),
			Body: fmt.Sprintf("The %s payment of %s %s to %s on %s (schedule %s) was paused because the owner's new spending policy refuses it: %v. "+
				"No payment of it runs while it is paused; it can be resumed once the policy allows it, or cancelled.",
				sc.Interval, sc.Amount, sc.Asset, recipientLabel(sc.Recipient), sc.Chain, sc.ID, why)}, ops...)
		if !errors.Is(err, persistence.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("schedule %s kept changing while being paused", id)
}
