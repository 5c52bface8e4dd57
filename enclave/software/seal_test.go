package software_test

import (
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/software"
)

func TestSealCreatedAndReused(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data") // does not exist yet
	p1, err := software.Open(data, "")
	if err != nil {
		t.Fatal(err)
	}
	if p1.RootSource() != software.SourceCreated {
		t.Fatalf("source = %s, want created", p1.RootSource())
	}
	path := software.SealPath(data)
	if path != filepath.Join(data, "enclave", "root.seal") {
		t.Fatalf("SealPath = %s", path)
	}
	st, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("seal mode = %v, want -rw-------", st.Mode())
	}
	dst, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if dst.Mode().Perm() != 0o700 {
		t.Fatalf("enclave dir mode = %v, want drwx------", dst.Mode())
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("enclave dir holds %d entries, want only the seal (temp file left behind?)", len(ents))
	}
	before, _ := os.ReadFile(path)
	keys1 := map[chains.ID]enclave.PublicKeys{}
	for _, c := range chains.Order() {
		keys1[c] = derive(t, p1, agent1, c, 0)
	}
	info1, _ := p1.Info(bg)
	p1.Close()

	p2, err := software.Open(data, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if p2.RootSource() != software.SourceSealed {
		t.Fatalf("source = %s, want sealed", p2.RootSource())
	}
	for _, c := range chains.Order() {
		k := derive(t, p2, agent1, c, 0)
		if k.Address != keys1[c].Address || k.MetaAddress != keys1[c].MetaAddress {
			t.Fatalf("%s: keys changed across reopen", c)
		}
	}
	info2, _ := p2.Info(bg)
	if info1.AttestationPublicKey != info2.AttestationPublicKey {
		t.Fatal("attestation key changed across reopen")
	}
	if info1.InstanceID == info2.InstanceID {
		t.Fatal("instance id did not change across reopen")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Fatal("reopen rewrote the seal")
	}
}

func TestSealConcurrentFirstStart(t *testing.T) {
	data := t.TempDir()
	var wg sync.WaitGroup
	addrs := make([]string, 8)
	for i := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := software.Open(data, "")
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			addrs[i] = derive(t, p, agent1, chains.Base, 0).Address
		}()
	}
	wg.Wait()
	for _, a := range addrs {
		if a != addrs[0] {
			t.Fatalf("concurrent first starts derived different roots: %v", addrs)
		}
	}
}

func TestSealRefused(t *testing.T) {
	valid := func(t *testing.T) (string, string) {
		data := t.TempDir()
		p, err := software.Open(data, "")
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		path := software.SealPath(data)
		b, _ := os.ReadFile(path)
		return data, string(b)
	}
	cases := []struct {
		name   string
		mutate func(t *testing.T, data, path, content string)
		want   string
	}{
		{"mode 0644", func(t *testing.T, _, path, _ string) { chmod(t, path, 0o644) }, "0644"},
		{"mode 0640", func(t *testing.T, _, path, _ string) { chmod(t, path, 0o640) }, "0640"},
		{"mode 0700", func(t *testing.T, _, path, _ string) { chmod(t, path, 0o700) }, "0700"},
		{"dir mode 0755", func(t *testing.T, _, path, _ string) { chmod(t, filepath.Dir(path), 0o755) }, "0755"},
		{"garbage", func(t *testing.T, _, path, _ string) { write(t, path, "not a seal at all") }, "malformed"},
		{"empty", func(t *testing.T, _, path, _ string) { write(t, path, "") }, "malformed"},
		{"truncated", func(t *testing.T, _, path, content string) { write(t, path, content[:len(content)/2]) }, "malformed"},
		{"flipped root digit", func(t *testing.T, _, path, content string) {
			i := strings.Index(content, `"root":"`) + len(`"root":"`)
			b := []byte(content)
			if b[i] == '0' {
				b[i] = '1'
			} else {
				b[i] = '0'
			}
			write(t, path, string(b))
		}, "checksum"},
		{"wrong format", func(t *testing.T, _, path, content string) {
			write(t, path, strings.Replace(content, software.SealFormat, "veil-enclave-root/v9", 1))
		}, "format"},
		{"unknown field", func(t *testing.T, _, path, content string) {
			write(t, path, strings.Replace(content, "{", `{"extra":1,`, 1))
		}, "malformed"},
		{"trailing document", func(t *testing.T, _, path, content string) { write(t, path, content+content) }, "malformed"},
		{"symlink", func(t *testing.T, _, path, content string) {
			other := path + ".real"
			write(t, other, content)
			os.Remove(path)
			if err := os.Symlink(other, path); err != nil {
				t.Fatal(err)
			}
		}, "regular file"},
		{"directory", func(t *testing.T, _, path, _ string) {
			os.Remove(path)
			os.Mkdir(path, 0o700)
		}, "regular file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, content := valid(t)
			path := software.SealPath(data)
			rootHex := content[strings.Index(content, `"root":"`)+8:][:64]
			tc.mutate(t, data, path, content)
			p, err := software.Open(data, "")
			if err == nil {
				p.Close()
				t.Fatal("Open accepted the seal")
			}
			if !errors.Is(err, software.ErrSeal) {
				t.Fatalf("error %v does not match ErrSeal", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not mention %q", msg, tc.want)
			}
			name := path
			if strings.HasPrefix(tc.name, "dir") {
				name = filepath.Dir(path)
			}
			if !strings.Contains(msg, name) {
				t.Errorf("error %q does not name %s", msg, name)
			}
			if strings.Contains(msg, rootHex) || strings.Contains(msg, rootHex[:16]) {
				t.Errorf("error %q shows the root", msg)
			}
		})
	}
}

