package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
)

// TableScheduleRuns holds the state of each schedule slot that was tried:
// "<agentID>/<scheduleID>/<slot RFC 3339 nano>" → ScheduleRun. It makes a
// slot's outcome and its notification one atomic write, and carries the
// retry count and time across restarts.
const TableScheduleRuns = "schedule_runs"

// FailAfterScheduleSend is the failpoint right after a scheduled payment
// was broadcast, before anything of it is stored.
const FailAfterScheduleSend = "schedule.after-send"

// RetryBackoff is the wait before each retry of a failed scheduled payment;
// after len(RetryBackoff) retries the slot fails (schedule_failed) and the
// schedule moves on to its next slot.
var RetryBackoff = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}

// ScheduleRun is the stored state of one slot.
type ScheduleRun struct {
	Attempts  int       `json:"attempts"`
	LastError string    `json:"lastError,omitempty"`
	RetryAt   time.Time `json:"retryAt,omitzero"`
	Outcome   string    `json:"outcome,omitempty"` // RunPaid, RunFailed, RunHeld or "" (still trying)
	TxHash    string    `json:"txHash,omitempty"`
	// ApprovalID is the approval a held run waits for (RunHeld): the
	// payment is made when the owner approves it, not by the schedule.
	ApprovalID string `json:"approvalId,omitempty"`
}

// SlotKey is the idempotency key of a schedule's slot: the chain pays it
// once whatever is retried or replayed.
func SlotKey(scheduleID string, slot time.Time) string {
	return "schedule/" + scheduleID + "/" + slot.UTC().Format(time.RFC3339Nano)
}

// schedules is the agent's schedules, every one made or resumed checked
// against the owner's spending policy first.
func (a *Actor) schedules() *state.Schedules {
	return state.NewSchedules(a.deps.Store, a.id, a.deps.now).WithCheck(a.checkSchedule)
}

func (a *Actor) listSchedules(ctx context.Context) ([]tools.Schedule, error) {
	out, err := a.schedules().List(ctx)
	if out == nil && err == nil {
		out = []tools.Schedule{}
	}
	return out, err
}

func (a *Actor) scheduleAction(ctx context.Context, m *ScheduleAction) (*tools.Schedule, error) {
	switch m.Action {
	case state.ActionPause, state.ActionResume, state.ActionCancel:
	default:
		return nil, fmt.Errorf("%w: unknown action %q: use pause, resume or cancel", ErrScheduleTransition, m.Action)
	}
	if _, err := a.schedules().Get(ctx, m.ScheduleID); err != nil {
		if errors.Is(err, state.ErrNotFound) {
			return nil, ErrScheduleNotFound
		}
		return nil, err
	}
	sc, err := a.schedules().Transition(ctx, m.ScheduleID, m.Action)
	switch {
	case errors.Is(err, state.ErrInvalidTransition):
		return nil, fmt.Errorf("%w: %s", ErrScheduleTransition, strings.TrimPrefix(err.Error(), state.ErrInvalidTransition.Error()+": "))
	case errors.Is(err, state.ErrNotFound), errors.Is(err, state.ErrInvalid):
		return nil, ErrScheduleNotFound
	case err != nil:
		return nil, err
	}
	return &sc, nil
}

func (a *Actor) runKey(id string, slot time.Time) string {
	return a.id + "/" + id + "/" + slot.UTC().Format(time.RFC3339Nano)
}

