package chains

import (
	"fmt"
	"math/big"
)

// SendRequest is one stealth payment as its requester states it: the
// explicit spend (asset, amount, recipient, idempotency key) that the
// owner's approval rules, the connector and the enclave's policy all read.
// The amount is parsed once, where the asset is known; a connector rescales
// it to its own base units (Amount.In) and never parses it again. The
// asset is the connector's own descriptor, resolved where the request was
// made (Asset): the connector checks that it is one of its own and never
// looks a symbol up.
type SendRequest struct {
	Chain  ID
	Asset  Asset
	Amount Amount
	// To is the recipient's meta-address.
	To string
	// IdempotencyKey makes a retry with the same key return the first
	// result instead of paying again; "" lets the connector choose one
	// (no retry is then recognised).
	IdempotencyKey string
}

// WithdrawRequest spends a received stealth payment: Amount (or, with
// All, everything less fees) of Asset from the one-time address From to
// the plain address To.
type WithdrawRequest struct {
	Chain ID
	// From is the payment's stealth (one-time) address.
	From string
	// Asset is the connector's own descriptor, as in SendRequest.
	Asset  Asset
	Amount Amount
	// All withdraws everything From holds of Asset; Amount is then zero.
	All            bool
	To             string
	IdempotencyKey string
	// Sides, when set, is run around the signing of everything else the
	// withdrawal moves (the relayer's fee, the native rest): the payer's
	// record of each (RecordSide). It is a hook of the caller in this
	// process, never sent anywhere.
	Sides SideRecorder `json:"-"`
}

// Units is the payment's amount in base units of its asset, refused
// (ErrInvalidAmount) unless it is positive and exact there.
func (r SendRequest) Units() (*big.Int, error) {
	return positiveIn(r.Amount, r.Asset.Decimals)
}

// Units is the withdrawal's amount in base units of its asset; nil for
// All.
func (r WithdrawRequest) Units() (*big.Int, error) {
	if r.All {
		if r.Amount.Sign() != 0 {
			return nil, fmt.Errorf("%w: a withdrawal of everything also gives an amount (%s)", ErrInvalidAmount, r.Amount)
		}
		return nil, nil
	}
	return positiveIn(r.Amount, r.Asset.Decimals)
}

func positiveIn(a Amount, decimals int) (*big.Int, error) {
	if a.Sign() <= 0 {
		return nil, fmt.Errorf("%w %q: must be greater than zero", ErrInvalidAmount, a.String())
	}
	return a.In(decimals)
}
