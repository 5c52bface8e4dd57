package keys

import (
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

// TestSecp256k1Retry drives the retry of the derivation with a KDF that
// returns invalid scalars (zero, n, all ones) first.
func TestSecp256k1Retry(t *testing.T) {
	var zero, ones, n, good [32]byte
	for i := range ones {
		ones[i] = 0xff
	}
	copy(n[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
		0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41})
	good[31] = 7
	var asked []string
	kdf := func(path string) ([32]byte, error) {
		asked = append(asked, path)
		switch len(asked) {
		case 1:
			return zero, nil
		case 2:
			return n, nil
		case 3:
			return ones, nil
		}
		return good, nil
	}
	k, err := Secp256k1Scalar(kdf, "p")
	if err != nil {
		t.Fatal(err)
	}
	if k != good {
		t.Fatalf("got %x", k)
	}
	if strings.Join(asked, ",") != "p,p/1,p/2,p/3" {
		t.Fatalf("paths asked: %v", asked)
	}

	asked = nil
	bad := func(path string) ([32]byte, error) { asked = append(asked, path); return zero, nil }
	if _, err := Secp256k1Scalar(bad, "p"); err == nil {
		t.Fatal("no error after the retry bound")
	}
	if len(asked) != MaxRetries+1 {
		t.Fatalf("%d tries, want %d", len(asked), MaxRetries+1)
	}

	boom := errors.New("kdf failed")
	if _, err := Derive(func(string) ([32]byte, error) { return zero, boom }, "a", chains.Base, 0); !errors.Is(err, boom) {
		t.Fatalf("KDF error not passed on: %v", err)
	}
	if _, err := Derive(func(string) ([32]byte, error) { return zero, boom }, "a", chains.Solana, 0); !errors.Is(err, boom) {
		t.Fatalf("KDF error not passed on: %v", err)
	}
}
