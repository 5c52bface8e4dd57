package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

// The record of every payment this agent makes (docs/payments.md): each
// path that moves value — a chat or MCP tool, a schedule's run, an
// approved payment, an x402 authorization — runs its signing request
// through paying, which writes the record before and moves it by what the
// chain answered.

// errNoSignature marks the failure of a signing request that answers the
// signature itself (an x402 authorization): without it nothing can move.
var errNoSignature = errors.New("no signature was made")

func (a *Actor) outgoing() *state.Outgoing { return state.NewOutgoing(a.deps.Store, a.id, a.deps.now) }

// paying records p as pending, runs send (the signing request under
// p.IdempotencyKey), and moves the record by its answer: broadcast with
// the transaction; refused when nothing was signed (refusal); still
// pending when the outcome is unknown, answered as a *tools.PendingError
// that names the record, so that no caller words it "nothing was done".
// A record that cannot be written stops the payment before it is signed.
func (a *Actor) paying(ctx context.Context, p tools.OutgoingPayment, send func(context.Context) (chains.TxResult, error)) (chains.TxResult, error) {
	out := a.outgoing()
	rec, err := out.Open(ctx, p)
	if err != nil {
		return chains.TxResult{}, err
	}
	res, sendErr := send(ctx)
	u := settleOf(rec, res, sendErr)
	// The record follows the chain even when the caller has gone: the
	// payment is what it is.
	if _, _, err := out.Advance(context.WithoutCancel(ctx), rec.ID, u); err != nil {
		a.log(ctx).Error("record payment outcome", slog.String("payment", rec.ID), slog.String("status", string(u.Status)), slog.String("err", err.Error()))
	}
	if sendErr != nil && u.Status == tools.PaymentPending {
		return res, &tools.PendingError{PaymentID: rec.ID, TxHash: firstOf(res.TxHash, rec.TxHash), Err: sendErr}
	}
	return res, sendErr
}

// settleOf is what the chain's answer (res, err) says of the payment
// recorded as rec.
func settleOf(rec tools.OutgoingPayment, res chains.TxResult, err error) tools.PaymentUpdate {
	switch {
	case err == nil:
		st := tools.PaymentBroadcast
		if rec.Status != tools.PaymentPending {
			st = rec.Status // a retry answered a record already further on
		}
		u := tools.PaymentUpdate{Status: st, TxHash: res.TxHash}
		if done := doneReason(rec.Reason); done != "" {
			u.Reason = done // a withdrawal that waited on its gas or fee: sent now
		}
		return u
	case refusal(err) && rec.TxHash == "" && res.TxHash == "":
		return tools.PaymentUpdate{Status: tools.PaymentRefused, Reason: err.Error()}
	}
	return tools.PaymentUpdate{Status: tools.PaymentPending, TxHash: res.TxHash}
}

