package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/persistence"
)

// SetPolicy replaces the agent's spending policy. The owner's fresh
// signature over the policy's hash is required: an API key alone can
// neither loosen nor tighten it. The answer is *PolicyView.
type SetPolicy struct {
	answers[*PolicyView]
	AccountID string
	Policy    policy.Policy
	Signature string
	Message   string
}

// PreviewPolicy answers *PolicyPreview: the hash of the policy and the
// exact message the owner signs to set it now, so that no client
// reimplements the normalisation.
type PreviewPolicy struct {
	answers[*PolicyPreview]
	AccountID string
	Policy    policy.Policy
	// Invoice, when set, is an invoice id or payment link of this server:
	// the preview says whether a payment of it would pass the policy, and
	// by which issuer it was checked.
	Invoice string
}

// PolicyPreview is the answer of POST /agent/:id/policy/preview.
type PolicyPreview struct {
	Hash    string `json:"hash"`
	Message string `json:"message"`
	// InvoiceRule says how invoices meet the allowlist: by their issuer,
	// not their one-time address (policy.InvoiceRule; issue 34 item 3).
	InvoiceRule string `json:"invoiceRule"`
	// InvoiceCheck answers the request's invoice.
	InvoiceCheck *policy.InvoiceCheck `json:"invoiceCheck,omitempty"`
}

// GetPolicy answers *PolicyView.
type GetPolicy struct {
	answers[*PolicyView]
	AccountID string
}

// PolicyView is the policy as the API shows it, with the hash the owner
// signed; Policy is nil when the agent has none.
type PolicyView struct {
	Policy *policy.Policy `json:"policy"`
	Hash   string         `json:"hash,omitempty"`
}

func (a *Actor) setPolicy(ctx context.Context, m *SetPolicy) (*PolicyView, error) {
	norm, err := policy.Normalize(m.Policy)
	if err != nil {
		return nil, err
	}
	hash, err := policy.Hash(norm)
	if err != nil {
		return nil, err
	}
	proof, err := walletsig.VerifyPolicy(walletsig.PolicyRequest{
		AgentID: a.id, Wallet: a.rec.OwnerWallet, PolicyHash: hash, Signature: m.Signature, Message: m.Message,
	}, a.deps.now())
	if err != nil {
		return nil, err
	}
	// Payments go to meta-addresses: resolve the Veil names now, so the
	// enclave can match a payment against the allowlist.
	norm.Resolved = nil
	dir := Directory{Store: a.deps.Store}
	for _, e := range norm.Allowlist {
		if ag, err := dir.LookupAgent(ctx, e); err == nil {
			for _, meta := range ag.MetaAddresses {
				norm.Resolved = append(norm.Resolved, meta)
			}
		}
	}
	op, err := policy.SetOp(a.id, norm)
	if err != nil {
		return nil, err
	}
	if _, err := a.deps.Store.Apply(ctx, op, usedSignature(proof.ReplayKey, proof.KeepUntil)); err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			return nil, ErrReplayed
		}
		return nil, fmt.Errorf("agent %s: save policy: %w", a.id, err)
	}
	// Schedules made under the old policy that break this one stop now,
	// each with a notification saying why (their runs would be refused).
	a.recheckSchedules(ctx, norm)
	return a.getPolicy(ctx)
}

func (a *Actor) getPolicy(ctx context.Context) (*PolicyView, error) {
	p, ok, err := policy.NewStore(a.deps.Store, a.deps.Now).Get(ctx, a.id)
	if err != nil || !ok {
		return &PolicyView{}, err
	}
	hash, err := policy.Hash(p)
	if err != nil {
		return nil, err
	}
	return &PolicyView{Policy: &p, Hash: hash}, nil
}

func (a *Actor) previewPolicy(ctx context.Context, m *PreviewPolicy) (*PolicyPreview, error) {
	m.Policy.Resolved = nil // filled in by the server, never signed
	hash, err := policy.Hash(m.Policy)
	if err != nil {
		return nil, err
	}
	pre := &PolicyPreview{Hash: hash, Message: walletsig.PolicyMessage(hash, a.id, a.rec.OwnerWallet, a.deps.now()), InvoiceRule: policy.InvoiceRule}
	if m.Invoice != "" {
		c, err := policy.PreviewInvoice(ctx, a.deps.Store, m.Policy, m.Invoice)
		if errors.Is(err, policy.ErrUnknownInvoice) {
			return nil, fmt.Errorf("%w: %w", ErrInvoiceNotFound, err)
		}
		if err != nil {
			return nil, err
		}
		pre.InvoiceCheck = c
	}
	return pre, nil
}
