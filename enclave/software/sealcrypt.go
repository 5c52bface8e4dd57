package software

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/crypto/argon2"
)

// SealFormatEncrypted is the format tag of a seal encrypted under a
// passphrase (docs/enclave.md, "Encrypted seal").
const SealFormatEncrypted = "veil-enclave-root/v2-argon2id-aes256gcm"

// ErrPassphrase reports a seal that cannot be opened with the passphrase
// given: none given for an encrypted seal, or the wrong one. The file is
// never changed by such a failure.
var ErrPassphrase = errors.New("enclave: seal passphrase refused")

// KDFParams are argon2id's cost parameters, stored in each encrypted seal
// so that a later change of the defaults still opens older files.
type KDFParams struct {
	Time    uint32 `json:"time"`    // passes
	Memory  uint32 `json:"memory"`  // KiB
	Threads uint8  `json:"threads"` // lanes
}

// defaultKDF is RFC 9106's second recommended setting (t=3, 64 MiB, p=4):
// about a tenth of a second per try on one core. Tests lower it.
var defaultKDF = KDFParams{Time: 3, Memory: 64 << 10, Threads: 4}

// Bounds on stored parameters, so that a tampered file cannot make Open
// allocate without limit or skip the work.
const (
	maxKDFMemory = 4 << 20 // KiB (4 GiB)
	maxKDFTime   = 100
)

// sealEncJSON is the encrypted seal file. The key is
// argon2id(passphrase, salt, params) (32 bytes); the ciphertext is
// AES-256-GCM over the 32-byte root with the nonce, and the additional data
// binds the format, the salt and the parameters (aad below), so that none
// of them can be changed without the file failing to open.
type sealEncJSON struct {
	Format     string    `json:"format"`
	KDF        KDFParams `json:"kdf"`
	Salt       string    `json:"salt"`       // base64, 16 bytes
	Nonce      string    `json:"nonce"`      // base64, 12 bytes
	Ciphertext string    `json:"ciphertext"` // base64, 32 + 16 bytes
}

func (s sealEncJSON) aad() []byte {
	return []byte(s.Format + "\x00" + strconv.FormatUint(uint64(s.KDF.Time), 10) + "\x00" +
		strconv.FormatUint(uint64(s.KDF.Memory), 10) + "\x00" + strconv.FormatUint(uint64(s.KDF.Threads), 10) + "\x00" + s.Salt)
}

func sealKey(pass, salt []byte, p KDFParams) []byte {
	return argon2.IDKey(pass, salt, p.Time, p.Memory, p.Threads, 32)
}

func encryptSeal(root *[32]byte, pass []byte) ([]byte, error) {
	var salt [16]byte
	var nonce [12]byte
	if _, err := io.ReadFull(rand.Reader, salt[:]); err != nil {
		return nil, fmt.Errorf("enclave: random salt: %w", err)
	}
	if _, err := io.ReadFull(rand.Reader, nonce[:]); err != nil {
		return nil, fmt.Errorf("enclave: random nonce: %w", err)
	}
	s := sealEncJSON{Format: SealFormatEncrypted, KDF: defaultKDF, Salt: base64.StdEncoding.EncodeToString(salt[:]), Nonce: base64.StdEncoding.EncodeToString(nonce[:])}
	key := sealKey(pass, salt[:], s.KDF)
	defer clear(key)
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	s.Ciphertext = base64.StdEncoding.EncodeToString(aead.Seal(nil, nonce[:], root[:], s.aad()))
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func decryptSeal(path string, data, pass []byte) ([32]byte, error) {
	var root [32]byte
	var s sealEncJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return root, sealErr(path, "malformed: not a %s JSON document (damaged or truncated file: restore it from a backup)", SealFormatEncrypted)
	}
	salt, err1 := base64.StdEncoding.DecodeString(s.Salt)
	nonce, err2 := base64.StdEncoding.DecodeString(s.Nonce)
	ct, err3 := base64.StdEncoding.DecodeString(s.Ciphertext)
	switch {
	case err1 != nil || err2 != nil || err3 != nil || len(salt) < 16 || len(nonce) != 12 || len(ct) != 32+16:
		return root, sealErr(path, "malformed: salt, nonce or ciphertext is missing or has the wrong length (damaged file: restore it from a backup)")
	case s.KDF.Time < 1 || s.KDF.Time > maxKDFTime || s.KDF.Threads < 1 || s.KDF.Memory < 8*uint32(s.KDF.Threads) || s.KDF.Memory > maxKDFMemory:
		return root, sealErr(path, "malformed: argon2id parameters out of range (damaged file)")
	}
	key := sealKey(pass, salt, s.KDF)
	defer clear(key)
	aead, err := newGCM(key)
	if err != nil {
		return root, err
	}
	plain, err := aead.Open(nil, nonce, ct, s.aad())
	if err != nil {
		// GCM cannot tell a wrong key from a changed ciphertext; the
		// format and lengths were checked above, so a wrong passphrase
		// is by far the likelier.
		return root, fmt.Errorf("%w: %s does not open with this passphrase (wrong passphrase, or the file was altered): nothing was changed", ErrPassphrase, path)
	}
	defer clear(plain)
	copy(root[:], plain)
	if isZero(&root) {
		return root, sealErr(path, "malformed: root is all zero")
	}
	return root, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("enclave: aes: %w", err)
	}
	return cipher.NewGCM(block)
}