// refusal reports whether err says that nothing was signed: the chain or
// the enclave refused the request before a signature (the policy, funds,
// a request the chain cannot make, the chain unreachable). Any other
// error, and chains.ErrOutcomeUnknown above all, leaves the outcome
// unknown.
func refusal(err error) bool {
	if errors.Is(err, chains.ErrOutcomeUnknown) {
		return false
	}
	var held *tools.HeldError
	if errors.As(err, &held) {
		return true
	}
	for _, e := range []error{errNoSignature, chains.ErrUnavailable, chains.ErrInsufficientFunds, chains.ErrInvalidAmount, chains.ErrUnknownAsset,
		chains.ErrInvalidAddress, chains.ErrUnknownChain, chains.ErrIdempotencyConflict, chains.ErrNoAuthorizations,
		chains.ErrAuthorizationRefused, chains.ErrUnlabelled, chains.ErrNotFound, enclave.ErrPolicy, enclave.ErrUnauthorized,
		enclave.ErrInvalidInput, enclave.ErrUnavailable, enclave.ErrAttestation, policy.ErrNotApproved, tools.ErrUnknownRecipient} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// isPending reports whether err is a payment recorded as pending, its
// outcome unknown (*tools.PendingError).
func isPending(err error) bool { return pendingOf(err) != nil }

func pendingOf(err error) *tools.PendingError {
	var pe *tools.PendingError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// toolSource is what asks for a tool's payment: the conversation, or a
// direct call (MCP) when there is none.
func toolSource(convID string) tools.PaymentSource {
	if convID == "" {
		return tools.PaymentSource{Type: tools.SourceMCP}
	}
	return tools.PaymentSource{Type: tools.SourceConversation, ID: convID}
}

// gasRecord is the chains.GasPayer.Record of a withdrawal under
// withdrawKey asked for by source: the gas its one-time address is sent
// from the agent's own account is a payment of its own (kind gas_funding,
// under the connector's key "gas/<withdrawKey>", so that its settlement
// finds it), linked to the withdrawal's record (ForPayment), written
// before the transfer is signed and moved by paying like any other.
func (a *Actor) gasRecord(source tools.PaymentSource, withdrawKey string) func(context.Context, chains.GasFunding, func(context.Context) (chains.TxResult, error)) (chains.TxResult, error) {
	return func(ctx context.Context, g chains.GasFunding, send func(context.Context) (chains.TxResult, error)) (chains.TxResult, error) {
		w, err := a.outgoing().ByKey(ctx, g.Chain, withdrawKey)
		if err != nil {
			return chains.TxResult{}, fmt.Errorf("the withdrawal's payment record: %w", err)
		}
		rec := tools.OutgoingPayment{Kind: tools.KindGasFunding, Source: source, Chain: g.Chain, Asset: g.Asset, Amount: g.Amount,
			Recipient:      tools.PaymentRecipient{Name: "gas for the withdrawal from " + g.To, Address: g.To},
			IdempotencyKey: g.IdempotencyKey, ForPayment: w.ID}
		res, err := a.paying(ctx, rec, send)
		if isPending(err) {
			// The withdrawal waits on this transfer: say so on its record,
			// which stays pending until the gas settles (prerequisiteSettled).
			if _, _, aerr := a.outgoing().Advance(context.WithoutCancel(ctx), w.ID, tools.PaymentUpdate{Reason: gasWait.waiting}); aerr != nil {
				a.log(ctx).Error("record a withdrawal waiting on its gas", slog.String("payment", w.ID), slog.String("err", aerr.Error()))
			}
		}
		return res, err
	}
}

// sideRecord is the chains.SideRecorder of the withdrawals source asks
// for: the relayer's fee a withdrawal pays (kind relayer_fee, key
// "relayfee/<key>") and the native rest an everything-withdrawal sends
// after the tokens (kind remainder, key "rest/<key>") are payments of
// their own, linked to the withdrawal's record (ForPayment), written
// before they are signed and moved by paying like any other. A fee in the
// withdrawal's own transaction (SameTx: Stellar, Solana) says so on its
// record and is settled with the withdrawal (settled), hash or not.
func (a *Actor) sideRecord(source tools.PaymentSource) chains.SideRecorder {
	return func(ctx context.Context, s chains.SideSpend, send func(context.Context) (chains.TxResult, error)) (chains.TxResult, error) {
		w, err := a.outgoing().ByKey(ctx, s.Spend.Chain, s.For)
		if err != nil {
			return chains.TxResult{}, fmt.Errorf("the withdrawal's payment record: %w", err)
		}
		kind, name := tools.KindRelayerFee, "the relayer's fee for the withdrawal from "+w.From
		if s.Kind == chains.SideRemainder {
			kind, name = tools.KindRemainder, orText(w.Recipient.Name, w.Recipient.Address)
		}
		rec := tools.OutgoingPayment{Kind: kind, Source: source, Chain: s.Spend.Chain, Asset: s.Spend.Asset, Amount: s.Spend.Amount,
			Recipient: tools.PaymentRecipient{Name: name, Address: s.Spend.Recipient}, From: w.From,
			IdempotencyKey: s.Spend.Key, ForPayment: w.ID, SameTx: kind == tools.KindRelayerFee && s.SameTx}
		res, err := a.paying(ctx, rec, send)
		if kind == tools.KindRelayerFee && !s.SameTx && isPending(err) {
			// The fee goes first in a transaction of its own (EVM): the
			// withdrawal waits on it, as on its gas (prerequisiteSettled).
			if _, _, aerr := a.outgoing().Advance(context.WithoutCancel(ctx), w.ID, tools.PaymentUpdate{Reason: feeWait.waiting}); aerr != nil {
				a.log(ctx).Error("record a withdrawal waiting on its relayer fee", slog.String("payment", w.ID), slog.String("err", aerr.Error()))
			}
		}
		return res, err
	}
}
