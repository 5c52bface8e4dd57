package evm

import (
	"context"
	"errors"

	"github.com/ethereum/go-ethereum/common"
)

// Genesis is the hash of block 0 as the node reports it: it changes when
// the chain is reset under the same chain id (Hardhat or Anvil restarted,
// geth --dev with a fresh data directory). veild records it on first
// contact and refuses to work on a chain whose genesis changed
// (actors/chain GenesisReader). The node's own "hash" field is used, not
// one recomputed from the header, so that a chain whose headers carry
// fields go-ethereum does not know keeps one stable value.
func (c *Connector) Genesis(ctx context.Context) (string, error) {
	var b struct {
		Hash *common.Hash `json:"hash"`
	}
	if err := c.rpc.CallContext(ctx, &b, "eth_getBlockByNumber", "0x0", false); err != nil {
		return "", c.Unavailable("genesis block", err)
	}
	if b.Hash == nil {
		return "", c.Unavailable("genesis block", errors.New("the node has no block 0"))
	}
	return b.Hash.Hex(), nil
}

// Development reports a local development node, whose blocks come only
// with transactions (so an old head says nothing about its health): a
// DevChainIDs chain id, or a node that says it automines (Hardhat's
// hardhat_getAutomine, Anvil's anvil_getAutomine). veild's readiness skips
// the head-age check for it.
func (c *Connector) Development(ctx context.Context) bool {
	if DevChainIDs[c.cfg.ChainID] {
		return true
	}
	for _, method := range []string{"hardhat_getAutomine", "anvil_getAutomine"} {
		var on bool
		if err := c.rpc.CallContext(ctx, &on, method); err == nil && on {
			return true
		}
	}
	return false
}
