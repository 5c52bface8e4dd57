package connopts

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/chains"
)

// Base is what every connector answers from its chain's identifier and
// explorer template alone; a connector embeds it, so Chain and TxLink are
// its chains.Connector methods and Result and Unavailable its helpers.
type Base struct {
	chain      chains.ID
	explorerTx string
}

// NewBase is the Base of chain, its transaction links made from
// explorerTx (the Config's ExplorerTx; "" makes no links).
func NewBase(chain chains.ID, explorerTx string) Base {
	return Base{chain: chain, explorerTx: explorerTx}
}

// Chain is the chain's identifier.
func (b Base) Chain() chains.ID { return b.chain }

// TxLink is the explorer link of a transaction ("" without a template).
func (b Base) TxLink(txHash string) string {
	return chains.ExplorerLink(b.explorerTx, txHash)
}

// Result is the chains.TxResult of a transaction: its hash and link.
func (b Base) Result(txHash string) chains.TxResult {
	return chains.TxResult{TxHash: txHash, TxLink: b.TxLink(txHash)}
}

// Unavailable wraps a node's error in chains.ErrUnavailable, naming the
// chain and what failed; a cancelled or expired context is the caller's,
// not the node's, and is returned as it is.
func (b Base) Unavailable(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %s %s: %v", chains.ErrUnavailable, b.chain, what, err)
}
