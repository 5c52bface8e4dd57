// Package secp256k1 implements ERC-5564 stealth addresses, scheme 1
// (secp256k1 with a 1-byte view tag), for Veil's EVM chains.
//
// Construction (ERC-5564, identical to ScopeLift's reference SDK, which the
// committed vectors in testdata/ come from):
//
//	S = r·P_view                 (r: ephemeral private key, sender side)
//	  = p_view·R                 (R = r·G: ephemeral public key, recipient side)
//	s_h = keccak256(compressed(S))           (33-byte SEC1 encoding of S)
//	view tag = s_h[0]
//	P_stealth = P_spend + s_h·G,  address = keccak256(x||y of P_stealth)[12:]
//	p_stealth = (p_spend + s_h) mod n
//
// Meta-address: "st:eth:0x" + hex(compressed P_spend) + hex(compressed P_view)
// (66 bytes, 132 hex digits). See docs/stealth.md.
//
// Every function validates its input (points on the curve, scalars in
// 1..n-1) and returns errors wrapping the sentinels of package
// chains/stealth; none panics on input.
package secp256k1

import (
	"bytes"
	"crypto/subtle"
	"encoding/hex"
	"hash"
	"io"
	"strings"
	"sync"

	dcr "github.com/decred/dcrd/dcrec/secp256k1/v4"
	"golang.org/x/crypto/sha3"

	"github.com/veilhq/veil/chains/stealth"
)

// Prefix of every meta-address of this scheme.
const Prefix = "st:eth:0x"

// SchemeID is the ERC-5564 scheme identifier (the Announcer's schemeId).
const SchemeID = 1

// MetaAddress is a recipient's published pair of compressed public keys.
type MetaAddress struct {
	Spend [33]byte // compressed spending public key
	View  [33]byte // compressed viewing public key
}

// Announcement is what a sender publishes (ERC-5564 Announcement event):
// the one-time address, the ephemeral public key and the view tag (the first
// byte of the event's metadata).
type Announcement struct {
	StealthAddress [20]byte
	EphemeralPub   [33]byte // compressed
	ViewTag        byte
}

// Keys is a recipient's full key set.
type Keys struct {
	SpendPriv [32]byte // big-endian scalar
	ViewPriv  [32]byte // big-endian scalar
	Meta      MetaAddress
}

// ParseMetaAddress decodes "st:eth:0x<66 hex spend><66 hex view>" (hex
// digits of either case) and checks both keys are points on the curve.
func ParseMetaAddress(s string) (MetaAddress, error) {
	var m MetaAddress
	if !strings.HasPrefix(s, Prefix) {
		return m, stealth.Errorf(stealth.ErrWrongPrefix, "meta-address must start with %q", Prefix)
	}
	h := s[len(Prefix):]
	if len(h) != 2*66 {
		return m, stealth.Errorf(stealth.ErrMalformed, "meta-address has %d hex digits, want 132", len(h))
	}
	var raw [66]byte
	if _, err := hex.Decode(raw[:], []byte(h)); err != nil {
		return m, stealth.Errorf(stealth.ErrMalformed, "meta-address is not hex")
	}
	copy(m.Spend[:], raw[:33])
	copy(m.View[:], raw[33:])
	return m, m.Validate()
}

// Validate checks that both keys are valid compressed curve points.
func (m MetaAddress) Validate() error {
	var xy [64]byte
	if !decompress(&m.Spend, &xy) {
		return stealth.Errorf(stealth.ErrInvalidPoint, "spending public key is not a compressed secp256k1 point")
	}
	if !decompress(&m.View, &xy) {
		return stealth.Errorf(stealth.ErrInvalidPoint, "viewing public key is not a compressed secp256k1 point")
	}
	return nil
}

// String encodes the meta-address with lower-case hex.
func (m MetaAddress) String() string {
	buf := make([]byte, len(Prefix)+132)
	copy(buf, Prefix)
	hex.Encode(buf[len(Prefix):], m.Spend[:])
	hex.Encode(buf[len(Prefix)+66:], m.View[:])
	return string(buf)
}

