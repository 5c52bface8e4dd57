package software

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Seal file layout (docs/enclave.md, "Root secret").
const (
	// SealDir is the directory under the data directory.
	SealDir = "enclave"
	// SealFile is the root's file name inside SealDir.
	SealFile = "root.seal"
	// SealFormat is the seal's format tag.
	SealFormat = "veil-enclave-root/v1"
	// sealCheckDomain prefixes the root in the seal's checksum.
	sealCheckDomain = "veil/enclave/root-check/v1"
	maxSealSize     = 4096
)

// ErrSeal reports a seal file or directory that Open refuses: too-open
// permissions, not a regular file, malformed content. The message names the
// path and never shows the content.
var ErrSeal = errors.New("enclave: root seal refused")

// SealPath returns <dataDir>/enclave/root.seal.
func SealPath(dataDir string) string { return filepath.Join(dataDir, SealDir, SealFile) }

// sealJSON is the seal file: {"format":"veil-enclave-root/v1",
// "root":"<64 hex>","check":"<16 hex>"} where check is the first 8 bytes of
// SHA-256(sealCheckDomain || root), so that a damaged file is refused
// instead of silently yielding other keys.
type sealJSON struct {
	Format string `json:"format"`
	Root   string `json:"root"`
	Check  string `json:"check"`
}

func sealCheck(root *[32]byte) string {
	var buf [len(sealCheckDomain) + 32]byte
	copy(buf[:], sealCheckDomain)
	copy(buf[len(sealCheckDomain):], root[:])
	d := sha256.Sum256(buf[:])
	clear(buf[:])
	return hex.EncodeToString(d[:8])
}

// encodeSeal returns the seal file for root: encrypted (SealFormatEncrypted)
// when pass is not empty, else the plain SealFormat.
func encodeSeal(root *[32]byte, pass []byte) ([]byte, error) {
	if len(pass) > 0 {
		return encryptSeal(root, pass)
	}
	b, _ := json.Marshal(sealJSON{Format: SealFormat, Root: hex.EncodeToString(root[:]), Check: sealCheck(root)})
	return append(b, '\n'), nil
}

func sealErr(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrSeal, path, fmt.Sprintf(format, args...))
}

// loadOrCreateSeal returns the root sealed under dataDir, creating it with
// crypto/rand on first use (encrypted under pass when pass is not empty).
// created reports a new root.
func loadOrCreateSeal(dataDir string, pass []byte) (root [32]byte, created bool, err error) {
	dir := filepath.Join(dataDir, SealDir)
	if err := ensureDir(dataDir, dir); err != nil {
		return root, false, err
	}
	path := filepath.Join(dir, SealFile)
	root, err = readSeal(path, pass)
	if err == nil {
		return root, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return root, false, err
	}
	if _, err := io.ReadFull(rand.Reader, root[:]); err != nil {
		return root, false, fmt.Errorf("enclave: read random root: %w", err)
	}
	data, err := encodeSeal(&root, pass)
	if err != nil {
		clear(root[:])
		return root, false, err
	}
	defer clear(data)
	won, err := writeSealExclusive(dir, path, data)
	if err != nil {
		clear(root[:])
		return root, false, err
	}
	if !won {
		// Another process created the seal between our read and our
		// write: use its root, never overwrite it.
		clear(root[:])
		root, err = readSeal(path, pass)
		return root, false, err
	}
	return root, true, nil
}

// ensureDir creates dir (0700) or checks that it is a directory nobody but
// its owner can read or write.
func ensureDir(dataDir, dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return fmt.Errorf("enclave: create data directory %s: %w", dataDir, err)
		}
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("enclave: create %s: %w", dir, err)
		}
		st, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("enclave: %s: %w", dir, err)
	}
	if !st.IsDir() {
		return sealErr(dir, "not a directory")
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return sealErr(dir, "directory mode is %04o; it must be 0700 (run: chmod 700 %s)", perm, dir)
	}
	return nil
}

// readSeal reads, validates and (when encrypted) decrypts the seal at path
// with pass. A missing file returns an error matching fs.ErrNotExist.
func readSeal(path string, pass []byte) ([32]byte, error) {
	root, _, err := readSealInfo(path, pass)
	return root, err
}

