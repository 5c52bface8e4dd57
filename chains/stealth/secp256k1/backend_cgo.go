//go:build cgo && !gofuzz

package secp256k1

// The curve arithmetic of the hot path runs in libsecp256k1, the C library
// that go-ethereum's crypto/secp256k1 package compiles into every cgo build
// of Veil. That package exposes only allocating big.Int wrappers; we call the
// library's exported C symbols directly (declared below, resolved at link
// time against the copy go-ethereum compiles), with a context of our own
// whose illegal-argument callback never aborts. Measured on the project
// machine it is ~2.5x faster than the pure-Go decred implementation (see
// docs/BENCHMARKS.md); builds without cgo use backend_purego.go instead, and
// TestBackendsAgree checks both against each other.

/*
#include <stddef.h>
#include <string.h>

typedef struct secp256k1_context_struct secp256k1_context;
typedef struct { unsigned char data[64]; } secp256k1_pubkey;

extern secp256k1_context *secp256k1_context_create(unsigned int flags);
extern void secp256k1_context_set_illegal_callback(secp256k1_context *ctx, void (*fun)(const char *message, void *data), const void *data);
extern void secp256k1_context_set_error_callback(secp256k1_context *ctx, void (*fun)(const char *message, void *data), const void *data);
extern int secp256k1_ec_pubkey_parse(const secp256k1_context *ctx, secp256k1_pubkey *pubkey, const unsigned char *input, size_t inputlen);
extern int secp256k1_ec_pubkey_serialize(const secp256k1_context *ctx, unsigned char *output, size_t *outputlen, const secp256k1_pubkey *pubkey, unsigned int flags);
extern int secp256k1_ec_pubkey_create(const secp256k1_context *ctx, secp256k1_pubkey *pubkey, const unsigned char *seckey);
extern int secp256k1_context_randomize(secp256k1_context *ctx, const unsigned char *seed32);
extern int secp256k1_ec_pubkey_combine(const secp256k1_context *ctx, secp256k1_pubkey *out, const secp256k1_pubkey * const *ins, size_t n);
// go-ethereum's ext.h: constant-time scalar multiplication of an affine
// point (64 bytes, big-endian x||y, assumed on the curve) in place.
extern int secp256k1_ext_scalar_mul(const secp256k1_context *ctx, unsigned char *point, const unsigned char *scalar);

#define VEIL_EC_COMPRESSED ((1 << 1) | (1 << 8))
#define VEIL_EC_UNCOMPRESSED (1 << 1)

static secp256k1_context *veil_ctx;

static void veil_noop_callback(const char *msg, void *data) { (void)msg; (void)data; }

static int veil_init(const unsigned char *seed32) {
	veil_ctx = secp256k1_context_create(1); // SECP256K1_CONTEXT_NONE
	if (veil_ctx == NULL) return 0;
	secp256k1_context_set_illegal_callback(veil_ctx, veil_noop_callback, NULL);
	secp256k1_context_set_error_callback(veil_ctx, veil_noop_callback, NULL);
	// Blind the fixed-base multiplication (side-channel protection of the
	// ephemeral and derived keys), as libsecp256k1 recommends.
	return secp256k1_context_randomize(veil_ctx, seed32);
}

static int veil_save_xy(const secp256k1_pubkey *p, unsigned char *xy) {
	unsigned char buf[65];
	size_t n = 65;
	if (!secp256k1_ec_pubkey_serialize(veil_ctx, buf, &n, p, VEIL_EC_UNCOMPRESSED) || n != 65) return 0;
	memcpy(xy, buf + 1, 64);
	return 1;
}

static int veil_load_xy(const unsigned char *xy, secp256k1_pubkey *p) {
	unsigned char buf[65];
	buf[0] = 4;
	memcpy(buf + 1, xy, 64);
	return secp256k1_ec_pubkey_parse(veil_ctx, p, buf, 65);
}

// in33: SEC1 compressed point. xy: its affine coordinates.
static int veil_decompress(const unsigned char *in33, unsigned char *xy) {
	secp256k1_pubkey p;
	if (in33[0] != 2 && in33[0] != 3) return 0;
	if (!secp256k1_ec_pubkey_parse(veil_ctx, &p, in33, 33)) return 0;
	return veil_save_xy(&p, xy);
}

// out33 = compressed(k * P), P given by xy (must be a valid point).
static int veil_ecdh(const unsigned char *xy, const unsigned char *k, unsigned char *out33) {
	unsigned char pt[64];
	memcpy(pt, xy, 64);
	if (!secp256k1_ext_scalar_mul(veil_ctx, pt, k)) return 0;
	out33[0] = 2 | (pt[63] & 1);
	memcpy(out33 + 1, pt, 32);
	memset(pt, 0, 64);
	return 1;
}

// xy = k * G. Fails if k is zero or >= n.
static int veil_base(const unsigned char *k, unsigned char *xy) {
	secp256k1_pubkey p;
	if (!secp256k1_ec_pubkey_create(veil_ctx, &p, k)) return 0;
	return veil_save_xy(&p, xy);
}

// outxy = P + t*G. Fails if t is zero or >= n, or the sum is the identity.
static int veil_tweak_add(const unsigned char *xy, const unsigned char *t, unsigned char *outxy) {
	secp256k1_pubkey p, q, r;
	const secp256k1_pubkey *ins[2];
	if (!veil_load_xy(xy, &p)) return 0;
	if (!secp256k1_ec_pubkey_create(veil_ctx, &q, t)) return 0;
	ins[0] = &p;
	ins[1] = &q;
	if (!secp256k1_ec_pubkey_combine(veil_ctx, &r, ins, 2)) return 0;
	return veil_save_xy(&r, outxy);
}
*/
import "C"

import (
	"crypto/rand"
	"unsafe"

	// Links libsecp256k1 (and its exported C symbols) into the binary.
	_ "github.com/ethereum/go-ethereum/crypto/secp256k1"
)

const backendName = "libsecp256k1 (cgo, via go-ethereum)"

func init() {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic("stealth/secp256k1: no randomness for the libsecp256k1 context: " + err.Error())
	}
	// The context is only read after this, so it is safe to share between
	// threads (libsecp256k1's contract).
	if C.veil_init(uc(unsafe.Pointer(&seed))) != 1 {
		panic("stealth/secp256k1: cannot create libsecp256k1 context")
	}
	clear(seed[:])
}

func uc(p unsafe.Pointer) *C.uchar { return (*C.uchar)(p) }

// decompress parses a SEC1 compressed point into affine x||y.
func decompress(in *[33]byte, xy *[64]byte) bool {
	return C.veil_decompress(uc(unsafe.Pointer(in)), uc(unsafe.Pointer(xy))) == 1
}

// ecdh writes compressed(k·P). k must be a valid scalar (1..n-1).
func ecdh(xy *[64]byte, k *[32]byte, out *[33]byte) bool {
	return C.veil_ecdh(uc(unsafe.Pointer(xy)), uc(unsafe.Pointer(k)), uc(unsafe.Pointer(out))) == 1
}

// baseMult writes k·G.
func baseMult(k *[32]byte, xy *[64]byte) bool {
	return C.veil_base(uc(unsafe.Pointer(k)), uc(unsafe.Pointer(xy))) == 1
}

// tweakAdd writes P + t·G.
func tweakAdd(xy *[64]byte, t *[32]byte, out *[64]byte) bool {
	return C.veil_tweak_add(uc(unsafe.Pointer(xy)), uc(unsafe.Pointer(t)), uc(unsafe.Pointer(out))) == 1
}
