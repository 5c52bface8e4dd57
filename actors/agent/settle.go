package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/persistence"
)

// PaymentSettled is a connector's settlement of a transaction this agent
// signed (chains.Settlement, relayed by veild): its payment record moves
// forward, and the user is told once. In-process only (no account).
// Answers nothing; an error keeps the settlement in the connector's
// outbox for its next pass.
type PaymentSettled struct {
	answers[None]
	Settlement chains.Settlement
}

// settled applies a settlement to the payment record sent under its key
// (docs/payments.md, "Settlement"). A key with no record (a name
// registration, a token approval, a payment from before the records)
// changes nothing; the gas the agent's account sends ahead of a
// withdrawal has its own record (gas_funding, gasRecord). The record's move and what
// the user is told commit in one write guarded by the record's version, so
// a settlement delivered twice (a crash before the connector dropped it,
// two cluster members) tells once:
//   - confirmed, after the call said the payment was sent (broadcast):
//     nothing more to say, the record only moves;
//   - confirmed, after the call could only say "on its way" (pending):
//     payment_sent, and a system message in the conversation that asked;
//   - failed: payment_failed (the payment did not go through, with the
//     reason) and the system message;
//   - a note (chains.SettlementPending): no settlement, only the reason an
//     open record shows while it waits (noted), told to nobody.
//
// And whenever an open payment settles, its payment event
// (payment.confirmed / payment.failed) in the same write (settleEvent).
func (a *Actor) settled(ctx context.Context, s chains.Settlement) error {
	if s.Status == chains.SettlementPending {
		return a.noted(ctx, s)
	}
	out := a.outgoing()
	rec, err := out.ByKey(ctx, s.Chain, s.IdempotencyKey)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	u := tools.PaymentUpdate{Status: tools.PaymentConfirmed, TxHash: s.TxHash, Confirmations: s.Confirmations, Reason: s.Reason}
	if s.Status == chains.SettlementFailed {
		u = tools.PaymentUpdate{Status: tools.PaymentFailed, TxHash: s.TxHash, Reason: orText(s.Reason, "failed on chain")}
	}
	if err := a.settleRecord(ctx, rec, u); err != nil {
		return err
	}
	if w := waitOf(rec.Kind); w != nil && rec.ForPayment != "" {
		return a.prerequisiteSettled(ctx, rec.ForPayment, u.Status, *w)
	}
	// A relayer's fee paid in the withdrawal's own transaction (Stellar,
	// Solana: its record says SameTx) has no settlement of its own: it
	// settles with the withdrawal's, by construction the same
	// transaction, even when its call came back with no hash. A fee in a
	// transaction of its own (EVM) waits for its own settlement.
	fee, err := out.ByKey(ctx, s.Chain, chains.RelayerFeeKey(s.IdempotencyKey))
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if fee.Kind == tools.KindRelayerFee && fee.SameTx && fee.ForPayment == rec.ID && fee.Status.Open() {
		return a.settleRecord(ctx, fee, u)
	}
	return nil
}

// waitReasons are what a withdrawal's record says while it waits on a
// transfer signed before it whose outcome is unknown (docs/payments.md,
// "Gas funding"): the gas of its one-time address, or the relayer's fee in
// a transaction of its own (EVM). One table, one rule (prerequisiteSettled).
type waitReasons struct{ waiting, failed, arrived, done string }

var (
	gasWait = waitReasons{
		waiting: "waiting for its gas funding to settle; nothing withdrawn yet",
		failed:  "gas funding failed; nothing withdrawn",
		arrived: "its gas funding is confirmed; the withdrawal is being sent (nothing withdrawn yet)",
		done:    "sent once its gas funding was confirmed",
	}
	feeWait = waitReasons{
		waiting: "waiting for the relayer's fee transfer to settle; nothing withdrawn yet",
		failed:  "the relayer's fee transfer failed; nothing withdrawn",
		arrived: "the relayer's fee transfer is confirmed; the withdrawal is being sent (nothing withdrawn yet)",
		done:    "sent once the relayer's fee transfer was confirmed",
	}
)

// waitOf is the waitReasons of a record of kind k that a withdrawal can
// wait on, or nil.
func waitOf(k tools.PaymentKind) *waitReasons {
	switch k {
	case tools.KindGasFunding:
		return &gasWait
	case tools.KindRelayerFee:
		return &feeWait
	}
	return nil
}

// waited reports whether a withdrawal's reason says it waited on a
// prerequisite: waiting, arrived, or sent after it (done).
func waited(reason string) bool {
	for _, w := range []waitReasons{gasWait, feeWait} {
		if reason == w.waiting || reason == w.arrived || reason == w.done {
			return true
		}
	}
	return false
}

