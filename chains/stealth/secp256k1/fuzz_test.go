package secp256k1

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains/stealth"
)

// typed reports whether err wraps one of the package sentinels.
func typed(err error) bool {
	return errors.Is(err, stealth.ErrMalformed) || errors.Is(err, stealth.ErrWrongPrefix) ||
		errors.Is(err, stealth.ErrInvalidPoint) || errors.Is(err, stealth.ErrZeroScalar)
}

// corpusEntry renders one seed in the "go test fuzz v1" file format.
func corpusEntry(args ...any) string {
	var b strings.Builder
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case string:
			b.WriteString("string(" + strconv.Quote(v) + ")\n")
		case []byte:
			b.WriteString("[]byte(" + strconv.Quote(string(v)) + ")\n")
		}
	}
	return b.String()
}

// seedCorpus adds the seeds to f and, with -update, writes them under
// testdata/fuzz/<name>/ so that they are committed.
func seedCorpus(f *testing.F, seeds [][]any) {
	for _, s := range seeds {
		f.Add(s...)
	}
	if !*update {
		return
	}
	dir := filepath.Join("testdata", "fuzz", f.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	for _, s := range seeds {
		e := corpusEntry(s...)
		name := fmt.Sprintf("seed-%x", sha256.Sum256([]byte(e)))[:21]
		if err := os.WriteFile(filepath.Join(dir, name), []byte(e), 0o644); err != nil {
			f.Fatal(err)
		}
	}
}

func fixedKeys() Keys {
	k, err := KeysFromSeeds(seed("fuzz/spend"), seed("fuzz/view"))
	if err != nil {
		panic(err)
	}
	return k
}

func FuzzParseMetaAddress(f *testing.F) {
	k := fixedKeys()
	good := k.Meta.String()
	seedCorpus(f, [][]any{
		{good},
		{strings.ToUpper(good)},
		{good[:9] + strings.ToUpper(good[9:])},
		{good[:len(good)-1]},
		{good + "0"},
		{"st:eth:0x"},
		{"st:xlm:" + good[9:]},
		{Prefix + "04" + good[11:]},
		{Prefix + "02" + strings.Repeat("f", 64) + good[9+66:]},
		{Prefix + strings.Repeat("0", 132)},
		{""},
	})
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMetaAddress(s)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if m.Validate() != nil || !strings.EqualFold(m.String(), s) {
			t.Fatalf("accepted %q but round trip gives %q", s, m.String())
		}
		if m2, err := ParseMetaAddress(m.String()); err != nil || m2 != m {
			t.Fatal("re-parse differs")
		}
	})
}

func FuzzParseEphemeralPub(f *testing.F) {
	k := fixedKeys()
	off := make([]byte, 33)
	off[0], off[32] = 2, 5
	seedCorpus(f, [][]any{
		{k.Meta.View[:]},
		{k.Meta.View[:32]},
		{append(k.Meta.View[:], 0)},
		{off},
		{make([]byte, 33)},
		{[]byte{}},
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseEphemeralPub(b)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if string(e[:]) != string(b) {
			t.Fatal("accepted bytes changed")
		}
		// A valid ephemeral key must be usable by every operation.
		if _, err := Check(k.ViewPriv, k.Meta.Spend, Announcement{EphemeralPub: e}); err != nil {
			t.Fatalf("Check on an accepted key: %v", err)
		}
		if _, err := DeriveStealthPrivateKey(k.SpendPriv, k.ViewPriv, e); err != nil && !errors.Is(err, stealth.ErrZeroScalar) {
			t.Fatalf("Derive on an accepted key: %v", err)
		}
	})
}

func FuzzDecodeAnnouncement(f *testing.F) {
	k := fixedKeys()
	ann, _ := GenerateWithEphemeral(k.Meta, seed("fuzz/eph"))
	topic := append(make([]byte, 12), ann.StealthAddress[:]...)
	seedCorpus(f, [][]any{
		{ann.StealthAddress[:], ann.EphemeralPub[:], []byte{ann.ViewTag}},
		{topic, ann.EphemeralPub[:], []byte{ann.ViewTag, 1, 2, 3}},
		{topic[1:], ann.EphemeralPub[:], []byte{ann.ViewTag}},
		{ann.StealthAddress[:], ann.EphemeralPub[:32], []byte{ann.ViewTag}},
		{ann.StealthAddress[:], ann.EphemeralPub[:], []byte{}},
		{[]byte{}, []byte{}, []byte{}},
	})
	scanner, err := NewScanner([]ViewKeyEntry{{ViewPriv: k.ViewPriv, SpendPub: k.Meta.Spend}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, addr, eph, meta []byte) {
		a, err := DecodeAnnouncement(addr, eph, meta)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		ok, err := Check(k.ViewPriv, k.Meta.Spend, a)
		if err != nil {
			t.Fatalf("Check on a decoded announcement: %v", err)
		}
		if got := len(scanner.Scan([]Announcement{a})) == 1; got != ok {
			t.Fatalf("Scan says %v, Check says %v", got, ok)
		}
		if ok && a != ann {
			t.Fatal("a different announcement matched")
		}
	})
}

// FuzzScanRaw feeds unvalidated announcements straight to the scanner (as a
// connector that skipped DecodeAnnouncement would): it must not panic.
func FuzzScanRaw(f *testing.F) {
	k := fixedKeys()
	ann, _ := GenerateWithEphemeral(k.Meta, seed("fuzz/eph"))
	seedCorpus(f, [][]any{
		{ann.EphemeralPub[:], []byte{ann.ViewTag}},
		{make([]byte, 33), []byte{0}},
	})
	scanner, _ := NewScanner([]ViewKeyEntry{{ViewPriv: k.ViewPriv, SpendPub: k.Meta.Spend}})
	f.Fuzz(func(t *testing.T, eph, tag []byte) {
		var a Announcement
		copy(a.EphemeralPub[:], eph)
		if len(tag) > 0 {
			a.ViewTag = tag[0]
		}
		a.StealthAddress = ann.StealthAddress
		m := scanner.Scan([]Announcement{a, a})
		if len(m) != 0 && a != ann {
			t.Fatal("spurious match")
		}
	})
}
