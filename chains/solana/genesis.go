package solana

import "context"

// Genesis is the node's genesis hash (getGenesisHash): it changes when the
// cluster is reset (solana-test-validator --reset). veild records it on
// first contact and refuses to work on a chain whose genesis changed
// (actors/chain GenesisReader).
func (c *Connector) Genesis(ctx context.Context) (string, error) {
	h, err := c.rpc.GetGenesisHash(ctx)
	if err != nil {
		return "", c.Unavailable("getGenesisHash", err)
	}
	return h.String(), nil
}
