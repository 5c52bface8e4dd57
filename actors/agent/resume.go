package agent

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/veilhq/veil/chains"
)

// resumeEvery is how often a registration still pending (the agent has no
// gas yet, the chain is unavailable) is retried, on the agent's requests.
const resumeEvery = time.Minute

// resumeTimeout bounds one registration retry (a registration returns
// once the node accepted it; it does not wait for the block).
const resumeTimeout = 10 * time.Second

// resumeSetup finishes the name registrations that create left pending:
// the process died between storing the agent and recording the
// registration, the chain was unavailable then, or the agent had no funds
// for gas (a real network has no faucet). It runs on the activation's
// first request and, while a registration stays pending, on the first
// request after each resumeEvery: once the owner has funded the agent,
// its next request registers the name. Registration is
// idempotent in every connector (an intent key per owner and name, and a
// name already registered to this owner is found, not registered again),
// so a registration that did reach the chain before the crash is recorded,
// not sent twice.
func (a *Actor) resumeSetup(ctx context.Context) {
	now := a.deps.now()
	if a.rec == nil || now.Before(a.resumeAt) {
		return
	}
	// Until the pass below finds nothing pending, try again later; reads
	// from the snapshot come back through the actor then (snapshot.go).
	a.resumeAt = now.Add(resumeEvery)
	defer a.publish()
	var pending []string
	for ch, st := range a.rec.Registration {
		if st == SetupPending {
			pending = append(pending, ch)
		}
	}
	if len(pending) == 0 {
		return
	}
	slices.Sort(pending)
	next := a.rec.clone()
	changed := false
	for _, name := range pending {
		ch := chains.ID(name)
		owner := chains.KeyRef{AgentID: a.id, Chain: ch}
		// Bounded: the retry runs ahead of the request that triggered it,
		// and a node that hangs must not hold that request for long.
		rctx, cancel := context.WithTimeout(ctx, resumeTimeout)
		st := a.setupStep(rctx, "register name", ch, func() (chains.TxResult, error) {
			c, err := a.deps.Chains.Chain(ch)
			if err != nil {
				return chains.TxResult{}, err
			}
			return c.RegisterName(rctx, owner, a.rec.Addresses[name], a.rec.Name, a.rec.MetaAddresses[name])
		})
		timedOut := rctx.Err() != nil
		cancel()
		if timedOut {
			// The request ran out of time, not the registration: pending.
			break
		}
		next.Registration[name] = st
		changed = changed || next.Registration[name] != SetupPending
	}
	if !changed {
		return
	}
	if err := a.saveRecord(ctx, next); err != nil {
		// Left pending: the next activation tries again.
		a.log(ctx).Warn("pending name registration resumed but not saved", slog.Any("err", err))
		return
	}
	a.log(ctx).Info("pending name registration resumed", slog.Any("chains", pending))
}
