package stellar

import (
	"context"
	"fmt"
	"time"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
)

// Head is the newest ledger Horizon has ingested and when it closed (zero
// when Horizon does not say, as the embedded devnet). veild's readiness
// check calls it.
func (c *Connector) Head(ctx context.Context) (uint64, time.Time, error) {
	v, err := c.call(ctx, func() (any, error) { return c.hc.Root() })
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("stellar: Horizon root at %s: %w", c.cfg.HorizonURL, err)
	}
	root := v.(hProtocol.Root)
	return uint64(root.HorizonSequence), root.HorizonLatestClosedAt, nil
}
