//go:build !cgo || gofuzz

package secp256k1

const backendName = "decred dcrec/secp256k1 (pure Go)"

func decompress(in *[33]byte, xy *[64]byte) bool         { return pgDecompress(in, xy) }
func ecdh(xy *[64]byte, k *[32]byte, out *[33]byte) bool { return pgECDH(xy, k, out) }
func baseMult(k *[32]byte, xy *[64]byte) bool            { return pgBaseMult(k, xy) }
func tweakAdd(xy *[64]byte, t *[32]byte, out *[64]byte) bool {
	return pgTweakAdd(xy, t, out)
}