// Reseal re-encrypts the seal under dataDir: it opens it with oldPass
// (empty for a plain seal) and writes it again encrypted under newPass
// (empty: plain, which only allowPlain permits). The new file is written
// to a temp file, fsynced, read back and checked to hold the same root,
// then renamed over the old one and the directory fsynced: a crash leaves
// the old or the new file, never a mix, and a wrong oldPass changes
// nothing. It must not run while a veild serves this data directory with
// a different passphrase in mind (it reads the seal only at start).
func Reseal(dataDir string, oldPass, newPass []byte, allowPlain bool) error {
	if len(newPass) == 0 && !allowPlain {
		return fmt.Errorf("%w: no new passphrase: give one (storing the root unencrypted needs an explicit choice)", ErrPassphrase)
	}
	dir := filepath.Join(dataDir, SealDir)
	path := filepath.Join(dir, SealFile)
	if _, err := os.Lstat(path); err != nil {
		return fmt.Errorf("enclave: %s: %w (reseal needs an existing seal; veild serve creates one)", path, err)
	}
	if err := ensureDir(dataDir, dir); err != nil {
		return err
	}
	if f, err := sealFormat(path); err == nil && f == SealFormat && len(oldPass) > 0 {
		return fmt.Errorf("%w: %s is not encrypted, but a current passphrase was given: give none to encrypt it (nothing was changed)", ErrPassphrase, path)
	}
	root, err := readSeal(path, oldPass)
	if err != nil {
		return err
	}
	defer clear(root[:])
	data, err := encodeSeal(&root, newPass)
	if err != nil {
		return err
	}
	defer clear(data)
	tmpName, err := writeTemp(dir, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmpName) // after a successful rename there is nothing to remove
	check, err := readSeal(tmpName, newPass)
	if err != nil {
		return fmt.Errorf("enclave: the new seal does not read back: %w (the old one is unchanged)", err)
	}
	same := subtle.ConstantTimeCompare(check[:], root[:]) == 1
	clear(check[:])
	if !same {
		return fmt.Errorf("enclave: the new seal reads back another root (the old one is unchanged)")
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("enclave: install %s: %w (the old seal is unchanged)", path, err)
	}
	return syncDir(dir)
}

// SealEncrypted reports whether the seal under dataDir is encrypted; an
// error when there is none or it is unreadable.
func SealEncrypted(dataDir string) (bool, error) {
	f, err := sealFormat(SealPath(dataDir))
	return f == SealFormatEncrypted, err
}

// sealFormat is the format tag of the seal at path.
func sealFormat(path string) (string, error) {
	data, err := readSealFile(path)
	if err != nil {
		return "", err
	}
	defer clear(data)
	var head struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", sealErr(path, "malformed")
	}
	return head.Format, nil
}
