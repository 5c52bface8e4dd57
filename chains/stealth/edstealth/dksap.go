// Package ed25519 implements Veil's stealth addresses for Stellar and Solana:
// the dual-key stealth address protocol (DKSAP) on ed25519, with an X25519
// viewing key. docs/stealth.md is the specification; in short:
//
//	spend key:  k_spend (scalar mod L), K_spend = k_spend·B   (ed25519 point)
//	view key:   v (X25519 private key),  V = X25519(v, 9)      (Montgomery u)
//	sender:     r random, R = X25519(r, 9) (published, 32 bytes)
//	            S = X25519(r, V)
//	recipient:  S = X25519(v, R)
//	view tag  = SHA-256(DomainViewTag || S)[0]
//	h         = SHA-256(DomainScalar || 0x00 || S) || SHA-256(DomainScalar || 0x01 || S), read
//	            little-endian as a 512-bit integer, reduced mod L
//	one-time public key P = K_spend + h·B   (the Stellar G… / Solana account)
//	one-time private scalar p = (k_spend + h) mod L
//
// p is a raw scalar, not an RFC 8032 seed: SignWithScalar signs with it, and
// the signatures verify with crypto/ed25519.Verify against P.
//
// Meta-addresses: "st:xlm:" or "st:sol:" + 64 hex digits of K_spend + 64 hex
// digits of V. No function panics on input; errors wrap the sentinels of
// package chains/stealth.
package edstealth

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"strings"

	"filippo.io/edwards25519"

	"github.com/veilhq/veil/chains/stealth"
)

// Domain-separation strings (ASCII, no terminator). Changing any of them
// changes every address: they are part of the format.
const (
	DomainViewTag = "veil/stealth/ed25519-x25519/view-tag/v1"
	DomainScalar  = "veil/stealth/ed25519-x25519/scalar/v1"
	DomainNonce   = "veil/stealth/ed25519/sign-nonce/v1"
)

// Chain selects the meta-address prefix.
type Chain uint8

const (
	Stellar Chain = 1 // "st:xlm:"
	Solana  Chain = 2 // "st:sol:"
)

// Prefix returns the meta-address prefix of the chain ("" if unknown).
func (c Chain) Prefix() string {
	switch c {
	case Stellar:
		return "st:xlm:"
	case Solana:
		return "st:sol:"
	}
	return ""
}

func (c Chain) String() string {
	switch c {
	case Stellar:
		return "stellar"
	case Solana:
		return "solana"
	}
	return "unknown"
}

// MetaAddress is a recipient's published key pair.
type MetaAddress struct {
	Chain Chain
	Spend [32]byte // K_spend: ed25519 public key (compressed Edwards point)
	View  [32]byte // V: X25519 public key (little-endian Montgomery u)
}

// Announcement is what a sender publishes. OneTimePub is the receiving
// account itself; Payload() is what travels beside it.
type Announcement struct {
	OneTimePub   [32]byte // P, an ed25519 public key
	EphemeralPub [32]byte // R, an X25519 public key
	ViewTag      byte
}

// PayloadSize is the size of an announcement's payload: view tag, then R.
const PayloadSize = 33

// Payload returns the 33 bytes a sender publishes with the payment:
// ViewTag || EphemeralPub.
func (a Announcement) Payload() [PayloadSize]byte {
	var p [PayloadSize]byte
	p[0] = a.ViewTag
	copy(p[1:], a.EphemeralPub[:])
	return p
}

// Keys is a recipient's full key set.
type Keys struct {
	SpendScalar [32]byte // k_spend, canonical little-endian scalar mod L
	ViewPriv    [32]byte // v, an X25519 private key
	Meta        MetaAddress
}

// ParseMetaAddress decodes "st:xlm:<64 hex><64 hex>" or "st:sol:…" (hex of
// either case). The spending key must be a canonical ed25519 point in the
// prime-order subgroup (not the identity, no small-order component); the
// viewing key a canonical Curve25519 u-coordinate on the curve, not of small
// order.
func ParseMetaAddress(s string) (MetaAddress, error) {
	var m MetaAddress
	switch {
	case strings.HasPrefix(s, Stellar.Prefix()):
		m.Chain = Stellar
	case strings.HasPrefix(s, Solana.Prefix()):
		m.Chain = Solana
	default:
		return m, stealth.Errorf(stealth.ErrWrongPrefix, "meta-address must start with %q or %q", Stellar.Prefix(), Solana.Prefix())
	}
	h := s[len(m.Chain.Prefix()):]
	if len(h) != 128 {
		return MetaAddress{}, stealth.Errorf(stealth.ErrMalformed, "meta-address has %d hex digits, want 128", len(h))
	}
	var raw [64]byte
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return MetaAddress{}, stealth.Errorf(stealth.ErrMalformed, "meta-address is not hex")
	}
	copy(m.Spend[:], raw[:32])
	copy(m.View[:], raw[32:])
	if err := m.Validate(); err != nil {
		return MetaAddress{}, err
	}
	return m, nil
}

