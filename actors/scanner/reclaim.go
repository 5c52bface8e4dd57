package scanner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// ReclaimKey is the idempotency key of the reclaim of agentID's prepared
// destination address (its spend's key in the owner's policy).
func ReclaimKey(agentID, address string) string { return "reclaim/" + agentID + "/" + address }

// reclaimDestinations is the invoice maintenance of a chain whose
// connector prepares destinations (chains.DestinationReclaimer: Stellar
// with a sponsor): every destination recorded by create_invoice
// (state.Destination) whose invoice is closed — expired or cancelled
// unpaid, or paid and emptied by the agent's withdrawals — or whose create
// failed and was not retried within state.OrphanAfter is closed into the
// sponsor, which gets its reserves back (docs/chains-stellar.md,
// "Reclaiming a destination"). One that still holds money is looked at
// again after state.RecheckAfter. It runs with the transfers (one member
// per chain), after them: a late payment found in this pass is recorded
// before its address is looked at. A reclaim that fails is logged and
// tried again later; it never fails the pass.
func (s *Scanner) reclaimDestinations(ctx context.Context, rep *Report) error {
	if _, ok := s.opts.Chain.Connector().(chains.DestinationReclaimer); !ok {
		return nil
	}
	now := s.opts.Now()
	if !s.reclaimedAt.IsZero() && now.Sub(s.reclaimedAt) < ReclaimEvery && now.After(s.reclaimedAt) {
		return nil // the records are read at most every ReclaimEvery
	}
	s.reclaimedAt = now
	ds, err := state.Destinations(ctx, s.opts.Store, s.chain)
	if err != nil {
		return fmt.Errorf("scanner: %s invoice destinations: %w", s.chain, err)
	}
	for _, d := range ds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !d.Due(now) {
			continue
		}
		due, next, err := state.Reclaim(ctx, s.opts.Store, d, now)
		if err != nil {
			return err
		}
		if !due {
			if err := state.DestinationLater(ctx, s.opts.Store, d, next, ""); err != nil {
				return err
			}
			continue
		}
		if d, err = state.MarkReclaiming(ctx, s.opts.Store, d); errors.Is(err, persistence.ErrConflict) {
			continue // an invoice was stored for it meanwhile: next pass
		} else if err != nil {
			return err
		}
		eph, err := d.Ephemeral()
		if err != nil {
			return fmt.Errorf("scanner: destination %s: %w", d.Address, err)
		}
		key := chains.KeyRef{AgentID: d.AgentID, Chain: s.chain, Epoch: agent.KeyEpoch, EphemeralPub: eph}
		res, err := s.opts.Chain.ReclaimDestination(ctx, key, d.Address, ReclaimKey(d.AgentID, d.Address))
		if err != nil {
			if errors.Is(err, chains.ErrNotEmpty) {
				// The agent's money (a paid invoice not yet withdrawn, a
				// late payment): kept, looked at again later.
				s.opts.Log.Debug("scanner: invoice destination holds money, kept", "chain", s.chain, "address", d.Address, "invoice", d.InvoiceID)
			} else {
				s.opts.Log.Warn("scanner: invoice destination not reclaimed", "chain", s.chain, "agent", d.AgentID, "address", d.Address, "invoice", d.InvoiceID, "err", err)
			}
			if err := state.DestinationLater(ctx, s.opts.Store, d, now.Add(state.RecheckAfter), err.Error()); err != nil {
				return err
			}
			continue
		}
		if err := state.DestinationReclaimed(ctx, s.opts.Store, d); err != nil {
			return err
		}
		rep.Reclaimed++
		s.opts.Log.Info("scanner: invoice destination reclaimed", "chain", s.chain, "agent", d.AgentID, "address", d.Address, "invoice", d.InvoiceID, "tx", res.TxHash)
	}
	return nil
}

// ReclaimEvery is how often the maintenance reads the destination records
// (each is looked at only when due, at its NextAt).
const ReclaimEvery = time.Minute
