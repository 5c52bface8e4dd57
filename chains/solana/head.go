package solana

import (
	"context"
	"fmt"
	"time"

	"github.com/gagliardetto/solana-go/rpc"
)

// Head is the node's current slot and its block time (zero when the node
// has no time for it, as the embedded devnet). veild's readiness check
// calls it.
func (c *Connector) Head(ctx context.Context) (uint64, time.Time, error) {
	slot, err := c.rpc.GetSlot(ctx, rpc.CommitmentConfirmed)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("current slot from %s: %w", c.cfg.RPCURL, err)
	}
	var at time.Time
	if t, err := c.rpc.GetBlockTime(ctx, slot); err == nil && t != nil {
		at = t.Time()
	}
	return slot, at, nil
}