// runSchedule pays one due slot of a schedule, exactly once:
//
//  1. A stale wake-up (the slot already advanced, the schedule paused or
//     cancelled, or not due yet) does nothing.
//  2. A slot whose outcome is stored (the node stopped before advancing)
//     only advances.
//  3. A slot waiting for its retry time answers when to come back.
//  4. Otherwise it pays with the slot's idempotency key (SlotKey): a
//     payment broadcast before a crash is found by the chain's ledger and
//     not sent again. Success stores the outcome and schedule_executed in
//     one write, then advances. A failure is retried after RetryBackoff;
//     when retries are exhausted (or the failure cannot heal: a bad
//     recipient or amount) it stores the outcome and schedule_failed in
//     one write and advances past the slot.
func (a *Actor) runSchedule(ctx context.Context, m *RunSchedule) (*RunReport, error) {
	scheds := a.schedules()
	sc, err := scheds.Get(ctx, m.ScheduleID)
	if errors.Is(err, state.ErrNotFound) {
		return &RunReport{Outcome: RunSkipped}, nil
	}
	if err != nil {
		return nil, err
	}
	now := a.deps.now()
	if sc.Status != state.ScheduleActive || !sc.NextRun.Equal(m.Slot) || m.Slot.After(now) {
		return &RunReport{Outcome: RunSkipped}, nil
	}
	key := a.runKey(sc.ID, m.Slot)
	var run ScheduleRun
	var version uint64
	if rec, err := a.deps.Store.Get(ctx, TableScheduleRuns, key); err == nil {
		if err := json.Unmarshal(rec.Value, &run); err != nil {
			return nil, fmt.Errorf("agent %s: decode schedule run %s: %w", a.id, key, err)
		}
		version = rec.Version
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return nil, err
	}
	if run.Outcome != "" {
		return a.advanceSlot(ctx, sc, m.Slot, run)
	}
	if run.RetryAt.After(now) {
		return &RunReport{Outcome: RunRetry, RetryAt: run.RetryAt, Err: run.LastError}, nil
	}

	// The owner's policy first (cap, allowlist: a policy set since the
	// schedule was made); the daily budget is checked when the payment is
	// signed. A refusal fails the slot without paying (not retried).
	var res chains.TxResult
	payErr := a.checkSchedule(ctx, sc)
	if payErr == nil {
		res, payErr = a.paySchedule(ctx, sc, m.Slot)
	}
	var held *tools.HeldError
	if errors.As(payErr, &held) {
		// Held for the owner (approval_required was notified): the slot
		// is done for the schedule; the approval pays it, or not.
		run.Attempts++
		run.Outcome, run.ApprovalID, run.LastError, run.RetryAt = RunHeld, held.ApprovalID, "", time.Time{}
		if err := a.storeRun(ctx, sc.ID, key, version, run, nil); err != nil {
			return nil, err
		}
		return a.advanceSlot(ctx, sc, m.Slot, run)
	}
	if payErr == nil {
		if err := a.deps.fail(FailAfterScheduleSend); err != nil {
			return nil, err
		}
	}
	run.Attempts++
	if payErr == nil {
		run.Outcome, run.TxHash, run.LastError, run.RetryAt = RunPaid, res.TxHash, "", time.Time{}
		next, _ := tools.NextRun(sc.CreatedAt, later(m.Slot, now), sc.Interval)
		body := fmt.Sprintf("Paid %s %s to %s on %s (tx %s), the %s payment due %s.", sc.Amount, sc.Asset, recipientLabel(sc.Recipient), sc.Chain,
			res.TxHash, sc.Interval, m.Slot.UTC().Format(time.RFC3339))
		if sc.EndDate == nil || !next.After(*sc.EndDate) {
			body += " Next payment: " + next.UTC().Format(time.RFC3339) + "."
		} else {
			body += " It was the last one: the schedule has reached its end date."
		}
		if err := a.storeRun(ctx, sc.ID, key, version, run, &Notify{Type: NoteScheduleExecuted,
			Title: fmt.Sprintf("Scheduled payment sent: %s %s to %s", sc.Amount, sc.Asset, recipientLabel(sc.Recipient)), Body: body}); err != nil {
			return nil, err
		}
		return a.advanceSlot(ctx, sc, m.Slot, run)
	}
	if ctx.Err() != nil {
		// The caller gave up (shutdown): not the payment's failure.
		return nil, ctx.Err()
	}
	run.LastError = payErr.Error()
	if run.Attempts <= len(RetryBackoff) && retryable(payErr) {
		run.RetryAt = now.Add(RetryBackoff[run.Attempts-1])
		if err := a.storeRun(ctx, sc.ID, key, version, run, nil); err != nil {
			return nil, err
		}
		return &RunReport{Outcome: RunRetry, RetryAt: run.RetryAt, Err: run.LastError}, nil
	}
	run.Outcome, run.RetryAt = RunFailed, time.Time{}
	if err := a.storeRun(ctx, sc.ID, key, version, run, &Notify{Type: NoteScheduleFailed,
		Title: fmt.Sprintf("Scheduled payment failed: %s %s to %s", sc.Amount, sc.Asset, recipientLabel(sc.Recipient)),
		Body: fmt.Sprintf("The %s payment of %s %s to %s on %s due %s failed after %d attempt(s): %s. This payment is skipped; the schedule continues with its next one.",
			sc.Interval, sc.Amount, sc.Asset, recipientLabel(sc.Recipient), sc.Chain, m.Slot.UTC().Format(time.RFC3339), run.Attempts, payErr)}); err != nil {
		return nil, err
	}
	return a.advanceSlot(ctx, sc, m.Slot, run)
}

func later(x, y time.Time) time.Time {
	if y.After(x) {
		return y
	}
	return x
}

func recipientLabel(r string) string {
	if strings.HasPrefix(strings.ToLower(r), "st:") {
		if len(r) > 20 {
			return r[:14] + "…" + r[len(r)-4:]
		}
		return r
	}
	return r + chains.NameSuffix
}

