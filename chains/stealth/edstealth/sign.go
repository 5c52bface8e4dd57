package edstealth

import (
	"crypto/sha512"

	"filippo.io/edwards25519"
)

// SignatureSize is the size of an ed25519 signature.
const SignatureSize = 64

// SignWithScalar signs msg with the raw scalar a (canonical little-endian,
// nonzero), producing a standard RFC 8032 Ed25519 signature R || S for the
// public key A = a·B: it verifies with crypto/ed25519.Verify(A, msg, sig), and
// with the Stellar and Solana SDKs. Only the nonce differs from RFC 8032
// (which derives it from the seed's second hash half, unknown for a stealth
// scalar): it is deterministic,
//
//	r = SHA-512(DomainNonce || a || A || msg) mod L
//
// then R = r·B, k = SHA-512(R || A || msg) mod L, S = (r + k·a) mod L.
func SignWithScalar(scalar [32]byte, msg []byte) ([]byte, error) {
	a, err := decodeScalar(&scalar)
	if err != nil {
		return nil, err
	}
	A := new(edwards25519.Point).ScalarBaseMult(a).Bytes()

	h := sha512.New()
	h.Write([]byte(DomainNonce))
	h.Write(scalar[:])
	h.Write(A)
	h.Write(msg)
	var digest [64]byte
	h.Sum(digest[:0])
	r, _ := edwards25519.NewScalar().SetUniformBytes(digest[:])
	R := new(edwards25519.Point).ScalarBaseMult(r).Bytes()

	h.Reset()
	h.Write(R)
	h.Write(A)
	h.Write(msg)
	h.Sum(digest[:0])
	k, _ := edwards25519.NewScalar().SetUniformBytes(digest[:])

	S := edwards25519.NewScalar().MultiplyAdd(k, a, r)
	sig := make([]byte, 0, SignatureSize)
	sig = append(sig, R...)
	sig = append(sig, S.Bytes()...)
	clear(digest[:])
	return sig, nil
}
