package policy

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
)

// withIssuer fills pay.Issuer when the policy has an allowlist that does
// not already pass pay and its recipient is the one-time address of an
// invoice issued on this server: the issuing agent's name, from the
// server's own invoice records (state.InvoiceByAddress), so it is
// verified, not claimed. A foreign invoice (another server's, or a bare
// address) has no record here and is checked by its address, as before.
func (s *Store) withIssuer(ctx context.Context, p Policy, chain chains.ID, pay Payment) (Payment, error) {
	if len(p.Allowlist) == 0 || pay.Recipient == "" || p.Check(Payment{Asset: pay.Asset, Amount: pay.Amount, Recipient: pay.Recipient, ResolvedTo: pay.ResolvedTo}) == nil {
		return pay, nil
	}
	rec, err := state.InvoiceByAddress(ctx, s.st, chain, pay.Recipient)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return pay, nil
	case err != nil:
		return pay, fmt.Errorf("policy: the invoice at %s: %w", truncate(pay.Recipient), err)
	}
	pay.Issuer = rec.AgentName
	return pay, nil
}
