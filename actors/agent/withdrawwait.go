package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// A withdrawal that waited on a transfer signed before it (its gas
// funding, or the relayer's fee in a transaction of its own) is sent by
// the agent itself once that transfer confirms (docs/payments.md, "Gas
// funding"): the settlement that confirms it marks the withdrawal due
// (TableWithdrawDue, in the write that says so on its record), and
// actors/reminder wakes the agent for each due withdrawal
// (WakeWithdrawal) until it is sent or ends. The send is the retry under
// the withdrawal's key — the same request, rebuilt from the records
// (tools.StoredWithdrawal), through the same chainOps.Withdraw, the
// owner's policy checked by the enclave again — so a concurrent retry of
// the user, or a wake-up after a crash, answers the same transaction: the
// connector makes one per key.

// TableWithdrawDue: <agentID>/<paymentID> → nothing, present from the
// write that says a waiting withdrawal's prerequisite is confirmed until
// the write that tells what its send did (or that it no longer waits). It
// is the durable "pending withdrawal whose prerequisite is confirmed":
// the reminder reads it on every pass, after a restart too.
const TableWithdrawDue = "withdraw_due"

// WithdrawDueKey is the TableWithdrawDue key of agentID's withdrawal
// paymentID.
func WithdrawDueKey(agentID, paymentID string) string { return agentID + "/" + paymentID }

// ParseWithdrawDueKey splits a TableWithdrawDue key.
func ParseWithdrawDueKey(key string) (agentID, paymentID string, ok bool) {
	agentID, paymentID, ok = strings.Cut(key, "/")
	return agentID, paymentID, ok && agentID != "" && paymentID != ""
}

// WakeWithdrawal is the reminder's wake-up for a due withdrawal
// (TableWithdrawDue): the agent sends it under its key when it still
// waits and its prerequisites are confirmed, and tells the user. An error
// (the chain down) leaves it due, for the reminder's next try.
type WakeWithdrawal struct {
	answers[None]
	PaymentID string
}

// Failpoints of the automatic send (tests: a crash on either side of it).
const (
	// FailBeforeWaitingSend: the withdrawal is due, nothing sent yet.
	FailBeforeWaitingSend = "withdraw.before-send"
	// FailAfterWaitingSend: the withdrawal was sent, nothing told yet and
	// it is still due.
	FailAfterWaitingSend = "withdraw.after-send"
)

// waitingToSend reports whether w is a withdrawal that waits on a
// prerequisite with nothing of its own signed: pending, no transaction,
// its reason one of waitReasons' waiting or arrived.
func waitingToSend(w tools.OutgoingPayment) bool {
	return w.Kind == tools.KindWithdraw && w.Status == tools.PaymentPending && w.TxHash == "" && doneReason(w.Reason) != ""
}

// prerequisitesReady reports whether every transfer withdrawal w waits on
// (its gas funding, the relayer's fee in a transaction of its own) is
// confirmed, and there is one. A fee in the withdrawal's own transaction
// is not one: it is signed with the withdrawal.
func (a *Actor) prerequisitesReady(ctx context.Context, w tools.OutgoingPayment) (bool, error) {
	out := a.outgoing()
	found := false
	for _, key := range []string{chains.GasKey(w.IdempotencyKey), chains.RelayerFeeKey(w.IdempotencyKey)} {
		p, err := out.ByKey(ctx, w.Chain, key)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		if p.ForPayment != w.ID || p.SameTx || waitOf(p.Kind) == nil {
			continue
		}
		if p.Status != tools.PaymentConfirmed {
			return false, nil
		}
		found = true
	}
	return found, nil
}

// withdrawalDue records that the waiting withdrawal w may be sent now, its
// prerequisite confirmed: its reason (wr.arrived) and its TableWithdrawDue
// entry in one write, so the send comes whatever happens to this process.
func (a *Actor) withdrawalDue(ctx context.Context, w tools.OutgoingPayment, wr waitReasons) error {
	out := a.outgoing()
	for try := 0; ; try++ {
		_, ops, err := out.Transition(ctx, w.ID, tools.PaymentUpdate{Reason: wr.arrived})
		if err != nil {
			return err
		}
		ops = append(ops, persistence.Put(TableWithdrawDue, WithdrawDueKey(a.id, w.ID), nil, persistence.Any()))
		_, err = a.deps.Store.Apply(ctx, ops...)
		if errors.Is(err, persistence.ErrConflict) && try < 3 {
			continue // the record moved meanwhile: read it again
		}
		return err
	}
}

