package scanner

import (
	"context"
	"fmt"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
)

// WatchAfterExpiry is how long an unpaid invoice's accounts are still
// looked up after it expired: a late payment settles nothing but is the
// agent's money, recorded (payment_received) so that withdraw can move it.
// After that the invoice is no longer watched.
const WatchAfterExpiry = 7 * 24 * time.Hour

// maxSeen bounds the signatures remembered as read; the set starts over
// when full (re-reading is harmless: delivery is idempotent).
const maxSeen = 100_000

// refSeen remembers the transactions whose transfers the agents accepted
// (or that moved nothing), so a pending invoice's history is not read
// again each pass. Guarded by Scanner.pass.
type refSeen map[string]bool

// scanReferences finds the payments of the chain's pending invoices one
// by one where the connector cannot list every transfer of the chain
// (chains.ReferenceScanner: Solana Pay's reference and the one-time
// address's history), and delivers them to their agents as scanTransfers
// does. It runs with the transfers (the member that watches them).
func (s *Scanner) scanReferences(ctx context.Context, rep *Report) error {
	rs, ok := s.opts.Chain.Connector().(chains.ReferenceScanner)
	if !ok {
		return nil
	}
	ws, err := state.InvoiceWatches(ctx, s.opts.Store, s.chain)
	if err != nil {
		return fmt.Errorf("scanner: %s invoice watches: %w", s.chain, err)
	}
	now := s.opts.Now()
	owner := map[string]state.InvoiceWatch{}
	var watches []chains.Watch
	for _, w := range ws {
		if w.ExpiresAt != nil && now.Sub(*w.ExpiresAt) > WatchAfterExpiry {
			if err := state.ForgetInvoiceWatch(ctx, s.opts.Store, s.chain, w); err != nil {
				return err
			}
			continue
		}
		owner[w.PayTo] = w
		watches = append(watches, chains.Watch{PayTo: w.PayTo, Asset: w.Asset, Reference: w.Reference})
	}
	if len(watches) == 0 {
		return nil
	}
	if s.seen == nil || len(s.seen) > maxSeen {
		s.seen = refSeen{}
	}
	ts, read, err := rs.TransfersTo(ctx, watches, func(h string) bool { return s.seen[h] })
	if err != nil {
		return fmt.Errorf("scanner: %s invoice references: %w", s.chain, err)
	}
	rep.Transfers += len(ts)
	batches := map[string][]agent.Incoming{}
	for _, t := range ts {
		w, ok := owner[t.To]
		if !ok {
			continue
		}
		rep.InvoiceHits++
		batches[w.AgentID] = append(batches[w.AgentID], agent.Incoming{StealthAddress: w.PayTo, Asset: t.Asset, Amount: t.Amount, TxHash: t.TxHash})
	}
	if err := s.deliver(ctx, batches, rep); err != nil {
		return err
	}
	for _, h := range read {
		s.seen[h] = true
	}
	return nil
}
