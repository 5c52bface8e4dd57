package txcheck

import (
	"bytes"
	"crypto/ed25519"
	"errors"

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/veilhq/veil/chains"
)

// ErrNotActivation reports a Stellar transaction that is not a sponsored
// activation (StellarActivation).
var ErrNotActivation = errors.New("not a sponsored activation of a one-time account")

// StellarActivation recognises the one Stellar transaction a one-time key
// signs without a spend: the activation of its own account under CAP-33
// sponsored reserves, before an invoice is shown (docs/chains-stellar.md,
// "Invoice destinations"). Exactly
//
//	beginSponsoringFutureReserves(P)   source S (the sponsor)
//	createAccount(P, 0)                source S
//	changeTrust(credit asset) …        source P (zero or more)
//	endSponsoringFutureReserves        source P
//
// with the transaction's source S ≠ P, and req.Payload the transaction's
// hash. P's signature authorises only its own operations, which add
// trustlines whose reserves S pays and end the sponsorship: nothing of P's
// moves (P holds nothing yet), and S pays the fee. It answers P's public
// key, which the provider must check is the key it signs with (a
// signature by any other key would be S's or someone's consent to
// sponsor, which this check does not give).
func StellarActivation(req chains.SignRequest) (ed25519.PublicKey, error) {
	if req.Key.Chain.Family() != chains.FamilyStellar || len(req.Unsigned) == 0 || req.Network == "" {
		return nil, ErrNotActivation
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshal(req.Unsigned, &env); err != nil || env.Type != xdr.EnvelopeTypeEnvelopeTypeTx {
		return nil, ErrNotActivation
	}
	h, err := network.HashTransactionInEnvelope(env, req.Network)
	if err != nil || !bytes.Equal(h[:], req.Payload) {
		return nil, ErrNotActivation
	}
	txSrc := env.SourceAccount().ToAccountId().Address()
	src := func(op xdr.Operation) string {
		if op.SourceAccount == nil {
			return txSrc
		}
		return op.SourceAccount.ToAccountId().Address()
	}
	ops := env.Operations()
	if len(ops) < 3 || ops[0].Body.Type != xdr.OperationTypeBeginSponsoringFutureReserves {
		return nil, ErrNotActivation
	}
	p := ops[0].Body.MustBeginSponsoringFutureReservesOp().SponsoredId.Address()
	if p == txSrc || src(ops[0]) == p {
		return nil, ErrNotActivation
	}
	if ops[1].Body.Type != xdr.OperationTypeCreateAccount || src(ops[1]) == p {
		return nil, ErrNotActivation
	}
	if ca := ops[1].Body.MustCreateAccountOp(); ca.Destination.Address() != p || ca.StartingBalance != 0 {
		return nil, ErrNotActivation
	}
	last := len(ops) - 1
	if ops[last].Body.Type != xdr.OperationTypeEndSponsoringFutureReserves || src(ops[last]) != p {
		return nil, ErrNotActivation
	}
	for _, op := range ops[2:last] {
		if op.Body.Type != xdr.OperationTypeChangeTrust || src(op) != p {
			return nil, ErrNotActivation
		}
		if ct := op.Body.MustChangeTrustOp(); ct.Line.Type == xdr.AssetTypeAssetTypeNative || ct.Line.Type == xdr.AssetTypeAssetTypePoolShare {
			return nil, ErrNotActivation
		}
	}
	var aid xdr.AccountId
	if err := aid.SetAddress(p); err != nil || aid.Ed25519 == nil {
		return nil, ErrNotActivation
	}
	k := *aid.Ed25519
	return ed25519.PublicKey(k[:]), nil
}