// KeysFromSeeds turns two 32-byte seeds (derived deterministically by the
// enclave) into a key set: each seed, read big-endian, is the private key. A
// seed that is zero or not below the group order (probability ~2⁻¹²⁸) is
// rejected with ErrZeroScalar.
func KeysFromSeeds(spendSeed, viewSeed [32]byte) (Keys, error) {
	k := Keys{SpendPriv: spendSeed, ViewPriv: viewSeed}
	var err error
	if k.Meta.Spend, err = PublicKey(spendSeed); err != nil {
		return Keys{}, err
	}
	if k.Meta.View, err = PublicKey(viewSeed); err != nil {
		return Keys{}, err
	}
	return k, nil
}

// PublicKey returns the compressed public key of priv.
func PublicKey(priv [32]byte) ([33]byte, error) {
	var xy [64]byte
	if !baseMult(&priv, &xy) {
		return [33]byte{}, stealth.Errorf(stealth.ErrZeroScalar, "private key is zero or not below the group order")
	}
	return compress(&xy), nil
}

// Address returns the Ethereum address of a compressed public key.
func Address(pub [33]byte) ([20]byte, error) {
	var xy [64]byte
	if !decompress(&pub, &xy) {
		return [20]byte{}, stealth.Errorf(stealth.ErrInvalidPoint, "not a compressed secp256k1 point")
	}
	c := getChecker()
	defer putChecker(c)
	c.xy = xy
	c.address()
	return c.addr, nil
}

// ParseEphemeralPub decodes an announced ephemeral public key: exactly 33
// bytes, SEC1 compressed, on the curve.
func ParseEphemeralPub(b []byte) ([33]byte, error) {
	var e [33]byte
	if len(b) != 33 {
		return e, stealth.Errorf(stealth.ErrMalformed, "ephemeral public key has %d bytes, want 33", len(b))
	}
	copy(e[:], b)
	var xy [64]byte
	if !decompress(&e, &xy) {
		return [33]byte{}, stealth.Errorf(stealth.ErrInvalidPoint, "ephemeral public key is not a compressed secp256k1 point")
	}
	return e, nil
}

// DecodeAnnouncement builds an Announcement from the fields of an ERC-5564
// Announcement event: stealthAddress as 20 bytes or as a 32-byte log topic
// (12 zero bytes, then the address), ephemeralPubKey (33 bytes, compressed)
// and metadata (at least 1 byte; the first is the view tag).
func DecodeAnnouncement(stealthAddress, ephemeralPubKey, metadata []byte) (Announcement, error) {
	var a Announcement
	switch len(stealthAddress) {
	case 20:
		copy(a.StealthAddress[:], stealthAddress)
	case 32:
		var zero [12]byte
		if !bytes.Equal(stealthAddress[:12], zero[:]) {
			return Announcement{}, stealth.Errorf(stealth.ErrMalformed, "stealth address topic has non-zero high bytes")
		}
		copy(a.StealthAddress[:], stealthAddress[12:])
	default:
		return Announcement{}, stealth.Errorf(stealth.ErrMalformed, "stealth address has %d bytes, want 20 or 32", len(stealthAddress))
	}
	if len(metadata) < 1 {
		return Announcement{}, stealth.Errorf(stealth.ErrMalformed, "metadata is empty: no view tag")
	}
	a.ViewTag = metadata[0]
	e, err := ParseEphemeralPub(ephemeralPubKey)
	if err != nil {
		return Announcement{}, err
	}
	a.EphemeralPub = e
	return a, nil
}

// Generate derives a one-time stealth address for meta with a fresh
// ephemeral key read from rand (crypto/rand.Reader in production).
func Generate(meta MetaAddress, rand io.Reader) (Announcement, error) {
	for range 16 {
		var k [32]byte
		if _, err := io.ReadFull(rand, k[:]); err != nil {
			return Announcement{}, err
		}
		a, err := GenerateWithEphemeral(meta, k)
		if err == nil || !isZeroScalar(err) {
			return a, err
		}
		// k was zero or ≥ n, or s_h was: draw again.
	}
	return Announcement{}, stealth.Errorf(stealth.ErrZeroScalar, "random source keeps yielding invalid scalars")
}

