package stellar

import (
	"context"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
)

// Genesis is the hash of ledger 1 as Horizon serves it: a network is named
// by its passphrase (checked by New), and a standalone network reset under
// the same passphrase starts from another first ledger. veild records it
// on first contact and refuses to work on a network whose genesis changed
// (actors/chain GenesisReader). A Horizon that keeps no history that old
// (404) cannot say: "" (nothing is compared; the passphrase check stands).
func (c *Connector) Genesis(ctx context.Context) (string, error) {
	v, err := c.call(ctx, func() (any, error) { return c.hc.LedgerDetail(1) })
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return "", nil
		}
		return "", c.Unavailable("ledger 1", err)
	}
	return v.(hProtocol.Ledger).Hash, nil
}
