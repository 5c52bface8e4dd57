package chains

import (
	"context"
	"errors"
	"math/big"
)

// ErrNoAuthorizations reports a chain or asset without EIP-3009 transfer
// authorizations (x402's `exact` scheme pays EVM tokens only).
var ErrNoAuthorizations = errors.New("chains: no EIP-3009 transfer authorizations here")

// ErrAuthorizationRefused reports an EIP-3009 authorization the token
// refuses (expired, not yet valid, nonce used, bad signature) or that does
// not fit the chain (another chain id, an unknown token).
var ErrAuthorizationRefused = errors.New("chains: transfer authorization refused")

// TransferAuthorization is an EIP-3009 TransferWithAuthorization message
// with its EIP-712 domain (chains/evm/eip3009 hashes it). Addresses are
// 0x-hex; numbers are base-10 integers.
type TransferAuthorization struct {
	// Domain: the token's EIP-712 name and version, the chain id and the
	// token contract (verifyingContract).
	Name     string   `json:"name"`
	Version  string   `json:"version"`
	ChainID  *big.Int `json:"chainId"`
	Contract string   `json:"verifyingContract"`
	// Asset is the token's symbol ("USDC"), which the spend must name.
	Asset string `json:"asset"`
	// Message.
	From        string   `json:"from"`
	To          string   `json:"to"`
	Value       *big.Int `json:"value"`
	ValidAfter  *big.Int `json:"validAfter"`
	ValidBefore *big.Int `json:"validBefore"`
	// Nonce is 32 bytes (a random or derived identifier, not a counter).
	Nonce [32]byte `json:"nonce"`
}

// TransferAuthorizer signs, checks and settles EIP-3009 transfer
// authorizations (x402's `exact` EVM scheme, docs/x402.md). The EVM
// connectors implement it; other chains do not.
type TransferAuthorizer interface {
	// AuthorizationDomain answers an authorization of asset on this chain
	// with only its EIP-712 domain (Name, Version, ChainID, Contract) and
	// Asset filled, read from the token contract.
	// asset is a symbol from outside a payment request (an x402
	// requirement's invoice), found once among the connector's assets.
	AuthorizationDomain(ctx context.Context, asset string) (TransferAuthorization, error)
	// TokenDomain is AuthorizationDomain of a, one of the connector's own
	// assets (Connector.Assets, checked by identity, never looked up by
	// symbol); anything else is ErrUnknownAsset.
	TokenDomain(ctx context.Context, a Asset) (TransferAuthorization, error)
	// SignAuthorization has from's key sign auth (whose From must be
	// from's address) as a spend of auth.Value of auth.Asset to auth.To
	// under idempotencyKey, which the enclave checks against the owner's
	// policy. It answers the 65-byte signature r ‖ s ‖ v, v 27 or 28.
	SignAuthorization(ctx context.Context, from KeyRef, auth TransferAuthorization, idempotencyKey string) ([]byte, error)
	// AuthorizationUsed says whether auth's nonce was used (or canceled) by
	// its From.
	AuthorizationUsed(ctx context.Context, auth TransferAuthorization) (bool, error)
	// SettleAuthorization submits transferWithAuthorization for auth and
	// sig from submitter (which pays the gas; the tokens move from
	// auth.From to auth.To), under idempotencyKey, and waits until it is
	// mined. A reverted settlement is an error; the result's TxHash is
	// the settlement.
	SettleAuthorization(ctx context.Context, submitter KeyRef, submitterAddress string, auth TransferAuthorization, sig []byte, idempotencyKey string) (TxResult, error)
}
