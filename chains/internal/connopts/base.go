package connopts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/veilhq/veil/chains"
)

// Base is what every connector answers from its chain's identifier,
// explorer template and assets alone; a connector embeds it, so Chain and
// TxLink are its chains.Connector methods, PaymentTarget its payuri.Target
// method, and Result and Unavailable its helpers.
type Base struct {
	chain      chains.ID
	explorerTx string
	chainID    uint64
	assets     []Asset
}

// Asset is an asset a payment request may name on the chain: its symbol
// and its token reference (a contract address, a mint, an issuer; "" for
// the native asset).
type Asset struct {
	Symbol, Token string
}

// NewBase is the Base of chain, its transaction links made from
// explorerTx (the Config's ExplorerTx; "" makes no links); chainID is the
// chain id payment requests carry (0 off EVM) and assets are the assets
// they may name, the native asset first.
func NewBase(chain chains.ID, explorerTx string, chainID uint64, assets []Asset) Base {
	return Base{chain: chain, explorerTx: explorerTx, chainID: chainID, assets: assets}
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

// PaymentTarget implements payuri.Target: the chain id and token of the
// asset whose symbol is asset (case-insensitively); ok is false for an
// asset the connector does not know.
func (b Base) PaymentTarget(asset string) (chainID uint64, token string, ok bool) {
	for _, a := range b.assets {
		if strings.EqualFold(a.Symbol, asset) {
			return b.chainID, a.Token, true
		}
	}
	return 0, "", false
}

// Unavailable wraps a node's error in chains.ErrUnavailable, naming the
// chain and what failed; a cancelled or expired context is the caller's,
// not the node's, and is returned as it is. It is for reads and for the
// steps of a write before its transaction is recorded: once it is,
// every failure to learn its outcome is OutcomeUnknown.
func (b Base) Unavailable(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %s %s: %v", chains.ErrUnavailable, b.chain, what, err)
}

// OutcomeUnknown is the error of a write whose transaction txHash is
// recorded under key but whose outcome err left unknown (the node's answer
// lost, a transport failure after the bytes may have left, a time-out, the
// caller's context ended): chains.ErrOutcomeUnknown with the hash, never
// chains.ErrUnavailable, whatever err is. An err that already is one (of
// this or another key) is returned as it is.
func (b Base) OutcomeUnknown(key, txHash, what string, err error) error {
	var ou *chains.OutcomeUnknownError
	if errors.As(err, &ou) {
		return err
	}
	if what != "" {
		err = fmt.Errorf("%s: %w", what, err)
	}
	return chains.OutcomeUnknown(b.chain, key, txHash, err)
}