// readSealInfo is readSeal that also says whether the file is encrypted.
func readSealInfo(path string, pass []byte) ([32]byte, bool, error) {
	var root [32]byte
	data, err := readSealFile(path)
	if err != nil {
		return root, false, err
	}
	defer clear(data)
	var head struct {
		Format string `json:"format"`
	}
	// The decoder's messages may quote the content: never pass them on.
	if err := json.Unmarshal(data, &head); err != nil {
		return root, false, sealErr(path, "malformed: not a %s or %s JSON document (damaged or truncated file: restore it from a backup)", SealFormat, SealFormatEncrypted)
	}
	switch head.Format {
	case SealFormatEncrypted:
		if len(pass) == 0 {
			return root, true, fmt.Errorf("%w: %s is encrypted: give its passphrase in VEIL_SEAL_PASSPHRASE or VEIL_SEAL_KEY_FILE", ErrPassphrase, path)
		}
		root, err := decryptSeal(path, data, pass)
		return root, true, err
	case SealFormat:
		if len(pass) > 0 {
			return root, false, fmt.Errorf("%w: %s is stored unencrypted but a seal passphrase is set: encrypt it first with `veild enclave reseal` (docs/enclave.md), or unset the passphrase", ErrSeal, path)
		}
		root, err := decodePlainSeal(path, data)
		return root, false, err
	default:
		return root, false, sealErr(path, "malformed: format is neither %q nor %q", SealFormat, SealFormatEncrypted)
	}
}

// readSealFile reads the seal at path after checking what it is: a regular
// file (no symbolic link), mode 0600 or stricter, at most maxSealSize bytes.
func readSealFile(path string) ([]byte, error) {
	lst, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("enclave: %s: %w", path, err)
	}
	if !lst.Mode().IsRegular() {
		return nil, sealErr(path, "not a regular file (symbolic links are refused)")
	}
	if perm := lst.Mode().Perm(); perm&^0o600 != 0 {
		return nil, sealErr(path, "file mode is %04o; it must be 0600 or stricter (run: chmod 600 %s)", perm, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("enclave: open %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(st, lst) {
		return nil, sealErr(path, "file changed while being opened")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSealSize+1))
	if err != nil {
		return nil, fmt.Errorf("enclave: read %s: %w", path, err)
	}
	if len(data) > maxSealSize {
		clear(data)
		return nil, sealErr(path, "malformed: larger than %d bytes", maxSealSize)
	}
	return data, nil
}

// decodePlainSeal decodes a SealFormat file.
func decodePlainSeal(path string, data []byte) ([32]byte, error) {
	var root [32]byte
	var s sealJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	// The decoder's messages may quote the content: never pass them on.
	if err := dec.Decode(&s); err != nil || dec.More() {
		return root, sealErr(path, "malformed: not a %s JSON document", SealFormat)
	}
	if s.Format != SealFormat {
		return root, sealErr(path, "malformed: format is not %q", SealFormat)
	}
	if len(s.Root) != 64 {
		return root, sealErr(path, "malformed: root is not 64 hex digits")
	}
	if _, err := hex.Decode(root[:], []byte(s.Root)); err != nil {
		clear(root[:])
		return root, sealErr(path, "malformed: root is not 64 hex digits")
	}
	if subtle.ConstantTimeCompare([]byte(sealCheck(&root)), []byte(strings.ToLower(s.Check))) != 1 {
		clear(root[:])
		return root, sealErr(path, "malformed: checksum does not match the root (damaged file)")
	}
	if isZero(&root) {
		return root, sealErr(path, "malformed: root is all zero")
	}
	return root, nil
}

// writeSealExclusive writes the seal atomically without ever replacing an
// existing one: temp file (0600) in dir, write, fsync, hard-link to path
// (fails if path exists), remove the temp name, fsync dir. On a file system
// without hard links it falls back to rename. won is false when path
// appeared meanwhile.
func writeSealExclusive(dir, path string, data []byte) (won bool, err error) {
	tmpName, err := writeTemp(dir, data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmpName)
	switch err := os.Link(tmpName, path); {
	case err == nil:
	case errors.Is(err, fs.ErrExist):
		return false, nil
	default:
		if _, serr := os.Lstat(path); serr == nil {
			return false, nil
		}
		if err := os.Rename(tmpName, path); err != nil {
			return false, fmt.Errorf("enclave: install %s: %w", path, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return false, err
	}
	return true, nil
}

// writeTemp writes data to a new 0600 temp file in dir and fsyncs it.
func writeTemp(dir string, data []byte) (string, error) {
	tmp, err := os.CreateTemp(dir, ".root.seal.tmp-*")
	if err != nil {
		return "", fmt.Errorf("enclave: create seal in %s: %w", dir, err)
	}
	tmpName := tmp.Name()
	fail := func(what string, err error) (string, error) {
		tmp.Close()
		os.Remove(tmpName)
		return "", fmt.Errorf("enclave: %s %s: %w", what, tmpName, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fail("chmod", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmpName)
		return "", fmt.Errorf("enclave: close %s: %w", tmpName, err)
	}
	return tmpName, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("enclave: open %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("enclave: fsync %s: %w", dir, err)
	}
	return nil
}

func isZero(b *[32]byte) bool {
	var z [32]byte
	return subtle.ConstantTimeCompare(b[:], z[:]) == 1
}
