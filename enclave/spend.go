package enclave

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave/txcheck"
)

// ErrPolicy reports a signature the agent's spending policy refused. The
// wrapping error says which rule and what would pass.
var ErrPolicy = errors.New("refused by the agent's spending policy")

// ErrUnauthorized reports a sign request the enclave refuses before any
// policy: one that carries neither a spend nor the no-value label, a spend
// of another agent or chain, or a no-value request whose transaction moves
// value (or cannot be decoded). It is a bug of the caller, never the
// owner's rule: the wrapping error says which.
var ErrUnauthorized = errors.New("enclave: signature refused")

// Authorizer decides whether a spend may be signed, and counts it when it
// may, durably and once per Spend.Key, before the signature is made. An
// error matching ErrPolicy refuses the payment; any other error refuses
// the signature as well (fail closed). The spend's agent and chain are
// the signing key's (checked before Authorize is called).
//
// agent/policy.Store is the spending policy's Authorizer; wrap it to add
// checks (approvals), calling the wrapped Authorize last so that only
// spends that pass every check are counted.
type Authorizer interface {
	Authorize(ctx context.Context, s chains.Spend) error
}

// CheckRequest refuses a sign request that is neither a well-formed spend
// of the key's own agent and chain nor a no-value request whose
// transaction provably moves no value (enclave/txcheck), and an EIP-3009
// transfer authorization whose typed data is not exactly its spend
// (txcheck.Authorization). Providers call it
// before every signature; WithPolicy adds the policy.
func CheckRequest(req chains.SignRequest) error {
	if err := req.CheckKind(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if req.NoValue {
		if err := txcheck.NoValue(req); err != nil {
			return fmt.Errorf("%w: %w", ErrUnauthorized, err)
		}
	}
	// An EIP-3009 authorization (x402) must be exactly its spend.
	if err := txcheck.Authorization(req); err != nil {
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return nil
}

// WithPolicy returns p with every sign request checked (CheckRequest) and
// every spend authorized by auth before p signs. Re-signing a payment (a
// fee bump, a rebuilt transaction) passes the same spend again; auth
// counts it once per key.
func WithPolicy(p Provider, auth Authorizer) Provider { return policyProvider{Provider: p, auth: auth} }

type policyProvider struct {
	Provider
	auth Authorizer
}

func (p policyProvider) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	if err := CheckRequest(req); err != nil {
		return nil, err
	}
	if req.Spend != nil {
		if err := p.auth.Authorize(ctx, *req.Spend); err != nil {
			return nil, err
		}
	}
	// The relayer's fee the same transaction pays: the owner's policy
	// sees it as a payment of its own (asset, amount, the relayer).
	if req.Fee != nil {
		if err := p.auth.Authorize(ctx, *req.Fee); err != nil {
			return nil, err
		}
	}
	return p.Provider.Sign(ctx, req)
}
