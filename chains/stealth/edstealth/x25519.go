package edstealth

import (
	"crypto/subtle"

	"filippo.io/edwards25519/field"
)

// x25519 computes the RFC 7748 X25519 function into dst (the Montgomery
// ladder of Go's crypto/ecdh, written against filippo.io/edwards25519/field,
// the same field code, so that the scan hot path does not allocate:
// crypto/ecdh allocates a key object and an output slice per call). It
// returns false when the result is all zero (point of small order).
// TestX25519MatchesCryptoECDH checks it against crypto/ecdh.
func x25519(dst, scalar, point *[32]byte) bool {
	var e [32]byte
	copy(e[:], scalar[:])
	e[0] &= 248
	e[31] &= 127
	e[31] |= 64

	var x1, x2, z2, x3, z3, tmp0, tmp1 field.Element
	x1.SetBytes(point[:]) // ignores the top bit, reduces mod p (RFC 7748)
	x2.One()
	x3.Set(&x1)
	z3.One()

	swap := 0
	for pos := 254; pos >= 0; pos-- {
		b := int(e[pos/8]>>uint(pos&7)) & 1
		swap ^= b
		x2.Swap(&x3, swap)
		z2.Swap(&z3, swap)
		swap = b

		tmp0.Subtract(&x3, &z3)
		tmp1.Subtract(&x2, &z2)
		x2.Add(&x2, &z2)
		z2.Add(&x3, &z3)
		z3.Multiply(&tmp0, &x2)
		z2.Multiply(&z2, &tmp1)
		tmp0.Square(&tmp1)
		tmp1.Square(&x2)
		x3.Add(&z3, &z2)
		z2.Subtract(&z3, &z2)
		x2.Multiply(&tmp1, &tmp0)
		tmp1.Subtract(&tmp1, &tmp0)
		z2.Square(&z2)

		z3.Mult32(&tmp1, 121666)
		x3.Square(&x3)
		tmp0.Add(&tmp0, &z3)
		z3.Multiply(&x1, &z2)
		z2.Multiply(&tmp1, &tmp0)
	}
	x2.Swap(&x3, swap)
	z2.Swap(&z3, swap)

	z2.Invert(&z2)
	x2.Multiply(&x2, &z2)
	copy(dst[:], x2.Bytes())
	clear(e[:])
	var zero [32]byte
	return subtle.ConstantTimeCompare(dst[:], zero[:]) == 0
}

var basepointU = [32]byte{9}

// Montgomery u-coordinates of the points of order 1, 2, 4 and 8 (canonical
// encodings); anything ≥ p is rejected before this list is consulted.
var lowOrderU = [][32]byte{
	{}, // 0: order 2 (and the identity's image)
	{1},
	// p-1
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	// order 8
	{0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a, 0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00},
	{0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b, 0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57},
}

// canonicalU reports whether u is the canonical encoding of a field element:
// top bit clear and u < p = 2²⁵⁵−19. X25519 itself ignores the top bit and
// reduces mod p, so without this check one ephemeral key would have several
// encodings that all match (a re-announcement with a different encoding
// would look like a second payment). Cheap enough for the scan hot path.
func canonicalU(u *[32]byte) bool {
	if u[31] < 0x7f {
		return true
	}
	if u[31] > 0x7f {
		return false
	}
	for i := 30; i >= 1; i-- {
		if u[i] != 0xff {
			return true
		}
	}
	return u[0] < 0xed
}

// validMontgomeryU reports whether u is the canonical encoding (< p, top bit
// clear) of a point on Curve25519 itself (not its twist) that is not of small
// order. Used for viewing and ephemeral public keys.
func validMontgomeryU(u *[32]byte) bool {
	if !canonicalU(u) {
		return false
	}
	var x field.Element
	x.SetBytes(u[:])
	for i := range lowOrderU {
		if lowOrderU[i] == *u {
			return false
		}
	}
	// On the curve v² = u³ + A·u² + u iff the right side is a square.
	var u2, rhs, t, one field.Element
	u2.Square(&x)
	rhs.Multiply(&u2, &x)
	t.Mult32(&u2, 486662)
	rhs.Add(&rhs, &t)
	rhs.Add(&rhs, &x)
	one.One()
	_, square := new(field.Element).SqrtRatio(&rhs, &one)
	return square == 1
}
