package edstealth

import (
	"github.com/mr-tron/base58"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/veilhq/veil/chains/stealth"
)

// StellarAddress returns the Stellar account id ("G…" StrKey) of an ed25519
// public key.
func StellarAddress(pub [32]byte) string {
	s, err := strkey.Encode(strkey.VersionByteAccountID, pub[:])
	if err != nil { // only for a wrong version byte or length: impossible here
		return ""
	}
	return s
}

// SolanaAddress returns the Solana address (base58) of an ed25519 public key.
func SolanaAddress(pub [32]byte) string { return base58.Encode(pub[:]) }

// Address returns the account address of pub on chain c ("" if c is
// unknown).
func Address(c Chain, pub [32]byte) string {
	switch c {
	case Stellar:
		return StellarAddress(pub)
	case Solana:
		return SolanaAddress(pub)
	}
	return ""
}

// ParseStellarAddress decodes a "G…" account id into its public key.
func ParseStellarAddress(s string) ([32]byte, error) {
	var pub [32]byte
	if len(s) == 0 || s[0] != 'G' {
		return pub, stealth.Errorf(stealth.ErrWrongPrefix, "a Stellar account id starts with G")
	}
	b, err := strkey.Decode(strkey.VersionByteAccountID, s)
	if err != nil || len(b) != 32 {
		return pub, stealth.Errorf(stealth.ErrMalformed, "not a Stellar account id")
	}
	copy(pub[:], b)
	return pub, nil
}

// ParseSolanaAddress decodes a base58 Solana address (32 bytes). It does not
// require the bytes to be a curve point (program-derived addresses are not).
func ParseSolanaAddress(s string) ([32]byte, error) {
	var pub [32]byte
	if len(s) == 0 || len(s) > 44 {
		return pub, stealth.Errorf(stealth.ErrMalformed, "a Solana address has 32 to 44 base58 digits")
	}
	b, err := base58.Decode(s)
	if err != nil || len(b) != 32 {
		return pub, stealth.Errorf(stealth.ErrMalformed, "not a Solana address")
	}
	copy(pub[:], b)
	return pub, nil
}
