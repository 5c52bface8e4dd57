package edstealth

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

func typed(err error) bool {
	return errors.Is(err, stealth.ErrMalformed) || errors.Is(err, stealth.ErrWrongPrefix) ||
		errors.Is(err, stealth.ErrInvalidPoint) || errors.Is(err, stealth.ErrZeroScalar)
}

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

func fixedKeys(c Chain) Keys {
	k, err := KeysFromSeeds(c, seed("fuzz/spend"), seed("fuzz/view"))
	if err != nil {
		panic(err)
	}
	return k
}

func FuzzParseMetaAddress(f *testing.F) {
	k := fixedKeys(Stellar)
	good := k.Meta.String()
	h := good[7:]
	seedCorpus(f, [][]any{
		{good},
		{"st:sol:" + h},
		{"st:sol:" + strings.ToUpper(h)},
		{good[:len(good)-1]},
		{good + "0"},
		{"st:eth:0x" + h},
		{"st:xlm:" + strings.Repeat("0", 128)},
		{"st:xlm:01" + strings.Repeat("0", 62) + h[64:]},
		{"st:xlm:" + h[:64] + "0200000000000000000000000000000000000000000000000000000000000000"},
		{"st:xlm:" + h[:64] + "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"},
		{"st:sol:c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a" + h[64:]},
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
		if !strings.EqualFold(m.String(), s) {
			t.Fatalf("accepted %q but round trip gives %q", s, m.String())
		}
		if _, err := GenerateWithEphemeral(m, seed("r")); err != nil {
			t.Fatalf("accepted meta-address cannot be paid: %v", err)
		}
	})
}

func FuzzParseEphemeralPub(f *testing.F) {
	k := fixedKeys(Solana)
	u2 := make([]byte, 32)
	u2[0] = 2
	top := append([]byte{}, k.Meta.View[:]...)
	top[31] |= 0x80
	seedCorpus(f, [][]any{
		{k.Meta.View[:]},
		{k.Meta.View[:31]},
		{append(k.Meta.View[:], 0)},
		{u2},
		{top},
		{lowOrderU[3][:]},
		{make([]byte, 32)},
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
		if _, err := Check(k.ViewPriv, k.Meta.Spend, Announcement{EphemeralPub: e}); err != nil {
			t.Fatalf("Check on an accepted key: %v", err)
		}
		if _, err := DeriveStealthPrivateKey(k.SpendScalar, k.ViewPriv, e); err != nil {
			t.Fatalf("Derive on an accepted key: %v", err)
		}
	})
}

func FuzzDecodeAnnouncement(f *testing.F) {
	k := fixedKeys(Stellar)
	ann, _ := GenerateWithEphemeral(k.Meta, seed("fuzz/eph"))
	pl := ann.Payload()
	seedCorpus(f, [][]any{
		{ann.OneTimePub[:], pl[:]},
		{ann.OneTimePub[:31], pl[:]},
		{ann.OneTimePub[:], pl[:32]},
		{make([]byte, 32), pl[:]},
		{ann.OneTimePub[:], make([]byte, 33)},
		{[]byte{}, []byte{}},
	})
	scanner, err := NewScanner([]ViewKeyEntry{{ViewPriv: k.ViewPriv, SpendPub: k.Meta.Spend}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, onetime, payload []byte) {
		a, err := DecodeAnnouncement(onetime, payload)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if p := a.Payload(); string(p[:]) != string(payload) {
			t.Fatal("payload round trip")
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

func FuzzParseAddresses(f *testing.F) {
	k := fixedKeys(Stellar)
	seedCorpus(f, [][]any{
		{StellarAddress(k.Meta.Spend)},
		{SolanaAddress(k.Meta.Spend)},
		{"GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"},
		{"11111111111111111111111111111111"},
		{"SAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"},
		{""},
	})
	f.Fuzz(func(t *testing.T, s string) {
		if pub, err := ParseStellarAddress(s); err == nil {
			if StellarAddress(pub) != s {
				t.Fatalf("Stellar round trip: %q", s)
			}
		} else if !typed(err) {
			t.Fatalf("untyped error %v", err)
		}
		if pub, err := ParseSolanaAddress(s); err == nil {
			if SolanaAddress(pub) != s {
				t.Fatalf("Solana round trip: %q", s)
			}
		} else if !typed(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

// FuzzScanRaw feeds unvalidated announcements straight to the scanner.
func FuzzScanRaw(f *testing.F) {
	k := fixedKeys(Solana)
	ann, _ := GenerateWithEphemeral(k.Meta, seed("fuzz/eph"))
	pl := ann.Payload()
	seedCorpus(f, [][]any{
		{ann.OneTimePub[:], pl[:]},
		{make([]byte, 32), make([]byte, 33)},
	})
	scanner, _ := NewScanner([]ViewKeyEntry{{ViewPriv: k.ViewPriv, SpendPub: k.Meta.Spend}})
	f.Fuzz(func(t *testing.T, onetime, payload []byte) {
		var a Announcement
		copy(a.OneTimePub[:], onetime)
		if len(payload) > 0 {
			a.ViewTag = payload[0]
			copy(a.EphemeralPub[:], payload[1:])
		}
		m := scanner.Scan([]Announcement{a, a})
		if len(m) != 0 && a != ann {
			t.Fatal("spurious match")
		}
	})
}
