package enclave

import (
	"context"
	"errors"

	"github.com/veilhq/veil/chains"
)

// ErrPolicy reports a signature the agent's spending policy refused. The
// wrapping error says which rule and what would pass.
var ErrPolicy = errors.New("refused by the agent's spending policy")

// Spend is the payment a signature is for. Whoever asks for a payment
// signature (the agent's tool services) puts it in the context; the
// enclave checks it against the agent's policy before it signs.
type Spend struct {
	// Key identifies the payment (its idempotency key): the several
	// signatures of one payment (an ERC-20 approval and the transfer, a
	// rebuilt transaction) are counted once.
	Key       string
	AgentID   string
	Chain     chains.ID
	Asset     string
	Amount    string // decimal; "" means everything (withdraw all)
	Recipient string // name, meta-address or plain address
}

type spendKey struct{}

// WithSpend returns ctx carrying s.
func WithSpend(ctx context.Context, s Spend) context.Context {
	return context.WithValue(ctx, spendKey{}, s)
}

// SpendFrom returns the spend ctx carries.
func SpendFrom(ctx context.Context) (Spend, bool) {
	s, ok := ctx.Value(spendKey{}).(Spend)
	return s, ok
}

// Authorizer decides whether a spend may be signed, and counts it when it
// may (durably, once per Spend.Key). An error matching ErrPolicy refuses.
type Authorizer interface {
	Authorize(ctx context.Context, s Spend) error
}

// WithPolicy returns p with every Sign for a spend (a context carrying a
// Spend of the key's own agent) authorized by auth first. Signatures
// without a spend (name registration, maintenance re-signing of an already
// authorized transaction) pass unchanged.
func WithPolicy(p Provider, auth Authorizer) Provider { return policyProvider{Provider: p, auth: auth} }

type policyProvider struct {
	Provider
	auth Authorizer
}

func (p policyProvider) Sign(ctx context.Context, key chains.KeyRef, payload []byte) ([]byte, error) {
	if s, ok := SpendFrom(ctx); ok {
		if s.AgentID != key.AgentID {
			return nil, invalid("a spend of agent %s cannot be signed with a key of agent %s", s.AgentID, key.AgentID)
		}
		if err := p.auth.Authorize(ctx, s); err != nil {
			return nil, err
		}
	}
	return p.Provider.Sign(ctx, key, payload)
}