// doneReason is the reason a withdrawal that waited (its record says
// reason) carries once it is sent, or "" when it did not wait.
func doneReason(reason string) string {
	for _, w := range []waitReasons{gasWait, feeWait} {
		if reason == w.waiting || reason == w.arrived {
			return w.done
		}
	}
	return ""
}

// prerequisiteSettled moves the withdrawal withdrawalID whose gas funding
// (or relayer fee in a transaction of its own, by wr) settled
// with status, when that withdrawal is still pending with nothing signed
// (its gas transfer's outcome was unknown, so the connector never got to
// it): failed gas fails it ("gas funding failed; nothing withdrawn", told
// like any failed payment); confirmed gas leaves it pending, saying that
// it is being sent, and marks it due: the agent sends it under its key
// (withdrawalDue, wakeWithdrawal). A withdrawal that has a transaction is
// the withdrawal's own settlement's business.
func (a *Actor) prerequisiteSettled(ctx context.Context, withdrawalID string, status tools.PaymentStatus, wr waitReasons) error {
	w, err := a.outgoing().Get(ctx, withdrawalID)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if w.Status != tools.PaymentPending || w.TxHash != "" {
		return nil
	}
	switch status {
	case tools.PaymentFailed:
		return a.settleRecord(ctx, w, tools.PaymentUpdate{Status: tools.PaymentFailed, Reason: wr.failed})
	case tools.PaymentConfirmed:
		return a.withdrawalDue(ctx, w, wr)
	}
	return nil
}

// settleRecord moves rec by u (a settlement) and tells it, once.
func (a *Actor) settleRecord(ctx context.Context, rec tools.OutgoingPayment, u tools.PaymentUpdate) error {
	out := a.outgoing()
	if rec.Status == u.Status {
		// Already there (an x402 payment fetch_paid saw settled, whose
		// authorization the connector later reports used): nothing new.
		return nil
	}
	for try := 0; ; try++ {
		cur, err := out.Get(ctx, rec.ID)
		if err != nil {
			return err
		}
		next, ops, err := out.Transition(ctx, rec.ID, u)
		if errors.Is(err, state.ErrInvalidTransition) {
			// Final otherwise already: the settlement cannot change it, and
			// must not come back every pass.
			a.log(ctx).Warn("settlement of a settled payment", "payment", rec.ID, "status", string(u.Status), "err", err)
			return nil
		}
		if err != nil || len(ops) == 0 {
			return err
		}
		err = a.tellSettled(ctx, cur, next, ops)
		if errors.Is(err, persistence.ErrConflict) && try < 3 {
			continue // moved meanwhile: read it again
		}
		return err
	}
}

// tellSettled commits ops (the record's move from cur to next) with what
// it tells, in one write: the payment event (payment.confirmed or
// payment.failed, on webhooks and the stream) whenever an open payment
// settles, and the notification and system message of settleWords.
func (a *Actor) tellSettled(ctx context.Context, cur, next tools.OutgoingPayment, ops []persistence.Op) error {
	note, text := settleWords(cur, next)
	ev := settleEvent(cur, next)
	if note == nil && ev == nil {
		_, err := a.deps.Store.Apply(ctx, ops...)
		return err
	}
	rec := a.rec.clone()
	convID := ""
	if next.Source.Type == tools.SourceConversation {
		convID = next.Source.ID
	}
	ops, err := a.systemMessageOps(ctx, rec, convID, text, ops)
	if err != nil {
		return err
	}
	if note != nil {
		_, nops, err := a.noteOps(ctx, rec, note)
		if err != nil {
			return err
		}
		ops = append(ops, nops...)
	}
	if ev != nil {
		eops, err := a.eventOps(ctx, rec, ev)
		if err != nil {
			return err
		}
		ops = append(ops, eops...)
	}
	if err := a.saveRecord(ctx, rec, ops...); err != nil {
		return err
	}
	a.deps.Feed.Publish(a.id)
	if note != nil {
		a.capInbox(ctx)
	}
	if ev != nil {
		a.trimPaymentEvents(ctx)
	}
	return nil
}

