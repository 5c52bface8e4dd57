package chains

// SendRequest is one stealth payment as its requester states it: the
// explicit spend (asset, amount, recipient, idempotency key) that the
// owner's approval rules, the connector and the enclave's policy all read.
// The amount is parsed once, where the asset is known; a connector rescales
// it to its own base units (Amount.In) and never parses it again.
type SendRequest struct {
	Chain ID
	// Asset is the asset's symbol ("ETH", "USDC"); "" is the chain's
	// native asset.
	Asset  string
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
	From   string
	Asset  string
	Amount Amount
	// All withdraws everything From holds of Asset; Amount is then zero.
	All            bool
	To             string
	IdempotencyKey string
}
