package state

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// StealthAddresses is an AddressGenerator over the agent's meta-addresses
// (chain → meta-address): each call derives a fresh one-time address with
// an ephemeral key read from rand (crypto/rand.Reader in production). EVM
// addresses come EIP-55 checksummed with the 33-byte compressed ephemeral
// key; Stellar (G…) and Solana (base58) with the 32-byte X25519 one.
func StealthAddresses(meta map[chains.ID]string, rand io.Reader) AddressGenerator {
	return func(ctx context.Context, c chains.ID) (string, []byte, error) {
		m, ok := meta[c]
		if !ok || m == "" {
			return "", nil, fmt.Errorf("%w: no meta-address on %s", ErrInvalid, c)
		}
		switch c.Family() {
		case chains.FamilyEVM:
			ma, err := secp256k1.ParseMetaAddress(m)
			if err != nil {
				return "", nil, err
			}
			ann, err := secp256k1.Generate(ma, rand)
			if err != nil {
				return "", nil, err
			}
			addr, err := tools.ParseAddress(c, "0x"+hex.EncodeToString(ann.StealthAddress[:]))
			if err != nil {
				return "", nil, err
			}
			return addr, ann.EphemeralPub[:], nil
		default:
			ec := edstealth.Stellar
			if c == chains.Solana {
				ec = edstealth.Solana
			}
			ma, err := edstealth.ParseMetaAddressFor(ec, m)
			if err != nil {
				return "", nil, err
			}
			ann, err := edstealth.Generate(ma, rand)
			if err != nil {
				return "", nil, err
			}
			return edstealth.Address(ec, ann.OneTimePub), ann.EphemeralPub[:], nil
		}
	}
}
