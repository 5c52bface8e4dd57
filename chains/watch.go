package chains

import "context"

// Watch is one invoice a ReferenceScanner looks for: its one-time address,
// its asset and the reference the payer's wallet was asked to list in the
// transaction (Solana Pay's reference; "" if none).
type Watch struct {
	PayTo     string
	Asset     string
	Reference string
}

// ReferenceScanner is implemented by connectors of chains where a plain
// transfer cannot be found by reading the chain as a whole (Solana: no
// one reads every block), so each pending invoice is looked up by its own
// accounts instead, as the Solana Pay specification describes: the
// signatures of its reference (getSignaturesForAddress(reference)) and of
// the account the payment reaches (the one-time address for the native
// asset, its token account for a token). It is optional.
type ReferenceScanner interface {
	// TransfersTo returns what the confirmed, successful transactions
	// found for the watches delivered to their PayTo (every asset: what
	// reached the address is the agent's money). Transactions for which
	// seen answers true are not read again; read lists those it read
	// (failed ones included), which need not be read again either.
	TransfersTo(ctx context.Context, watches []Watch, seen func(txHash string) bool) (transfers []Transfer, read []string, err error)
}