// wakeWithdrawal sends the due withdrawal id (WakeWithdrawal) and tells
// what became of it, once: the tell commits with the removal of its due
// entry, guarded by that entry's version. A withdrawal found moved already
// (sent by this path before a crash cut it short, and not by a retry of
// the user, which removes the entry itself) is told as sent when it is
// broadcast; otherwise its own settlement tells.
func (a *Actor) wakeWithdrawal(ctx context.Context, id string) error {
	dk := WithdrawDueKey(a.id, id)
	due, err := a.deps.Store.Get(ctx, TableWithdrawDue, dk)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	done := persistence.Delete(TableWithdrawDue, dk, persistence.AtVersion(due.Version))
	w, err := a.outgoing().Get(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return a.undue(ctx, done)
	}
	if err != nil {
		return err
	}
	before := w
	if waitingToSend(w) {
		ready, err := a.prerequisitesReady(ctx, w)
		if err != nil {
			return err
		}
		if !ready {
			// Not yet (a prerequisite still open marks it due again when it
			// confirms) or never (a failed one failed it).
			return a.undue(ctx, done)
		}
		if err := a.deps.fail(FailBeforeWaitingSend); err != nil {
			return err
		}
		if w, err = a.sendWaiting(ctx, w); err != nil {
			return err
		}
		if err := a.deps.fail(FailAfterWaitingSend); err != nil {
			return err
		}
	} else if w.Status != tools.PaymentBroadcast {
		return a.undue(ctx, done)
	} else {
		before.Status, before.TxHash = tools.PaymentPending, ""
	}
	err = a.tellSettled(ctx, before, w, []persistence.Op{done})
	if errors.Is(err, persistence.ErrConflict) {
		return nil // told by another wake-up
	}
	return err
}

// undue removes a due entry (done) with nothing to tell.
func (a *Actor) undue(ctx context.Context, done persistence.Op) error {
	_, err := a.deps.Store.Apply(ctx, done)
	if errors.Is(err, persistence.ErrConflict) {
		return nil
	}
	return err
}

// sendWaiting sends the waiting withdrawal w as the retry under its key
// would, and answers its record after: broadcast (sent), refused (the
// policy or the chain refused it, nothing signed, the reason on it), or
// still pending (its outcome unknown; its own settlement moves it). An
// error leaves w as it was, due for the next wake-up (the chain down).
func (a *Actor) sendWaiting(ctx context.Context, w tools.OutgoingPayment) (tools.OutgoingPayment, error) {
	out := a.outgoing()
	// A chain down now is not a refusal of the withdrawal: it is tried
	// again when the reminder comes back.
	if _, err := a.deps.Chains.Chain(w.Chain); err != nil {
		return w, err
	}
	payments := state.NewPayments(a.deps.Store, a.id, a.deps.now)
	p, err := payments.Get(ctx, w.Chain, w.From)
	if err == nil && p.Withdrawn {
		err = fmt.Errorf("the payment at %s on %s was already withdrawn", w.From, w.Chain)
	}
	var pr tools.PaymentRequest
	if err == nil {
		pr, err = tools.StoredWithdrawal(w.Source, p.Payment, w.Amount.String(), w.All, w.Recipient, w.IdempotencyKey)
	}
	if err == nil {
		// Bound to the connector's own asset where it runs, once.
		if pr, err = a.bound(pr); errors.Is(err, chains.ErrUnavailable) {
			return w, err // not a refusal: tried again when the reminder comes back
		}
	}
	if err != nil {
		// Nothing can be sent from what was kept: it ends here, nothing
		// signed, and the user is told why.
		next, _, aerr := out.Advance(ctx, w.ID, tools.PaymentUpdate{Status: tools.PaymentRefused, Reason: "could not be sent: " + err.Error()})
		return next, aerr
	}
	convID := ""
	if w.Source.Type == tools.SourceConversation {
		convID = w.Source.ID
	}
	ops := a.toolEnv(ctx, convID).Chains.(*chainOps)
	ops.sendingDue = true
	res, sendErr := ops.Withdraw(ctx, pr)
	next, err := out.Get(ctx, w.ID)
	if err != nil {
		return w, err
	}
	if sendErr == nil {
		marked := ""
		if !w.All {
			marked = w.Amount.String()
		}
		if err := payments.MarkWithdrawn(ctx, tools.Withdrawal{Chain: w.Chain, StealthAddress: w.From, To: w.Recipient.Address, Amount: marked, TxHash: res.TxHash}); err != nil {
			a.log(ctx).Error("record a withdrawal sent once its prerequisite confirmed", slog.String("payment", w.ID), slog.String("err", err.Error()))
		}
	}
	if sendErr != nil && waitingToSend(next) && !isPending(sendErr) {
		// Stopped before its record moved (the connector unreachable):
		// still due.
		return w, sendErr
	}
	a.log(ctx).Info("withdrawal sent once its prerequisite confirmed", slog.String("payment", w.ID), slog.String("status", string(next.Status)))
	return next, nil
}

// forgetDue removes the due entry of the withdrawal recorded under key on
// c once a retry of the user sent it (chainOps.Withdraw): the reminder's
// wake-up must not tell it a second time.
func (a *Actor) forgetDue(ctx context.Context, c chains.ID, key string) {
	w, err := a.outgoing().ByKey(ctx, c, key)
	if err != nil || !waited(w.Reason) {
		return // it did not wait: no entry
	}
	if _, err := a.deps.Store.Apply(ctx, persistence.Delete(TableWithdrawDue, WithdrawDueKey(a.id, w.ID), persistence.Any())); err != nil {
		a.log(ctx).Warn("forget a due withdrawal sent by a retry", slog.String("payment", w.ID), slog.String("err", err.Error()))
	}
}
