package evm

import (
	"context"
	"fmt"
	"time"
)

// Head is the node's latest block: its number and timestamp. veild's
// readiness check calls it (the node answers, and its head is fresh).
func (c *Connector) Head(ctx context.Context) (uint64, time.Time, error) {
	h, err := c.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("latest block from %s: %w", c.cfg.RPCURL, err)
	}
	return h.Number.Uint64(), time.Unix(int64(h.Time), 0), nil
}
