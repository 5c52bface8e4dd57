package agent

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

// The chain side of fetch_paid (docs/x402.md): find the agent's chain and
// token an x402 requirement names, and sign its EIP-3009 authorization as
// a spend.

// AuthorizationDomain implements tools.ChainOps: the token is found among
// the connectors' own assets by its contract (identity, not symbol), and
// its domain (read from the token) must be for chainID. A chain whose
// token could not be read answers its error when no other chain is the
// one.
func (o *chainOps) AuthorizationDomain(ctx context.Context, chainID *big.Int, contract string) (chains.ID, chains.TransferAuthorization, error) {
	var failed error
	for _, id := range o.agent.Chains {
		if id.Family() != chains.FamilyEVM {
			continue
		}
		c, err := o.conn(id)
		if err != nil {
			continue
		}
		for _, a := range c.Assets() {
			if a.Native() || !strings.EqualFold(a.Ref, contract) {
				continue
			}
			dom, err := c.TokenDomain(ctx, a)
			if err != nil {
				if failed == nil {
					failed = err
				}
				continue
			}
			if dom.ChainID != nil && dom.ChainID.Cmp(chainID) == 0 {
				return id, dom, nil
			}
		}
	}
	if failed != nil {
		return "", chains.TransferAuthorization{}, failed
	}
	return "", chains.TransferAuthorization{}, fmt.Errorf("%w: the agent has no chain with id %s holding a token at %s", chains.ErrNoAuthorizations, chainID, contract)
}

// SignAuthorization implements tools.ChainOps. pr is the x402 payment
// fetch_paid read once (tools.KindX402): the owner's approval rules take
// it first (a payment they would hold is refused, and nothing is written:
// an HTTP request cannot wait for the owner, and an approval of it could
// never run), then its record (pr.Record) is written and the connector has
// the enclave sign the authorization (pr.Authorization: terms' domain,
// window and nonce, pr's asset, amount and payee) as a spend under pr's
// key, which the spending policy checks and counts. Nothing here reads
// the asset or the amount again.
func (o *chainOps) SignAuthorization(ctx context.Context, pr tools.PaymentRequest, terms chains.TransferAuthorization) (chains.TransferAuthorization, []byte, error) {
	auth, err := pr.Authorization(terms)
	if err != nil {
		return terms, nil, err
	}
	id := pr.Chain()
	from := o.agent.Addresses[id]
	auth.From = common.HexToAddress(from).Hex()
	ap, _, err := o.a.policies().Check(ctx, policy.Hold{AgentID: o.agent.ID, Kind: policy.KindPayment, Chain: id, Asset: pr.Asset().Symbol,
		Amount: pr.Amount(), Recipient: pr.Recipient().Address, PayTo: pr.Recipient().Address, Key: pr.IdempotencyKey(), ConversationID: o.convID})
	if errors.Is(err, policy.ErrNotApproved) {
		return auth, nil, fmt.Errorf("%w: %w", enclave.ErrPolicy, err)
	}
	if err != nil {
		return auth, nil, err
	}
	if ap != nil {
		return auth, nil, &tools.HeldError{Reasons: ap.Reasons, ExpiresAt: ap.ExpiresAt}
	}
	c, err := o.conn(id)
	if err != nil {
		return auth, nil, err
	}
	// Signed, the authorization is the payee's to submit: the record stays
	// pending until fetch_paid hears the settlement (Outgoing.Advance).
	var sig []byte
	_, err = o.a.paying(ctx, pr.Record(), func(ctx context.Context) (chains.TxResult, error) {
		var err error
		if sig, err = c.SignAuthorization(ctx, o.key(id), from, auth, pr.IdempotencyKey()); err != nil {
			// No signature came back, so none can be handed to anyone.
			return chains.TxResult{}, fmt.Errorf("%w: %w", errNoSignature, err)
		}
		return chains.TxResult{}, nil
	})
	return auth, sig, err
}
