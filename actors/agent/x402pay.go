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
	"github.com/veilhq/veil/chains/payuri"
	"github.com/veilhq/veil/enclave"
)

// The chain side of fetch_paid (docs/x402.md): find the agent's chain and
// token an x402 requirement names, and sign its EIP-3009 authorization as
// a spend.

// AuthorizationDomain implements tools.ChainOps.
func (o *chainOps) AuthorizationDomain(ctx context.Context, chainID *big.Int, contract string) (chains.ID, chains.TransferAuthorization, error) {
	for _, id := range o.agent.Chains {
		if id.Family() != chains.FamilyEVM {
			continue
		}
		c, err := o.conn(id)
		if err != nil {
			continue
		}
		t, ok := c.Connector().(payuri.Target)
		if !ok {
			continue
		}
		for _, a := range tools.Assets(id) {
			cid, token, ok := t.PaymentTarget(a.Symbol)
			if !ok || token == "" || new(big.Int).SetUint64(cid).Cmp(chainID) != 0 || !strings.EqualFold(token, contract) {
				continue
			}
			dom, err := c.AuthorizationDomain(ctx, a.Symbol)
			return id, dom, err
		}
	}
	return "", chains.TransferAuthorization{}, fmt.Errorf("%w: the agent has no chain with id %s holding a token at %s", chains.ErrNoAuthorizations, chainID, contract)
}

// SignAuthorization implements tools.ChainOps: the owner's approval rules
// first (a payment they would hold is refused, and nothing is written: an
// HTTP request cannot wait for the owner, and an approval of it could
// never run), then the connector has the enclave sign it as a spend, which
// the spending policy checks and counts.
func (o *chainOps) SignAuthorization(ctx context.Context, id chains.ID, auth chains.TransferAuthorization, key string) (chains.TransferAuthorization, []byte, error) {
	from := o.agent.Addresses[id]
	auth.From = common.HexToAddress(from).Hex()
	asset, err := tools.LookupAsset(id, auth.Asset)
	if err != nil {
		return auth, nil, err
	}
	if auth.Value == nil || auth.Value.Sign() <= 0 {
		return auth, nil, fmt.Errorf("%w: an authorization moves a positive amount", chains.ErrInvalidAmount)
	}
	amount := chains.NewAmount(auth.Value, asset.Decimals).String()
	ap, _, err := o.a.policies().Check(ctx, policy.Hold{AgentID: o.agent.ID, Kind: policy.KindPayment, Chain: id, Asset: asset.Symbol,
		Amount: amount, Recipient: auth.To, PayTo: auth.To, Key: key, ConversationID: o.convID})
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
	rec := tools.OutgoingPayment{Kind: tools.KindX402, Source: toolSource(o.convID), Chain: id, Asset: asset.Symbol, Amount: chains.NewAmount(auth.Value, asset.Decimals),
		Recipient: tools.PaymentRecipient{Address: auth.To}, IdempotencyKey: key}
	_, err = o.a.paying(ctx, rec, func(ctx context.Context) (chains.TxResult, error) {
		var err error
		if sig, err = c.SignAuthorization(ctx, o.key(id), from, auth, key); err != nil {
			// No signature came back, so none can be handed to anyone.
			return chains.TxResult{}, fmt.Errorf("%w: %w", errNoSignature, err)
		}
		return chains.TxResult{}, nil
	})
	return auth, sig, err
}
