package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/enclave/software"
)

// TestPassphraseStrength: the rule `veild enclave reseal` applies to a
// new passphrase (docs/enclave.md).
func TestPassphraseStrength(t *testing.T) {
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"", false},
		{"x", false},
		{"correct horse", false},            // 13 characters
		{"aaaaaaaaaaaaaaaaaaaaaaaa", false}, // one character repeated
		{"abababababababababab", false},     // 2 distinct
		{"abcdefghijklmnop", false},         // 16 lower: 75 bits
		{"abcdefghijklmnopqr", true},        // 18 lower: 85 bits
		{"correct horse battery staple", true},
		{"Tr0ub4dor&3xyzQw", true},
		{"5f4dcc3b5aa765d61d8327deb882cf99", true}, // openssl rand -hex 16
		{"kJ8r2+YqfA0mWb7sL1zX9cVdN3uTe5hGiOpQ4wRyS6E=", true},
		{"пароль-очень-длинный", true},
	} {
		if err := passphraseStrength([]byte(tc.p)); (err == nil) != tc.ok {
			t.Errorf("passphraseStrength(%q) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}

// reseal runs `veild enclave reseal` with env added to the test's.
func reseal(t *testing.T, data string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(veildBin, "enclave", "reseal", "--data", data)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The seal's life with the real binary: a plain root is announced once at
// start; `veild enclave reseal` encrypts it and rotates the passphrase
// (env or key file); the agent keeps its keys through every step; a wrong
// passphrase changes nothing and a missing one is a clear start-up error.
func TestSealPassphraseWithTheBinary(t *testing.T) {
	data := t.TempDir()
	t.Setenv(envSealPassphrase, "")
	t.Setenv(envSealKeyFile, "")
	p := start(t, data)
	if n := strings.Count(p.stderr.all.String(), "enclave root is stored unencrypted"); n != 1 {
		t.Fatalf("the unencrypted root was announced %d times:\n%s", n, p.stderr.all.String())
	}
	key := keyRE.FindString(p.stdout.String())
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage("sealed", "ethereum", wallet, time.Now())
	status, body := call(t, "POST", "http://"+p.addr+"/agent/create", key, map[string]string{
		"name": "sealed", "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
	})
	if status != 201 {
		t.Fatalf("create = %d %s", status, body)
	}
	var created struct{ ID, Address, MetaAddress string }
	_ = json.Unmarshal(body, &created)
	p.stop(t, syscall.SIGTERM)
	sealFile := software.SealPath(data)

	// Encrypt: no current passphrase, the new one from env.
	if out, err := reseal(t, data, envSealNewPassphrase+"=correct horse battery 42"); err != nil {
		t.Fatalf("reseal: %v %s", err, out)
	}
	encrypted, _ := os.ReadFile(sealFile)
	if !strings.Contains(string(encrypted), software.SealFormatEncrypted) {
		t.Fatalf("seal not encrypted: %s", encrypted)
	}
	// A weak new passphrase: refused, file unchanged.
	for _, weak := range []string{"x", "correct horse", "aaaaaaaaaaaaaaaaaaaaaaaa"} {
		if out, err := reseal(t, data, envSealPassphrase+"=correct horse battery 42", envSealNewPassphrase+"="+weak); err == nil || !strings.Contains(out, "too weak") {
			t.Fatalf("reseal to %q: %v %s", weak, err, out)
		}
	}
	if now, _ := os.ReadFile(sealFile); string(now) != string(encrypted) {
		t.Fatal("a refused reseal changed the seal")
	}
	// A wrong current passphrase: refused, file unchanged.
	if out, err := reseal(t, data, envSealPassphrase+"=wrong", envSealNewPassphrase+"=Another long passphrase 9"); err == nil || !strings.Contains(out, "passphrase") || strings.Contains(out, "=wrong") {
		t.Fatalf("reseal with a wrong passphrase: %v %s", err, out)
	}
	if now, _ := os.ReadFile(sealFile); string(now) != string(encrypted) {
		t.Fatal("a refused reseal changed the seal")
	}
	// No passphrase at start: a clear error, nothing served.
	cmd := exec.Command(veildBin, "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--devnet-base-port", "0")
	cmd.Env = append(os.Environ(), "VEIL_DATA="+data)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is encrypted: give its passphrase in VEIL_SEAL_PASSPHRASE") {
		t.Fatalf("start without the passphrase: %v %s", err, out)
	}

	check := func(env ...string) {
		t.Helper()
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		p := start(t, data)
		if strings.Contains(p.stderr.all.String(), "stored unencrypted") {
			t.Fatal("an encrypted root was announced as unencrypted")
		}
		status, body := call(t, "GET", "http://"+p.addr+"/agent/"+created.ID, key, nil)
		var got struct {
			Addresses     map[string]string
			MetaAddresses map[string]string
		}
		_ = json.Unmarshal(body, &got)
		if status != 200 || got.Addresses["ethereum"] != created.Address || got.MetaAddresses["ethereum"] != created.MetaAddress {
			t.Fatalf("agent after reseal = %d %s; created %+v", status, body, created)
		}
		p.stop(t, syscall.SIGTERM)
	}
	check(envSealPassphrase + "=correct horse battery 42")

	// Rotate with key files.
	dir := t.TempDir()
	oldFile, newFile := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	_ = os.WriteFile(oldFile, []byte("correct horse battery 42\n"), 0o600)
	_ = os.WriteFile(newFile, []byte("battery staple, mule 77\n"), 0o600)
	if out, err := reseal(t, data, envSealPassphrase+"=", envSealKeyFile+"="+oldFile, envSealNewKeyFile+"="+newFile); err != nil {
		t.Fatalf("rotate with key files: %v %s", err, out)
	}
	check(envSealPassphrase+"=", envSealKeyFile+"="+newFile)
	// A key file others can read is refused.
	_ = os.Chmod(newFile, 0o644)
	cmd = exec.Command(veildBin, "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--devnet-base-port", "0")
	cmd.Env = append(os.Environ(), "VEIL_DATA="+data)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "readable by its owner only") {
		t.Fatalf("world-readable key file: %v %s", err, out)
	}
}
