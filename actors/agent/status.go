package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/persistence"
)

// Status is the spec's AgentStatus (the client's type).
type Status = client.AgentStatus

// status reports the first deployed chain's balance (from the chain actor)
// and the pending invoices (from the store).
func (a *Actor) status(ctx context.Context, chain string) (*Status, error) {
	ch := chains.ID(a.rec.Chains[0])
	if chain != "" {
		if !slices.Contains(a.rec.Chains, chain) {
			return nil, fmt.Errorf("%w: it is on %s, not %s", ErrNotOnChain, strings.Join(a.rec.Chains, ", "), chain)
		}
		ch = chains.ID(chain)
	}
	addr := a.rec.Addresses[string(ch)]
	pending, err := a.pendingInvoices(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := a.deps.Chains.Chain(ch)
	if err != nil {
		return nil, err
	}
	bal, err := conn.Balance(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("balance of agent %s on %s: %w", a.id, ch, err)
	}
	tokens := bal.Tokens
	if tokens == nil {
		tokens = map[string]string{}
	}
	return &Status{
		Balance:         bal.Native,
		Tokens:          tokens,
		PendingInvoices: pending,
		Address:         addr,
		MetaAddress:     a.rec.MetaAddresses[string(ch)],
		Chain:           string(ch),
	}, nil
}

func (a *Actor) pendingInvoices(ctx context.Context) (int, error) {
	invs, err := a.invoices().List(ctx)
	if err != nil {
		return 0, fmt.Errorf("agent %s: invoices: %w", a.id, err)
	}
	n := 0
	for _, inv := range invs {
		if inv.Status == "pending" {
			n++
		}
	}
	return n, nil
}

// export verifies the owner's fresh signature against the stored owner
// wallet, records it as used, and only then asks the enclave for the key.
func (a *Actor) export(ctx context.Context, m *Export) (string, error) {
	proof, err := walletsig.VerifyExport(walletsig.ExportRequest{
		AgentID:   a.id,
		Wallet:    a.rec.OwnerWallet,
		Signature: m.Signature,
		Message:   m.Message,
	}, a.deps.now())
	if err != nil {
		return "", err
	}
	if _, err := a.deps.Store.Apply(ctx, usedSignature(proof.ReplayKey, proof.KeepUntil)); err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			return "", ErrReplayed
		}
		return "", err
	}
	return a.deps.Keys.Export(ctx, a.id, chains.ID(a.rec.Chains[0]))
}
