// Package names is what the Stellar and Solana connectors' name
// registries share: both index registrations as name → (owner, the 64 raw
// bytes of an ed25519 meta-address in hex), and resolve a name the same way.
package names

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

// Lookup reads the index entry of a parsed name: its meta-address keys in
// hex (128 digits), and whether the name is registered.
type Lookup func(ctx context.Context, name string) (metaHex string, found bool, err error)

// Resolve is a connector's ResolveName: the meta-address registered for
// name on chain (scheme: its ed25519 stealth scheme), or an error matching
// chains.ErrNotFound.
func Resolve(ctx context.Context, name string, chain chains.ID, scheme edstealth.Chain, lookup Lookup) (string, error) {
	n, err := chains.ParseName(name)
	if err != nil {
		return "", err
	}
	metaHex, found, err := lookup(ctx, n)
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("%w: %s%s on %s", chains.ErrNotFound, n, chains.NameSuffix, chain)
	}
	raw, err := hex.DecodeString(metaHex)
	if err != nil || len(raw) != 64 {
		return "", fmt.Errorf("%s: name index entry of %s is corrupt", chain, n)
	}
	m := edstealth.MetaAddress{Chain: scheme}
	copy(m.Spend[:], raw[:32])
	copy(m.View[:], raw[32:])
	return m.String(), nil
}