// ParseMetaAddressFor parses s and also requires it to be for chain c.
func ParseMetaAddressFor(c Chain, s string) (MetaAddress, error) {
	if c.Prefix() == "" || !strings.HasPrefix(s, c.Prefix()) {
		return MetaAddress{}, stealth.Errorf(stealth.ErrWrongPrefix, "meta-address for %s must start with %q", c, c.Prefix())
	}
	return ParseMetaAddress(s)
}

// Validate checks both keys (see ParseMetaAddress) and the chain.
func (m MetaAddress) Validate() error {
	if m.Chain.Prefix() == "" {
		return stealth.Errorf(stealth.ErrWrongPrefix, "unknown chain %d", m.Chain)
	}
	if _, err := decodeSpendKey(&m.Spend, true); err != nil {
		return err
	}
	if !validMontgomeryU(&m.View) {
		return stealth.Errorf(stealth.ErrInvalidPoint, "viewing key is not a valid X25519 public key")
	}
	return nil
}

// String encodes the meta-address with lower-case hex.
func (m MetaAddress) String() string {
	p := m.Chain.Prefix()
	buf := make([]byte, len(p)+128)
	copy(buf, p)
	hex.Encode(buf[len(p):], m.Spend[:])
	hex.Encode(buf[len(p)+64:], m.View[:])
	return string(buf)
}

var inv8 = func() *edwards25519.Scalar {
	var eight [32]byte
	eight[0] = 8
	s, _ := edwards25519.NewScalar().SetCanonicalBytes(eight[:])
	return s.Invert(s)
}()

// decodeSpendKey decodes a canonical ed25519 point that is not of small
// order; with subgroup it also requires the point to be in the prime-order
// subgroup (one extra scalar multiplication).
func decodeSpendKey(b *[32]byte, subgroup bool) (*edwards25519.Point, error) {
	p, err := new(edwards25519.Point).SetBytes(b[:])
	if err != nil {
		return nil, stealth.Errorf(stealth.ErrInvalidPoint, "spending key is not an ed25519 point")
	}
	var enc [32]byte
	copy(enc[:], p.Bytes())
	if enc != *b {
		return nil, stealth.Errorf(stealth.ErrInvalidPoint, "spending key is not canonically encoded")
	}
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return nil, stealth.Errorf(stealth.ErrInvalidPoint, "spending key has small order")
	}
	if subgroup {
		// P is torsion-free iff 8·((8⁻¹ mod L)·P) = P.
		q := new(edwards25519.Point).ScalarMult(inv8, p)
		if q.MultByCofactor(q).Equal(p) != 1 {
			return nil, stealth.Errorf(stealth.ErrInvalidPoint, "spending key has a small-order component")
		}
	}
	return p, nil
}

func decodeScalar(b *[32]byte) (*edwards25519.Scalar, error) {
	s, err := edwards25519.NewScalar().SetCanonicalBytes(b[:])
	if err != nil {
		return nil, stealth.Errorf(stealth.ErrZeroScalar, "scalar is not canonical (≥ L)")
	}
	if s.Equal(edwards25519.NewScalar()) == 1 {
		return nil, stealth.Errorf(stealth.ErrZeroScalar, "scalar is zero")
	}
	return s, nil
}

