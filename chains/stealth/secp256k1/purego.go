package secp256k1

import (
	dcr "github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// The pure-Go implementation (decred) of the four curve operations. It is the
// backend of builds without cgo, and the reference the cgo backend is tested
// against. All functions return false on invalid input and never panic.

func pgDecompress(in *[33]byte, xy *[64]byte) bool {
	if in[0] != 2 && in[0] != 3 {
		return false
	}
	var x, y dcr.FieldVal
	if overflow := x.SetByteSlice(in[1:]); overflow {
		return false
	}
	if !dcr.DecompressY(&x, in[0] == 3, &y) {
		return false
	}
	x.Normalize()
	y.Normalize()
	x.PutBytesUnchecked(xy[:32])
	y.PutBytesUnchecked(xy[32:])
	return true
}

// pgLoad reads affine x||y and checks that it is on the curve.
func pgLoad(xy *[64]byte, p *dcr.JacobianPoint) bool {
	if p.X.SetByteSlice(xy[:32]) || p.Y.SetByteSlice(xy[32:]) {
		return false
	}
	p.Z.SetInt(1)
	// y² = x³ + 7
	var lhs, rhs dcr.FieldVal
	lhs.SquareVal(&p.Y).Normalize()
	rhs.SquareVal(&p.X).Mul(&p.X).AddInt(7).Normalize()
	return lhs.Equals(&rhs)
}

func pgScalar(k *[32]byte, s *dcr.ModNScalar) bool {
	overflow := s.SetBytes(k)
	return overflow == 0 && !s.IsZero()
}

func pgStore(p *dcr.JacobianPoint, xy *[64]byte) bool {
	if p.Z.Normalize().IsZero() || (p.X.Normalize().IsZero() && p.Y.Normalize().IsZero()) {
		return false
	}
	p.ToAffine()
	p.X.PutBytesUnchecked(xy[:32])
	p.Y.PutBytesUnchecked(xy[32:])
	return true
}

func pgECDH(xy *[64]byte, k *[32]byte, out *[33]byte) bool {
	var p, r dcr.JacobianPoint
	var s dcr.ModNScalar
	if !pgLoad(xy, &p) || !pgScalar(k, &s) {
		return false
	}
	dcr.ScalarMultNonConst(&s, &p, &r)
	var rxy [64]byte
	if !pgStore(&r, &rxy) {
		return false
	}
	out[0] = 2 | rxy[63]&1
	copy(out[1:], rxy[:32])
	return true
}

func pgBaseMult(k *[32]byte, xy *[64]byte) bool {
	var s dcr.ModNScalar
	if !pgScalar(k, &s) {
		return false
	}
	var r dcr.JacobianPoint
	dcr.ScalarBaseMultNonConst(&s, &r)
	return pgStore(&r, xy)
}

func pgTweakAdd(xy *[64]byte, t *[32]byte, out *[64]byte) bool {
	var p, q, r dcr.JacobianPoint
	var s dcr.ModNScalar
	if !pgLoad(xy, &p) || !pgScalar(t, &s) {
		return false
	}
	dcr.ScalarBaseMultNonConst(&s, &q)
	dcr.AddNonConst(&p, &q, &r)
	return pgStore(&r, out)
}
