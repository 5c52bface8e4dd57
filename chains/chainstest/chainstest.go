// Package chainstest helps tests build connector requests: a request's
// asset is the connector's own descriptor (chains.Asset), never a symbol.
package chainstest

import (
	"strings"

	"github.com/veilhq/veil/chains"
)

// Asset is c's own descriptor of symbol ("" is the native asset), found
// as the boundary finds it (chains.AssetBySymbol). For a symbol c does
// not carry it is a made-up token on c's chain, which c does not own and
// must refuse (chains.ErrUnknownAsset, nothing signed).
func Asset(c chains.Carrier, symbol string) chains.Asset {
	own := c.Assets()
	a, err := chains.AssetBySymbol(own, symbol)
	if err != nil {
		var chain chains.ID
		if len(own) > 0 {
			chain = own[0].Chain
		}
		return chains.Asset{Chain: chain, Symbol: strings.ToUpper(strings.TrimSpace(symbol)), Decimals: 18, Ref: "not-configured"}
	}
	return a
}

// Foreign is c's descriptor of symbol with another token identity (ref):
// a request that names a known symbol with a contract, issuer or mint of
// its own choosing, which c must refuse with nothing signed.
func Foreign(c chains.Carrier, symbol, ref string) chains.Asset {
	a := Asset(c, symbol)
	a.Ref = ref
	return a
}
