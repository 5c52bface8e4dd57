package chains

import (
	"context"
	"errors"
)

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

// DestinationReclaimer is implemented by connectors whose prepared
// destinations hold something of the server's (on Stellar the sponsor's
// reserves: 1 XLM for the account, 0.5 per trustline) until they close.
// The invoice maintenance (actors/scanner) calls it for the destination
// of an invoice that expired or was cancelled unpaid, of a paid invoice
// whose money was withdrawn, and of a create_invoice that failed after the
// activation (docs/chains-stellar.md, "Reclaiming a destination").
type DestinationReclaimer interface {
	// ReclaimDestination closes address, a destination PrepareDestination
	// prepared (key.EphemeralPub set), when it holds nothing, giving back
	// what the sponsor locked in it. It is an explicit spend of key's
	// agent (everything the address holds, to the sponsor: nothing, as it
	// is empty), exactly once per idempotencyKey. An address already
	// closed answers an empty TxResult and no error; one that holds value
	// (a late payment, money not yet withdrawn) answers ErrNotEmpty and
	// changes nothing. Without a sponsor it reports ErrUnavailable.
	ReclaimDestination(ctx context.Context, key KeyRef, address, idempotencyKey string) (TxResult, error)
}

// ErrNotEmpty reports a destination that still holds value, so it is not
// closed (DestinationReclaimer).
var ErrNotEmpty = errors.New("the address still holds value")
