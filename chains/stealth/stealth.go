// Package stealth holds what the stealth-address schemes of Veil share: the
// typed errors every decoder and key operation returns. The schemes live in
// the sub-packages:
//
//   - chains/stealth/secp256k1: ERC-5564 scheme 1 (EVM chains).
//   - chains/stealth/edstealth: DKSAP on ed25519 with an X25519 viewing key
//     (Stellar and Solana).
//
// The construction, every domain-separation string and every byte format are
// written down in docs/stealth.md. The packages do no I/O and import nothing
// else of Veil. No function panics on input: malformed input yields an error
// that matches one of the sentinels below with errors.Is.
package stealth

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by the stealth packages for bad input
// wraps exactly one of them (match with errors.Is).
var (
	// ErrMalformed: wrong length, bad hex, bad base58/StrKey, trailing data.
	ErrMalformed = errors.New("stealth: malformed input")
	// ErrWrongPrefix: a meta-address that does not start with the scheme's
	// prefix (st:eth:0x, st:xlm:, st:sol:), or a key/address of another kind.
	ErrWrongPrefix = errors.New("stealth: wrong prefix")
	// ErrInvalidPoint: a public key that is not on the curve, is the identity,
	// has small order, or is not canonically encoded.
	ErrInvalidPoint = errors.New("stealth: invalid curve point")
	// ErrZeroScalar: a private key or derived scalar that is zero (mod the
	// group order) or out of range.
	ErrZeroScalar = errors.New("stealth: zero or out-of-range scalar")
)

// Errorf wraps sentinel with a formatted detail. It is exported for the
// scheme sub-packages only.
func Errorf(sentinel error, format string, args ...any) error {
	return &Error{Kind: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// Error is the concrete error type: Kind is one of the sentinels above.
type Error struct {
	Kind   error
	Detail string
}

func (e *Error) Error() string { return e.Kind.Error() + ": " + e.Detail }

// Unwrap makes errors.Is(err, ErrMalformed) and friends work.
func (e *Error) Unwrap() error { return e.Kind }
