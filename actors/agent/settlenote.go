package agent

import (
	"context"
	"errors"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

// noted applies a connector's note about a payment still on its way
// (chains.SettlementPending, under chains.NoteKey of the payment's key):
// the record keeps its status and takes the note's reason, what the user
// and the API see while it waits (an x402 authorization whose nonce is
// used with no log to say how, docs/payments.md). Nobody is told: nothing
// was settled. A record already final keeps its reason (Outgoing.Advance).
func (a *Actor) noted(ctx context.Context, s chains.Settlement) error {
	key, ok := chains.NotedKey(s.IdempotencyKey)
	if !ok || s.Reason == "" {
		return nil // not a note this version reads
	}
	out := a.outgoing()
	rec, err := out.ByKey(ctx, s.Chain, key)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, _, err = out.Advance(ctx, rec.ID, tools.PaymentUpdate{Reason: s.Reason})
	return err
}