// storeRun writes the slot's state, with its notification in the same
// batch when there is one, and then a system message recording it in the
// conversation that created the schedule.
func (a *Actor) storeRun(ctx context.Context, scheduleID, key string, version uint64, run ScheduleRun, n *Notify) error {
	raw, err := json.Marshal(run)
	if err != nil {
		return err
	}
	expect := persistence.Absent()
	if version > 0 {
		expect = persistence.AtVersion(version)
	}
	op := persistence.Put(TableScheduleRuns, key, raw, expect)
	if n == nil {
		_, err = a.deps.Store.Apply(ctx, op)
		return err
	}
	ops := []persistence.Op{op}
	// A slot that paid or failed for good: its audit record, in the
	// same batch as the outcome.
	outcome := audit.OutcomeOK
	if n.Type == NoteScheduleFailed {
		outcome = audit.OutcomeFailed
	}
	if aop, ok := a.moneyAudit(ctx, audit.ActionScheduleRun, audit.SourceSchedule, outcome, n.Body, scheduleID, run.TxHash); ok {
		ops = append(ops, aop)
	}
	return a.outcome(ctx, n, a.scheduleOrigin(ctx, scheduleID), n.Body, ops...)
}

func (a *Actor) advanceSlot(ctx context.Context, sc tools.Schedule, slot time.Time, run ScheduleRun) (*RunReport, error) {
	next, err := a.schedules().Advance(ctx, sc.ID, slot)
	if errors.Is(err, state.ErrStaleSlot) {
		err = nil // advanced meanwhile (or paused): the outcome stands
	}
	if err != nil {
		return nil, err
	}
	return &RunReport{Outcome: run.Outcome, TxHash: run.TxHash, Next: &next, Err: run.LastError}, nil
}

// paySchedule sends the slot's payment with its idempotency key.
func (a *Actor) paySchedule(ctx context.Context, sc tools.Schedule, slot time.Time) (chains.TxResult, error) {
	meta, err := a.scheduleMeta(ctx, sc)
	if err != nil {
		return chains.TxResult{}, err
	}
	// A chain this node does not serve fails the slot before anything is
	// held for approval.
	if _, err := a.deps.Chains.Chain(sc.Chain); err != nil {
		return chains.TxResult{}, err
	}
	// The slot's payment, read once from the schedule (tools.StoredPayment).
	pr, err := tools.StoredPayment(tools.PaymentSource{Type: tools.SourceSchedule, ID: sc.ID}, sc.Chain, sc.Asset, sc.Amount,
		tools.PaymentRecipient{Name: recipientLabel(sc.Recipient), Address: meta}, SlotKey(sc.ID, slot))
	if err == nil {
		pr, err = a.bound(pr)
	}
	if err != nil {
		return chains.TxResult{}, err
	}
	// Scheduled runs are held for approval like any payment.
	if err := a.hold(ctx, policy.Hold{AgentID: a.id, Kind: policy.KindSchedule, Chain: pr.Chain(), Asset: pr.Asset().Symbol, Amount: pr.Amount(),
		Recipient: pr.Recipient().Name, PayTo: meta, Key: pr.IdempotencyKey(), ScheduleID: sc.ID, Slot: slot,
		ConversationID: a.scheduleOrigin(ctx, sc.ID)}); err != nil {
		return chains.TxResult{}, err
	}
	// The connector signs it as a spend; the enclave checks the policy
	// (approvals, caps, allowlist, daily budget) before it signs.
	return a.sendStealth(ctx, pr)
}

// scheduleMeta resolves the schedule's recipient on its chain now: a
// meta-address as is, a name through Veil's directory, then the chain's
// name registry.
func (a *Actor) scheduleMeta(ctx context.Context, sc tools.Schedule) (string, error) {
	r := strings.TrimSpace(sc.Recipient)
	if strings.HasPrefix(strings.ToLower(r), "st:") {
		return r, nil
	}
	name := strings.TrimSuffix(strings.ToLower(r), chains.NameSuffix)
	ag, err := Directory{Store: a.deps.Store}.LookupAgent(ctx, name)
	if err == nil {
		if m := ag.MetaAddresses[sc.Chain]; m != "" {
			return m, nil
		}
		return "", fmt.Errorf("%w: %s%s has no meta-address on %s", tools.ErrUnknownRecipient, name, chains.NameSuffix, sc.Chain)
	}
	if !errors.Is(err, tools.ErrUnknownRecipient) {
		return "", err
	}
	conn, cerr := a.deps.Chains.Chain(sc.Chain)
	if cerr != nil {
		return "", cerr
	}
	m, err := conn.ResolveName(ctx, name)
	if errors.Is(err, chains.ErrNotFound) {
		return "", fmt.Errorf("%w: no agent is named %s%s on Veil or on %s", tools.ErrUnknownRecipient, name, chains.NameSuffix, sc.Chain)
	}
	return m, err
}

// retryable: failures that may heal (funds arrive, the chain comes back,
// an unexpected error); a bad recipient, amount or asset does not, nor a
// refusal of the owner's policy (a retry the same day would be refused
// again, or worse, pass a budget meant for the day it was due).
func retryable(err error) bool {
	for _, permanent := range []error{tools.ErrUnknownRecipient, tools.ErrInvoiceNotPayable, chains.ErrInvalidAddress, chains.ErrInvalidAmount,
		chains.ErrUnknownAsset, chains.ErrIdempotencyConflict, enclave.ErrPolicy, enclave.ErrUnauthorized} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	return true
}
