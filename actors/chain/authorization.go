package chain

import (
	"context"
	"fmt"

	"github.com/veilhq/veil/chains"
)

// authorizer is the connector's EIP-3009 side, or an error on a chain
// without one (x402 pays EVM tokens only).
func (r *Ref) authorizer() (chains.TransferAuthorizer, error) {
	ta, ok := r.conn().(chains.TransferAuthorizer)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no EIP-3009 transfer authorizations (x402 pays EVM tokens)", chains.ErrNoAuthorizations, r.id)
	}
	return ta, nil
}

// AuthorizationDomain reads concurrently with everything else.
func (r *Ref) AuthorizationDomain(ctx context.Context, asset string) (chains.TransferAuthorization, error) {
	ta, err := r.authorizer()
	if err != nil {
		return chains.TransferAuthorization{}, err
	}
	v, err := r.do(ctx, "authorization_domain", "", func(ctx context.Context) (any, error) { return ta.AuthorizationDomain(ctx, asset) })
	return as[chains.TransferAuthorization](v, err)
}

// TokenDomain reads concurrently with everything else.
func (r *Ref) TokenDomain(ctx context.Context, a chains.Asset) (chains.TransferAuthorization, error) {
	ta, err := r.authorizer()
	if err != nil {
		return chains.TransferAuthorization{}, err
	}
	v, err := r.do(ctx, "authorization_domain", "", func(ctx context.Context) (any, error) { return ta.TokenDomain(ctx, a) })
	return as[chains.TransferAuthorization](v, err)
}

// AuthorizationUsed reads concurrently with everything else.
func (r *Ref) AuthorizationUsed(ctx context.Context, auth chains.TransferAuthorization) (bool, error) {
	ta, err := r.authorizer()
	if err != nil {
		return false, err
	}
	v, err := r.do(ctx, "authorization_used", "", func(ctx context.Context) (any, error) { return ta.AuthorizationUsed(ctx, auth) })
	return as[bool](v, err)
}

// SignAuthorization runs in the lane of the signer's address, like its
// other spends (it sends nothing, but the policy counts it).
func (r *Ref) SignAuthorization(ctx context.Context, from chains.KeyRef, fromAddress string, auth chains.TransferAuthorization, idempotencyKey string) ([]byte, error) {
	ta, err := r.authorizer()
	if err != nil {
		return nil, err
	}
	v, err := r.do(ctx, "sign_authorization", laneOf(fromAddress), func(ctx context.Context) (any, error) {
		return ta.SignAuthorization(ctx, from, auth, idempotencyKey)
	})
	return as[[]byte](v, err)
}

// SettleAuthorization runs in the lane of the submitter's address (it
// sends a transaction from it).
func (r *Ref) SettleAuthorization(ctx context.Context, submitter chains.KeyRef, submitterAddress string, auth chains.TransferAuthorization, sig []byte, idempotencyKey string) (chains.TxResult, error) {
	ta, err := r.authorizer()
	if err != nil {
		return chains.TxResult{}, err
	}
	v, err := r.do(ctx, "settle_authorization", laneOf(submitterAddress), func(ctx context.Context) (any, error) {
		return ta.SettleAuthorization(ctx, submitter, submitterAddress, auth, sig, idempotencyKey)
	})
	return as[chains.TxResult](v, err)
}