// GenerateWithEphemeral derives the one-time stealth address for meta with
// the given ephemeral private key (big-endian, 1..n-1).
func GenerateWithEphemeral(meta MetaAddress, ephPriv [32]byte) (Announcement, error) {
	var a Announcement
	var viewXY, spendXY [64]byte
	if !decompress(&meta.View, &viewXY) || !decompress(&meta.Spend, &spendXY) {
		return a, stealth.Errorf(stealth.ErrInvalidPoint, "meta-address key is not a compressed secp256k1 point")
	}
	var ephXY [64]byte
	if !baseMult(&ephPriv, &ephXY) {
		return a, stealth.Errorf(stealth.ErrZeroScalar, "ephemeral private key is zero or not below the group order")
	}
	c := getChecker()
	defer putChecker(c)
	if !c.sharedHash(&viewXY, &ephPriv) {
		return a, stealth.Errorf(stealth.ErrZeroScalar, "ECDH failed")
	}
	if !c.stealthAddress(&spendXY) {
		return a, stealth.Errorf(stealth.ErrZeroScalar, "hashed shared secret is not a valid scalar")
	}
	a.StealthAddress = c.addr
	a.EphemeralPub = compress(&ephXY)
	a.ViewTag = c.sh[0]
	return a, nil
}

// Check reports whether ann pays the recipient with this viewing private key
// and spending public key. It parses both keys on every call: to check more
// than one announcement, parse them once with NewScanKey and use
// ScanKey.Check (or a Scanner for many keys). An error means an invalid key
// or announcement (an invalid on-chain announcement simply pays no one).
func Check(viewPriv [32]byte, spendPub [33]byte, ann Announcement) (bool, error) {
	k, err := NewScanKey(ViewKeyEntry{ViewPriv: viewPriv, SpendPub: spendPub})
	if err != nil {
		return false, err
	}
	return k.Check(ann)
}

// ScanKey is one recipient's scanning material, validated and decoded once:
// the viewing private key and the decompressed spending public key (SEC1
// decompression costs a square root, ~12 % of a check, so it is not repeated
// per announcement). It is read-only after NewScanKey and safe for
// concurrent use.
type ScanKey struct {
	view    [32]byte
	spendXY [64]byte
}

// NewScanKey validates e (viewing key in 1..n-1, spending key a compressed
// curve point) and decodes it for checking.
func NewScanKey(e ViewKeyEntry) (*ScanKey, error) {
	k := new(ScanKey)
	if err := k.parse(&e); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *ScanKey) parse(e *ViewKeyEntry) error {
	if !validScalar(&e.ViewPriv) {
		return stealth.Errorf(stealth.ErrZeroScalar, "viewing private key is zero or not below the group order")
	}
	if !decompress(&e.SpendPub, &k.spendXY) {
		return stealth.Errorf(stealth.ErrInvalidPoint, "spending public key is not a compressed secp256k1 point")
	}
	k.view = e.ViewPriv
	return nil
}

// Check reports whether ann pays this key's holder. The view tag is
// compared first: a mismatch costs the decompression of the ephemeral key,
// one ECDH and one hash. An error means an invalid announcement.
func (k *ScanKey) Check(ann Announcement) (bool, error) {
	c := getChecker()
	defer putChecker(c)
	// The checker's buffers, not locals: pointers handed to C escape, and
	// locals would then be allocated on every call.
	c.eph = ann.EphemeralPub
	if !decompress(&c.eph, &c.ephXY) {
		return false, stealth.Errorf(stealth.ErrInvalidPoint, "ephemeral public key is not a compressed secp256k1 point")
	}
	return c.check(&c.ephXY, k, &ann)
}

