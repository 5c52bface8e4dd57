package connopts

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/veilhq/veil/chains"
)

// Base is what every connector answers from its chain's identifier,
// explorer template and assets alone; a connector embeds it, so Chain,
// TxLink and Assets are its chains.Connector methods, PaymentTarget its
// payuri.Target method, and Result, Unavailable, Asset and Own its helpers.
type Base struct {
	chain      chains.ID
	explorerTx string
	chainID    uint64
	assets     []chains.Asset
}

// NewBase is the Base of chain, its transaction links made from
// explorerTx (the Config's ExplorerTx; "" makes no links); chainID is the
// chain id payment requests carry (0 off EVM) and assets are the assets
// the connector carries (its own descriptors), the native asset first.
func NewBase(chain chains.ID, explorerTx string, chainID uint64, assets []chains.Asset) Base {
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

// Assets lists the assets the connector carries, the native asset first
// (a copy).
func (b Base) Assets() []chains.Asset { return append([]chains.Asset(nil), b.assets...) }

// NativeAsset is the chain's native asset.
func (b Base) NativeAsset() chains.Asset { return b.assets[0] }

// Asset finds symbol among the connector's assets (chains.AssetBySymbol):
// for what reaches the connector as a symbol from outside a payment
// request (an invoice's asset, a watch, a payment URI), once.
func (b Base) Asset(symbol string) (chains.Asset, error) {
	return chains.AssetBySymbol(b.assets, symbol)
}

// Own checks that a request's asset is exactly one of the connector's own
// (chains.Owns): a connector pays in nothing else.
func (b Base) Own(a chains.Asset) error { return chains.Owns(b.assets, a) }

// PaymentTarget implements payuri.Target: the chain id and token of the
// asset whose symbol is asset (case-insensitively); ok is false for an
// asset the connector does not know.
func (b Base) PaymentTarget(asset string) (chainID uint64, token string, ok bool) {
	a, err := b.Asset(asset)
	if err != nil || strings.TrimSpace(asset) == "" {
		return 0, "", false
	}
	return b.chainID, a.Ref, true
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
