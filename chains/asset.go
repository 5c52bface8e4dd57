package chains

import (
	"fmt"
	"strings"
)

// Asset is one asset as a connector carries it: the connector's own
// descriptor (Connector.Assets), the native asset first. A payment's asset
// is resolved to one of these once, where a symbol enters Veil (a tool's
// arguments, an HTTP request, a stored row: AssetBySymbol), and travels
// typed from there in SendRequest and WithdrawRequest; a connector pays
// in it only when it is exactly one of its own (Owns), never by looking
// the symbol up again, so a request cannot name a contract of its choice.
type Asset struct {
	Chain ID `json:"chain"`
	// Symbol is the asset's symbol, upper case ("ETH", "USDC", "XLM").
	Symbol string `json:"symbol"`
	// Decimals is the precision of its base units on this chain.
	Decimals int `json:"decimals"`
	// Ref is the token's identity on chain: the ERC-20 contract address
	// (checksummed hex), the Stellar issuer account, the SPL mint; "" for
	// the chain's native asset.
	Ref string `json:"ref,omitempty"`
}

// Native reports whether a is its chain's native asset.
func (a Asset) Native() bool { return a.Ref == "" }

// String is the symbol, and the token's identity when it is one.
func (a Asset) String() string {
	if a.Native() {
		return a.Symbol
	}
	return a.Symbol + " (" + a.Ref + ")"
}

// Spend is the spend of amount of a under key, by agent, to recipient:
// the one place a signing request's asset (Spend.Asset, the symbol the
// enclave's policy compares) is derived from the typed asset.
func (a Asset) Spend(key, agentID string, amount Amount, recipient string) Spend {
	return Spend{Key: key, AgentID: agentID, Chain: a.Chain, Asset: a.Symbol, Amount: amount, Recipient: recipient}
}

// Carrier is what lists a chain's assets: a Connector, a chain actor.
type Carrier interface {
	Assets() []Asset
}

// AssetBySymbol finds symbol (any case, surrounding spaces ignored; "" is
// the native asset, assets[0]) among assets, a connector's list: the one
// lookup of an asset by its symbol, made where the symbol enters Veil.
// An unknown symbol is ErrUnknownAsset naming the ones there are.
func AssetBySymbol(assets []Asset, symbol string) (Asset, error) {
	if len(assets) == 0 {
		return Asset{}, fmt.Errorf("%w %q: no assets are configured", ErrUnknownAsset, clipName(symbol))
	}
	s := strings.ToUpper(strings.TrimSpace(symbol))
	if s == "" {
		return assets[0], nil
	}
	known := make([]string, len(assets))
	for i, a := range assets {
		if a.Symbol == s {
			return a, nil
		}
		known[i] = a.Symbol
	}
	return Asset{}, fmt.Errorf("%w %q on %s: use one of %s", ErrUnknownAsset, clipName(symbol), assets[0].Chain, strings.Join(known, ", "))
}

// Owns checks that a is exactly one of assets (a connector's own list):
// same chain, symbol, decimals and token identity. Anything else — a
// descriptor nobody resolved, another chain's, a known symbol with a
// contract, issuer or mint of the caller's choice — is ErrUnknownAsset,
// and the connector signs nothing.
func Owns(assets []Asset, a Asset) error {
	for _, own := range assets {
		if own == a {
			return nil
		}
	}
	if a.Symbol == "" {
		return fmt.Errorf("%w: the request names no asset", ErrUnknownAsset)
	}
	return fmt.Errorf("%w: %s with %d decimals on %s is not one of the assets configured there", ErrUnknownAsset, a, a.Decimals, a.Chain)
}