// KeysFromSeeds derives a key set from two 32-byte seeds (the enclave derives
// them deterministically) for chain c. The spending key is the RFC 8032 key
// of spendSeed: k_spend = clamp(SHA-512(spendSeed)[:32]) mod L, so K_spend
// equals crypto/ed25519.NewKeyFromSeed(spendSeed).Public() and the spend key
// is also an ordinary account key. The viewing key is viewSeed used as an
// X25519 private key.
func KeysFromSeeds(c Chain, spendSeed, viewSeed [32]byte) (Keys, error) {
	if c.Prefix() == "" {
		return Keys{}, stealth.Errorf(stealth.ErrWrongPrefix, "unknown chain %d", c)
	}
	h := sha512.Sum512(spendSeed[:])
	s, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	clear(h[:])
	if err != nil || s.Equal(edwards25519.NewScalar()) == 1 {
		return Keys{}, stealth.Errorf(stealth.ErrZeroScalar, "spending seed yields a zero scalar")
	}
	k := Keys{ViewPriv: viewSeed, Meta: MetaAddress{Chain: c}}
	copy(k.SpendScalar[:], s.Bytes())
	copy(k.Meta.Spend[:], new(edwards25519.Point).ScalarBaseMult(s).Bytes())
	if !x25519(&k.Meta.View, &viewSeed, &basepointU) {
		return Keys{}, stealth.Errorf(stealth.ErrZeroScalar, "viewing seed yields no public key")
	}
	return k, nil
}

// PublicKeyFromScalar returns scalar·B, the ed25519 public key of a raw
// scalar (e.g. a one-time private scalar).
func PublicKeyFromScalar(scalar [32]byte) ([32]byte, error) {
	s, err := decodeScalar(&scalar)
	if err != nil {
		return [32]byte{}, err
	}
	var out [32]byte
	copy(out[:], new(edwards25519.Point).ScalarBaseMult(s).Bytes())
	return out, nil
}

// ParseEphemeralPub decodes an announced ephemeral key: exactly 32 bytes, a
// canonical X25519 public key on Curve25519, not of small order.
func ParseEphemeralPub(b []byte) ([32]byte, error) {
	var e [32]byte
	if len(b) != 32 {
		return e, stealth.Errorf(stealth.ErrMalformed, "ephemeral public key has %d bytes, want 32", len(b))
	}
	copy(e[:], b)
	if !validMontgomeryU(&e) {
		return [32]byte{}, stealth.Errorf(stealth.ErrInvalidPoint, "ephemeral key is not a valid X25519 public key")
	}
	return e, nil
}

// DecodeAnnouncement builds an Announcement from the receiving account's
// 32-byte public key and the 33-byte payload (ViewTag || EphemeralPub).
func DecodeAnnouncement(oneTimePub, payload []byte) (Announcement, error) {
	var a Announcement
	if len(oneTimePub) != 32 {
		return a, stealth.Errorf(stealth.ErrMalformed, "one-time public key has %d bytes, want 32", len(oneTimePub))
	}
	if len(payload) != PayloadSize {
		return a, stealth.Errorf(stealth.ErrMalformed, "announcement payload has %d bytes, want %d", len(payload), PayloadSize)
	}
	copy(a.OneTimePub[:], oneTimePub)
	if _, err := decodeSpendKey(&a.OneTimePub, false); err != nil {
		return Announcement{}, stealth.Errorf(stealth.ErrInvalidPoint, "one-time key is not a valid ed25519 public key")
	}
	e, err := ParseEphemeralPub(payload[1:])
	if err != nil {
		return Announcement{}, err
	}
	a.ViewTag = payload[0]
	a.EphemeralPub = e
	return a, nil
}

// Generate derives a one-time address for meta with a fresh ephemeral key
// read from rand (crypto/rand.Reader in production).
func Generate(meta MetaAddress, rand io.Reader) (Announcement, error) {
	var r [32]byte
	if _, err := io.ReadFull(rand, r[:]); err != nil {
		return Announcement{}, err
	}
	defer clear(r[:])
	return GenerateWithEphemeral(meta, r)
}

// GenerateWithEphemeral derives the one-time address for meta with the given
// ephemeral X25519 private key r (any 32 bytes; X25519 clamps it).
func GenerateWithEphemeral(meta MetaAddress, ephPriv [32]byte) (Announcement, error) {
	var a Announcement
	spend, err := decodeSpendKey(&meta.Spend, true)
	if err != nil {
		return a, err
	}
	if !validMontgomeryU(&meta.View) {
		return a, stealth.Errorf(stealth.ErrInvalidPoint, "viewing key is not a valid X25519 public key")
	}
	var S [32]byte
	defer clear(S[:])
	if !x25519(&a.EphemeralPub, &ephPriv, &basepointU) || !x25519(&S, &ephPriv, &meta.View) {
		return Announcement{}, stealth.Errorf(stealth.ErrInvalidPoint, "X25519 produced the zero point")
	}
	a.ViewTag = viewTag(&S)
	P, ok := oneTimeKey(spend, &S)
	if !ok {
		return Announcement{}, stealth.Errorf(stealth.ErrZeroScalar, "one-time key is the identity")
	}
	a.OneTimePub = P
	return a, nil
}