// DeriveStealthPrivateKey returns p_stealth = (p_spend + s_h) mod n, the
// private key that controls the address announced with ephPub.
func DeriveStealthPrivateKey(spendPriv, viewPriv [32]byte, ephPub [33]byte) ([32]byte, error) {
	if !validScalar(&viewPriv) || !validScalar(&spendPriv) {
		return [32]byte{}, stealth.Errorf(stealth.ErrZeroScalar, "private key is zero or not below the group order")
	}
	var ephXY [64]byte
	if !decompress(&ephPub, &ephXY) {
		return [32]byte{}, stealth.Errorf(stealth.ErrInvalidPoint, "ephemeral public key is not a compressed secp256k1 point")
	}
	c := getChecker()
	defer putChecker(c)
	if !c.sharedHash(&ephXY, &viewPriv) {
		return [32]byte{}, stealth.Errorf(stealth.ErrZeroScalar, "ECDH failed")
	}
	var sh, sp dcr.ModNScalar
	if sh.SetBytes(&c.sh) != 0 || sh.IsZero() {
		return [32]byte{}, stealth.Errorf(stealth.ErrZeroScalar, "hashed shared secret is not a valid scalar")
	}
	sp.SetBytes(&spendPriv)
	sp.Add(&sh)
	if sp.IsZero() {
		return [32]byte{}, stealth.Errorf(stealth.ErrZeroScalar, "stealth private key is zero")
	}
	out := sp.Bytes()
	sh.Zero()
	sp.Zero()
	clear(c.sh[:])
	return out, nil
}

func isZeroScalar(err error) bool {
	e, ok := err.(*stealth.Error)
	return ok && e.Kind == stealth.ErrZeroScalar
}

func validScalar(k *[32]byte) bool {
	var s dcr.ModNScalar
	ok := s.SetBytes(k) == 0 && !s.IsZero()
	s.Zero()
	return ok
}

func compress(xy *[64]byte) [33]byte {
	var c [33]byte
	c[0] = 2 | xy[63]&1
	copy(c[1:], xy[:32])
	return c
}

// checker holds the scratch state of one check so that the hot path does not
// allocate: the buffers live on the heap with the checker, and the Keccak
// state is reused.
type checker struct {
	kec   hash.Hash
	rd    io.Reader // kec's squeeze side (no allocation, unlike Sum)
	eph   [33]byte  // ephemeral public key (ScanKey.Check)
	ephXY [64]byte  // its affine coordinates
	ss    [33]byte  // compressed shared secret
	sh    [32]byte  // keccak256(ss)
	xy    [64]byte  // stealth public key
	dig   [32]byte
	addr  [20]byte
}

func newChecker() *checker {
	h := sha3.NewLegacyKeccak256()
	return &checker{kec: h, rd: h.(io.Reader)}
}

var checkers = sync.Pool{New: func() any { return newChecker() }}

func getChecker() *checker  { return checkers.Get().(*checker) }
func putChecker(c *checker) { clear(c.ss[:]); clear(c.sh[:]); checkers.Put(c) }

// sharedHash sets c.sh = keccak256(compressed(k·P)).
func (c *checker) sharedHash(pxy *[64]byte, k *[32]byte) bool {
	if !ecdh(pxy, k, &c.ss) {
		return false
	}
	c.kec.Reset()
	c.kec.Write(c.ss[:])
	c.rd.Read(c.sh[:])
	return true
}

// stealthAddress sets c.xy = P_spend + s_h·G and c.addr to its address.
func (c *checker) stealthAddress(spendXY *[64]byte) bool {
	if !tweakAdd(spendXY, &c.sh, &c.xy) {
		return false
	}
	c.address()
	return true
}

func (c *checker) address() {
	c.kec.Reset()
	c.kec.Write(c.xy[:])
	c.rd.Read(c.dig[:])
	copy(c.addr[:], c.dig[12:])
}

// check runs the recipient test with a decoded ephemeral key and scan key.
func (c *checker) check(ephXY *[64]byte, k *ScanKey, ann *Announcement) (bool, error) {
	if !c.sharedHash(ephXY, &k.view) {
		return false, stealth.Errorf(stealth.ErrZeroScalar, "ECDH failed")
	}
	if c.sh[0] != ann.ViewTag {
		return false, nil
	}
	if !c.stealthAddress(&k.spendXY) {
		// s_h ≥ n (or P_spend = -s_h·G): no sender could have produced it.
		return false, nil
	}
	return subtle.ConstantTimeCompare(c.addr[:], ann.StealthAddress[:]) == 1, nil
}
