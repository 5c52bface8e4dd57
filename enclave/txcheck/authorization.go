package txcheck

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
)

// ErrAuthorizationMismatch reports an EIP-3009 authorization whose typed
// data disagrees with the spend it is signed under, or whose digest is not
// the payload to sign.
var ErrAuthorizationMismatch = errors.New("the transfer authorization disagrees with its spend")

// Authorization checks a sign request that carries an EIP-3009 transfer
// authorization (chains.AuthorizationRequest): it must be a spend on an EVM
// chain; Payload must be the authorization's EIP-712 digest, so the
// signature can authorize nothing else; and the authorization must move
// exactly the spend's amount of the spend's asset to the spend's
// recipient. A no-value request carrying one is refused: an authorization
// always moves value. A request without one passes (nothing to check).
//
// What it cannot check: that the contract is really the token the asset
// symbol names (the enclave has no token list; the connector fills both
// from its configuration), and the signer's own address (From): a From
// that is not the key's address yields a signature the token refuses.
func Authorization(req chains.SignRequest) error {
	a := req.Authorization
	if a == nil {
		return nil
	}
	if req.NoValue || req.Spend == nil {
		return fmt.Errorf("%w: a transfer authorization moves value; sign it with a spend", ErrMovesValue)
	}
	s := req.Spend
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrAuthorizationMismatch, fmt.Sprintf(format, args...))
	}
	switch {
	case req.Key.Chain.Family() != chains.FamilyEVM:
		return mismatch("EIP-3009 authorizations exist on EVM chains only, not %s", req.Key.Chain)
	case s.All:
		return mismatch("a spend of everything cannot back an authorization of a fixed value")
	case a.Value == nil || s.Amount.Units().Cmp(a.Value) != 0:
		return mismatch("it moves %v base units, the spend %s", a.Value, s.Amount.Units())
	case !strings.EqualFold(strings.TrimSpace(s.Recipient), a.To):
		return mismatch("it pays %s, the spend names %s", a.To, s.Recipient)
	case !strings.EqualFold(s.Asset, a.Asset):
		return mismatch("it moves %s, the spend %s", a.Asset, s.Asset)
	}
	d, err := eip3009.Digest(*a)
	if err != nil {
		return mismatch("%v", err)
	}
	if !bytes.Equal(d[:], req.Payload) {
		return mismatch("the digest to sign is not the authorization's EIP-712 digest")
	}
	return nil
}