// settleEvent is the payment event of a record's move from cur to next:
// payment.confirmed or payment.failed when an open payment (pending or
// broadcast) settles, nil otherwise (a settlement of a settled record
// changes nothing to tell).
func settleEvent(cur, next tools.OutgoingPayment) *PaymentEvent {
	if !cur.Status.Open() {
		return nil
	}
	what := fmt.Sprintf("%s %s to %s on %s", next.Amount, next.Asset, orText(next.Recipient.Name, next.Recipient.Address), next.Chain)
	switch next.Status {
	case tools.PaymentConfirmed:
		return &PaymentEvent{Type: client.EventPaymentConfirmed, Title: fmt.Sprintf("Payment confirmed: %s %s", next.Amount, next.Asset),
			Body: fmt.Sprintf("The payment of %s (payment %s) is confirmed.%s", what, next.ID, txSentence(next.TxHash)), Payment: PaymentView(next)}
	case tools.PaymentFailed, tools.PaymentRefused:
		return &PaymentEvent{Type: client.EventPaymentFailed, Title: fmt.Sprintf("Payment failed: %s %s", next.Amount, next.Asset),
			Body: fmt.Sprintf("The payment of %s (payment %s) did not go through: %s%s.", what, next.ID, next.Reason, txAside(next.TxHash)), Payment: PaymentView(next)}
	}
	return nil
}

// txSentence is " Transaction <hash>" ("" without a hash: an x402
// authorization that expired unused was never a transaction).
func txSentence(hash string) string {
	if hash == "" {
		return ""
	}
	return " Transaction " + hash
}

// txAside is " (transaction <hash>)", or "" without a hash.
func txAside(hash string) string {
	if hash == "" {
		return ""
	}
	return " (transaction " + hash + ")"
}

// settleWords is what the user is told when a record moves from cur to
// next: nil when nothing new (the call already said it was sent). Besides
// settlements, the agent's own send of a withdrawal that waited
// (wakeWithdrawal) is told here: sent (broadcast, its reason the
// waitReasons' done: no call said so), or refused (nothing signed).
func settleWords(cur, next tools.OutgoingPayment) (*Notify, string) {
	what := fmt.Sprintf("%s %s to %s on %s", next.Amount, next.Asset, orText(next.Recipient.Name, next.Recipient.Address), next.Chain)
	if next.All {
		what = fmt.Sprintf("everything (%s) from %s to %s on %s", next.Asset, next.From, orText(next.Recipient.Name, next.Recipient.Address), next.Chain)
	}
	switch {
	case next.Status == tools.PaymentBroadcast && cur.Status == tools.PaymentPending && next.Kind == tools.KindWithdraw && waited(next.Reason):
		return &Notify{Type: client.NotifyWithdrawal, Title: fmt.Sprintf("Withdrawal sent: %s %s", amountText(next), next.Asset),
				Body: fmt.Sprintf("The withdrawal of %s (payment %s) was %s.%s", what, next.ID, next.Reason, txSentence(next.TxHash))},
			fmt.Sprintf("The withdrawal of %s that was waiting was %s (payment %s, transaction %s).", what, next.Reason, next.ID, next.TxHash)
	case next.Status == tools.PaymentRefused && cur.Status == tools.PaymentPending:
		return &Notify{Type: NotePaymentFailed, Title: fmt.Sprintf("Payment failed: %s %s", amountText(next), next.Asset),
				Body: fmt.Sprintf("The payment of %s (payment %s) was not sent: %s. Nothing moved; it may be asked for again.", what, next.ID, next.Reason)},
			fmt.Sprintf("The payment of %s (payment %s) was not sent: %s. Nothing moved; it may be asked for again.", what, next.ID, next.Reason)
	case next.Status == tools.PaymentConfirmed && cur.Status == tools.PaymentPending:
		return &Notify{Type: NotePaymentSent, Title: fmt.Sprintf("Payment confirmed: %s %s", next.Amount, next.Asset),
				Body: fmt.Sprintf("The payment of %s (payment %s) is confirmed.%s", what, next.ID, txSentence(next.TxHash))},
			fmt.Sprintf("The payment of %s that was on its way is confirmed (payment %s, transaction %s).", what, next.ID, next.TxHash)
	case next.Status == tools.PaymentFailed && cur.Status != tools.PaymentFailed:
		return &Notify{Type: NotePaymentFailed, Title: fmt.Sprintf("Payment failed: %s %s", next.Amount, next.Asset),
				Body: fmt.Sprintf("The payment of %s (payment %s) did not go through: %s%s. The amount was not paid; it may be sent again.", what, next.ID, next.Reason, txAside(next.TxHash))},
			fmt.Sprintf("The payment of %s (payment %s) did not go through: %s. Nothing moved; it may be sent again.", what, next.ID, next.Reason)
	}
	return nil, ""
}

// amountText is a record's amount as the user reads it: "all" for a
// withdrawal of everything.
func amountText(p tools.OutgoingPayment) string {
	if p.All {
		return "all"
	}
	return p.Amount.String()
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
