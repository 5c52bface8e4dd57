package software_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave/software"
)

// keysOf opens the provider of data with pass and returns its addresses on
// every chain.
func keysOf(t *testing.T, data string, pass string) (map[chains.ID]string, error) {
	t.Helper()
	p, err := software.OpenWithPassphrase(data, "", []byte(pass))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	out := map[chains.ID]string{}
	for _, c := range chains.Order() {
		out[c] = derive(t, p, agent1, c, 0).Address
	}
	return out, nil
}

func sameKeys(a, b map[chains.ID]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// sealState is the seal file's bytes and the enclave directory's entries:
// what a refused operation must leave as it was.
func sealState(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(software.SealPath(data))
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(software.SealPath(data)))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return string(b) + "|" + strings.Join(names, ",")
}

// Plain → encrypted → rotated: the same root, so the same keys, at every
// step; the file never holds the root in the clear once encrypted; each
// old passphrase stops working.
func TestSealPlainEncryptedRotated(t *testing.T) {
	defer software.SetTestKDF()()
	data := t.TempDir()
	plain, err := keysOf(t, data, "")
	if err != nil {
		t.Fatal(err)
	}
	if enc, err := software.SealEncrypted(data); err != nil || enc {
		t.Fatalf("new seal without passphrase: encrypted=%v %v", enc, err)
	}

	if err := software.Reseal(data, nil, []byte("first passphrase"), false); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(software.SealPath(data))
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil || f["format"] != software.SealFormatEncrypted || f["root"] != nil {
		t.Fatalf("encrypted seal: %s", raw)
	}
	if st, _ := os.Stat(software.SealPath(data)); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	if _, err := keysOf(t, data, ""); !errors.Is(err, software.ErrPassphrase) || !strings.Contains(err.Error(), "VEIL_SEAL_PASSPHRASE") {
		t.Fatalf("encrypted seal without passphrase: %v", err)
	}
	enc, err := keysOf(t, data, "first passphrase")
	if err != nil || !sameKeys(enc, plain) {
		t.Fatalf("after encryption: %v (same keys: %v)", err, sameKeys(enc, plain))
	}

	if err := software.Reseal(data, []byte("first passphrase"), []byte("second passphrase"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := keysOf(t, data, "first passphrase"); !errors.Is(err, software.ErrPassphrase) {
		t.Fatalf("old passphrase after rotation: %v", err)
	}
	rot, err := keysOf(t, data, "second passphrase")
	if err != nil || !sameKeys(rot, plain) {
		t.Fatalf("after rotation: %v", err)
	}
	// Back to plain only on request.
	if err := software.Reseal(data, []byte("second passphrase"), nil, false); !errors.Is(err, software.ErrPassphrase) {
		t.Fatalf("reseal without a new passphrase: %v", err)
	}
	if err := software.Reseal(data, []byte("second passphrase"), nil, true); err != nil {
		t.Fatal(err)
	}
	back, err := keysOf(t, data, "")
	if err != nil || !sameKeys(back, plain) {
		t.Fatalf("decrypted again: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Dir(software.SealPath(data)))
	if len(ents) != 1 {
		t.Fatalf("the enclave directory holds %d entries (temp file left?)", len(ents))
	}
}

// A first start with a passphrase creates the seal encrypted.
func TestSealCreatedEncrypted(t *testing.T) {
	defer software.SetTestKDF()()
	data := t.TempDir()
	first, err := keysOf(t, data, "pw")
	if err != nil {
		t.Fatal(err)
	}
	if enc, err := software.SealEncrypted(data); err != nil || !enc {
		t.Fatalf("encrypted=%v %v", enc, err)
	}
	again, err := keysOf(t, data, "pw")
	if err != nil || !sameKeys(first, again) {
		t.Fatalf("reopen: %v", err)
	}
}

// A wrong passphrase is a clear error and changes nothing, whether on open
// or on reseal; so is a plain seal while a passphrase is set.
func TestSealWrongPassphraseChangesNothing(t *testing.T) {
	defer software.SetTestKDF()()
	data := t.TempDir()
	if _, err := keysOf(t, data, "right"); err != nil {
		t.Fatal(err)
	}
	before := sealState(t, data)
	for _, tc := range []struct {
		name string
		do   func() error
	}{
		{"open", func() error { _, err := keysOf(t, data, "wrong"); return err }},
		{"reseal", func() error { return software.Reseal(data, []byte("wrong"), []byte("new"), false) }},
		{"reseal as plain", func() error { return software.Reseal(data, nil, []byte("new"), false) }},
	} {
		err := tc.do()
		if !errors.Is(err, software.ErrPassphrase) {
			t.Errorf("%s: %v, want ErrPassphrase", tc.name, err)
		}
		if err != nil && (strings.Contains(err.Error(), "wrong") && !strings.Contains(err.Error(), "wrong passphrase") || strings.Contains(err.Error(), "right")) {
			t.Errorf("%s: the error repeats a passphrase: %v", tc.name, err)
		}
		if after := sealState(t, data); after != before {
			t.Fatalf("%s changed the seal or left a file", tc.name)
		}
	}

	plainData := t.TempDir()
	if _, err := keysOf(t, plainData, ""); err != nil {
		t.Fatal(err)
	}
	before = sealState(t, plainData)
	if _, err := keysOf(t, plainData, "pw"); !errors.Is(err, software.ErrSeal) || !strings.Contains(err.Error(), "reseal") {
		t.Fatalf("plain seal with a passphrase set: %v", err)
	}
	if after := sealState(t, plainData); after != before {
		t.Fatal("opening a plain seal with a passphrase changed it")
	}
	if err := software.Reseal(plainData, []byte("pw"), []byte("new"), false); !errors.Is(err, software.ErrPassphrase) || !strings.Contains(err.Error(), "not encrypted") {
		t.Fatalf("reseal of a plain seal with a current passphrase: %v", err)
	}
	if after := sealState(t, plainData); after != before {
		t.Fatal("a refused reseal changed a plain seal")
	}
}

// A truncated or altered encrypted seal is a clear error (never other
// keys), and opening it changes nothing.
func TestSealCorruptEncrypted(t *testing.T) {
	defer software.SetTestKDF()()
	data := t.TempDir()
	if _, err := keysOf(t, data, "pw"); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(software.SealPath(data))
	var f map[string]any
	if err := json.Unmarshal(good, &f); err != nil {
		t.Fatal(err)
	}
	edit := func(k string, v any) []byte {
		g := map[string]any{}
		for a, b := range f {
			g[a] = b
		}
		g[k] = v
		b, _ := json.Marshal(g)
		return b
	}
	flip := func(field string) []byte {
		s := f[field].(string)
		c := byte('A')
		if s[0] == 'A' {
			c = 'B'
		}
		return edit(field, string(c)+s[1:])
	}
	kdf := f["kdf"].(map[string]any)
	withKDF := func(k string, v float64) []byte {
		m := map[string]any{}
		for a, b := range kdf {
			m[a] = b
		}
		m[k] = v
		return edit("kdf", m)
	}
	cases := []struct {
		name    string
		content []byte
		want    error
	}{
		{"empty", nil, software.ErrSeal},
		{"truncated to half", good[:len(good)/2], software.ErrSeal},
		{"last byte of the JSON cut", bytes.TrimSpace(good)[:len(bytes.TrimSpace(good))-1], software.ErrSeal},
		{"ciphertext altered", flip("ciphertext"), software.ErrPassphrase},
		{"ciphertext shortened", edit("ciphertext", f["ciphertext"].(string)[:20]), software.ErrSeal},
		{"salt altered (bound as data)", flip("salt"), software.ErrPassphrase},
		{"memory parameter altered (bound as data)", withKDF("memory", kdf["memory"].(float64)*2), software.ErrPassphrase},
		{"memory parameter absurd", withKDF("memory", 1<<31), software.ErrSeal},
		{"no passes", withKDF("time", 0), software.ErrSeal},
		{"nonce missing", edit("nonce", ""), software.ErrSeal},
		{"unknown format", edit("format", "veil-enclave-root/v9"), software.ErrSeal},
		{"not JSON", []byte("\x00\x01garbage"), software.ErrSeal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(software.SealPath(data), tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			before := sealState(t, data)
			_, err := keysOf(t, data, "pw")
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), software.SealPath(data)) {
				t.Fatalf("got %v, want %v naming the file", err, tc.want)
			}
			if after := sealState(t, data); after != before {
				t.Fatal("opening a damaged seal changed it")
			}
			if err := software.Reseal(data, []byte("pw"), []byte("new"), false); !errors.Is(err, tc.want) {
				t.Fatalf("reseal of a damaged seal: %v", err)
			}
			if after := sealState(t, data); after != before {
				t.Fatal("resealing a damaged seal changed it")
			}
		})
	}
}

// BenchmarkOpenEncryptedSeal measures what a passphrase costs at start (and
// what one offline guess costs an attacker with a copy of the file): one
// argon2id derivation with the default parameters (t=3, 64 MiB, p=4) and
// the AES-GCM open.
func BenchmarkOpenEncryptedSeal(b *testing.B) {
	data := b.TempDir()
	p, err := software.OpenWithPassphrase(data, "", []byte("benchmark passphrase"))
	if err != nil {
		b.Fatal(err)
	}
	p.Close()
	b.ResetTimer()
	for b.Loop() {
		p, err := software.OpenWithPassphrase(data, "", []byte("benchmark passphrase"))
		if err != nil {
			b.Fatal(err)
		}
		p.Close()
	}
}
