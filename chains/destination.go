package chains

import "context"

// DestinationPreparer is implemented by connectors on which a fresh
// one-time address must be prepared on chain before a wallet's plain
// transfer can reach it: on Stellar the account must exist and, for a
// token, trust it, which the server's sponsor arranges with CAP-33
// sponsored reserves (docs/chains-stellar.md, "Invoice destinations").
type DestinationPreparer interface {
	// PreparesDestinations says whether PrepareDestination can run (on
	// Stellar: a sponsor is configured).
	PreparesDestinations() bool
	// PrepareDestination makes address, the one-time address of key
	// (key.EphemeralPub set), able to receive asset by a plain transfer.
	// It moves none of the agent's value; idempotencyKey makes it exactly
	// once. Without a sponsor it reports ErrUnavailable.
	PrepareDestination(ctx context.Context, key KeyRef, address, asset, idempotencyKey string) (TxResult, error)
}