func chmod(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, 0o600)
}

func TestStricterSealModeAccepted(t *testing.T) {
	data := t.TempDir()
	p, err := software.Open(data, "")
	if err != nil {
		t.Fatal(err)
	}
	want := derive(t, p, agent1, chains.Stellar, 0).Address
	p.Close()
	chmod(t, software.SealPath(data), 0o400)
	p, err = software.Open(data, "")
	if err != nil {
		t.Fatalf("mode 0400 refused: %v", err)
	}
	defer p.Close()
	if derive(t, p, agent1, chains.Stellar, 0).Address != want {
		t.Fatal("keys changed")
	}
}

func TestConfiguredRootOverrides(t *testing.T) {
	data := t.TempDir()
	sealed, err := software.Open(data, "")
	if err != nil {
		t.Fatal(err)
	}
	sealedAddr := derive(t, sealed, agent1, chains.Ethereum, 0).Address
	sealed.Close()
	before, _ := os.ReadFile(software.SealPath(data))

	root := randomRoot(t)
	direct := mustNew(t, root)
	for _, form := range []string{hex.EncodeToString(root[:]), "0x" + strings.ToUpper(hex.EncodeToString(root[:])), " " + hex.EncodeToString(root[:]) + "\n"} {
		p, err := software.Open(data, form)
		if err != nil {
			t.Fatalf("Open with configured root: %v", err)
		}
		if p.RootSource() != software.SourceConfigured {
			t.Fatalf("source = %s", p.RootSource())
		}
		for _, c := range chains.Order() {
			got, want := derive(t, p, agent1, c, 0), derive(t, direct, agent1, c, 0)
			if got.Address != want.Address || got.MetaAddress != want.MetaAddress {
				t.Fatalf("%s: configured root ignored", c)
			}
		}
		if derive(t, p, agent1, chains.Ethereum, 0).Address == sealedAddr {
			t.Fatal("configured root did not override the seal")
		}
		p.Close()
	}
	after, _ := os.ReadFile(software.SealPath(data))
	if string(before) != string(after) {
		t.Fatal("a configured root touched the seal")
	}
	// No data directory is needed with a configured root.
	if p, err := software.Open("", hex.EncodeToString(root[:])); err != nil {
		t.Fatal(err)
	} else {
		p.Close()
	}
	secret := hex.EncodeToString(root[:])
	for _, bad := range []string{secret[:63], secret + "00", "zz" + secret[2:], strings.Repeat("00", 32)} {
		p, err := software.Open(data, bad)
		if err == nil {
			p.Close()
			t.Fatalf("bad configured root accepted")
		}
		if !errors.Is(err, enclave.ErrInvalidInput) {
			t.Fatalf("error %v is not ErrInvalidInput", err)
		}
		if strings.Contains(err.Error(), secret[2:20]) {
			t.Fatalf("error %q shows the configured root", err)
		}
	}
	if _, err := software.Open("", ""); err == nil {
		t.Fatal("Open with neither data directory nor root succeeded")
	}
}