// Check reports whether ann pays the recipient with viewing private key
// viewPriv and spending public key spendPub. It costs one X25519 and one
// SHA-256 when the view tag differs.
func Check(viewPriv [32]byte, spendPub [32]byte, ann Announcement) (bool, error) {
	spend, err := decodeSpendKey(&spendPub, false)
	if err != nil {
		return false, err
	}
	var S [32]byte
	defer clear(S[:])
	if !canonicalU(&ann.EphemeralPub) || !x25519(&S, &viewPriv, &ann.EphemeralPub) {
		return false, stealth.Errorf(stealth.ErrInvalidPoint, "ephemeral key is not canonical or has small order")
	}
	return checkShared(spend, &S, &ann), nil
}

// checkShared finishes a check once S is known.
func checkShared(spend *edwards25519.Point, S *[32]byte, ann *Announcement) bool {
	if viewTag(S) != ann.ViewTag {
		return false
	}
	P, ok := oneTimeKey(spend, S)
	return ok && subtle.ConstantTimeCompare(P[:], ann.OneTimePub[:]) == 1
}

// DeriveStealthPrivateKey returns the one-time private scalar
// p = (k_spend + h) mod L (canonical little-endian) of the account announced
// with ephPub. Sign with SignWithScalar.
func DeriveStealthPrivateKey(spendScalar, viewPriv [32]byte, ephPub [32]byte) ([32]byte, error) {
	k, err := decodeScalar(&spendScalar)
	if err != nil {
		return [32]byte{}, err
	}
	var S [32]byte
	defer clear(S[:])
	if !canonicalU(&ephPub) || !x25519(&S, &viewPriv, &ephPub) {
		return [32]byte{}, stealth.Errorf(stealth.ErrInvalidPoint, "ephemeral key is not canonical or has small order")
	}
	h := hashScalar(&S)
	p := edwards25519.NewScalar().Add(k, h)
	if p.Equal(edwards25519.NewScalar()) == 1 {
		return [32]byte{}, stealth.Errorf(stealth.ErrZeroScalar, "one-time scalar is zero")
	}
	var out [32]byte
	copy(out[:], p.Bytes())
	return out, nil
}

func viewTag(S *[32]byte) byte {
	var buf [len(DomainViewTag) + 32]byte
	copy(buf[:], DomainViewTag)
	copy(buf[len(DomainViewTag):], S[:])
	d := sha256.Sum256(buf[:])
	clear(buf[:])
	return d[0]
}

func hashScalar(S *[32]byte) *edwards25519.Scalar {
	return hashScalarInto(new(edwards25519.Scalar), S)
}

// hashScalarInto sets h to the scalar h of S (see the package doc) and
// returns it.
func hashScalarInto(h *edwards25519.Scalar, S *[32]byte) *edwards25519.Scalar {
	var buf [len(DomainScalar) + 1 + 32]byte
	copy(buf[:], DomainScalar)
	copy(buf[len(DomainScalar)+1:], S[:])
	var wide [64]byte
	buf[len(DomainScalar)] = 0
	d0 := sha256.Sum256(buf[:])
	buf[len(DomainScalar)] = 1
	d1 := sha256.Sum256(buf[:])
	copy(wide[:32], d0[:])
	copy(wide[32:], d1[:])
	h.SetUniformBytes(wide[:]) // 64 bytes: cannot fail
	clear(buf[:])
	clear(wide[:])
	return h
}

// oneTimeKey returns the encoding of K_spend + h·B; false if it is the
// identity.
func oneTimeKey(spend *edwards25519.Point, S *[32]byte) ([32]byte, bool) {
	var h edwards25519.Scalar
	var P, id edwards25519.Point
	hashScalarInto(&h, S)
	P.ScalarBaseMult(&h)
	P.Add(&P, spend)
	var out [32]byte
	id.Set(edwards25519.NewIdentityPoint())
	if P.Equal(&id) == 1 {
		return out, false
	}
	copy(out[:], P.Bytes())
	return out, true
}
