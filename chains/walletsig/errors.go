package walletsig

import "fmt"

// Error is a verification failure. Its Error() text is written for the
// person calling the API: it says what was wrong and what to do next, never
// contains a signature or a secret, and can be returned as-is in an HTTP 400
// body. Every Error returned by this package matches exactly one of the
// sentinel kinds below with errors.Is.
type Error struct {
	kind *Error // the sentinel this error is an instance of; nil for a sentinel
	msg  string
}

func (e *Error) Error() string { return e.msg }

// Is makes errors.Is(err, ErrBadMessage) (and the other kinds) true for every
// error of that kind.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return e == t || (e.kind != nil && e.kind == t)
}

// Kind returns the sentinel this error is an instance of (itself for a sentinel).
func (e *Error) Kind() *Error {
	if e.kind == nil {
		return e
	}
	return e.kind
}

// The kinds of verification failure. The text of a sentinel is the generic
// message; errors returned by Verify* carry a more specific one.
var (
	// ErrMissingField: a required request field is empty.
	ErrMissingField = &Error{msg: "a required field is missing: send name, chain, wallet and signature (and message when exporting)"}
	// ErrUnknownChain: the chain is not one Veil supports.
	ErrUnknownChain = &Error{msg: "unknown chain: use one of horizen, ethereum, polygon, base, stellar, solana or all"}
	// ErrBadWallet: the wallet is not a well-formed address of any supported scheme.
	ErrBadWallet = &Error{msg: "wallet is not a valid address: send a 0x EVM address, a G… Stellar account or a base58 Solana public key"}
	// ErrSchemeMismatch: the wallet's scheme does not belong to the chain's family.
	ErrSchemeMismatch = &Error{msg: "wallet does not match the chain: use an EVM wallet for horizen, ethereum, polygon and base, a Stellar wallet for stellar and a Solana wallet for solana"}
	// ErrBadMessage: the signed message is not exactly in the documented
	// format, or names another action, agent, chain or wallet.
	ErrBadMessage = &Error{msg: "signed message does not have the expected format: see docs/signatures.md and sign the exact text"}
	// ErrExpired: the message's Issued At is more than MaxAge in the past.
	ErrExpired = &Error{msg: "signature has expired: Issued At is more than 10 minutes old; sign a new message with the current time"}
	// ErrNotYetValid: the message's Issued At is more than MaxSkew in the future.
	ErrNotYetValid = &Error{msg: "Issued At is in the future: check the signing device's clock, then sign a new message with the current UTC time"}
	// ErrBadSignature: the signature cannot be decoded, has the wrong length,
	// or is a non-canonical (malleable) encoding.
	ErrBadSignature = &Error{msg: "signature is malformed: EVM wallets send a 65-byte hex signature, Stellar base64 or hex, Solana base58, base64 or hex"}
	// ErrSignatureMismatch: the signature is well-formed but was not made by
	// the wallet over this message.
	ErrSignatureMismatch = &Error{msg: "signature does not match the wallet and message: sign the exact message with the owner wallet"}
	// ErrReplayed: the signature (more precisely, the signed message) was
	// already used. This package does not keep the record; the server returns
	// this error when Proof.ReplayKey is already stored.
	ErrReplayed = &Error{msg: "this signature has already been used: sign a new message (with a new Issued At) for each request"}
)

// fail builds an error of the given kind with a specific message.
func fail(kind *Error, format string, args ...any) error {
	return &Error{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// quote renders a user-supplied value for an error message: quoted, and cut
// short so that an error body stays small whatever the client sent.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// Kinds names every error kind, for carrying a verification failure across
// cluster members (actors/msg) and rebuilding it with Rebuild.
func Kinds() map[string]*Error {
	return map[string]*Error{
		"missing-field":      ErrMissingField,
		"unknown-chain":      ErrUnknownChain,
		"bad-wallet":         ErrBadWallet,
		"scheme-mismatch":    ErrSchemeMismatch,
		"bad-message":        ErrBadMessage,
		"expired":            ErrExpired,
		"not-yet-valid":      ErrNotYetValid,
		"bad-signature":      ErrBadSignature,
		"signature-mismatch": ErrSignatureMismatch,
		"replayed":           ErrReplayed,
	}
}

// Rebuild recreates an error of kind with its specific message, as another
// member reported it.
func Rebuild(kind *Error, msg string) *Error {
	return &Error{kind: kind.Kind(), msg: msg}
}
