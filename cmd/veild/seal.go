package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"unicode/utf8"

	"github.com/veilhq/veil/enclave/software"
)

// The passphrase of the software enclave's seal (docs/enclave.md,
// "Encrypted seal"): env only, never a flag, so that it does not show in
// process listings. The _NEW_ pair is the target of `veild enclave reseal`.
const (
	envSealPassphrase    = "VEIL_SEAL_PASSPHRASE"
	envSealKeyFile       = "VEIL_SEAL_KEY_FILE"
	envSealNewPassphrase = "VEIL_SEAL_NEW_PASSPHRASE"
	envSealNewKeyFile    = "VEIL_SEAL_NEW_KEY_FILE"
)

// sealPassphrase reads a passphrase from the env variable passVar or the
// file named by fileVar (its content, one trailing newline dropped). The
// file must be readable by its owner only. Nil when neither is set.
func sealPassphrase(passVar, fileVar string) ([]byte, error) {
	pass, file := os.Getenv(passVar), os.Getenv(fileVar)
	switch {
	case pass != "" && file != "":
		return nil, &usageError{fmt.Sprintf("%s and %s are both set: give the seal passphrase one way", passVar, fileVar)}
	case pass != "":
		return []byte(pass), nil
	case file == "":
		return nil, nil
	}
	st, err := os.Stat(file)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("%s: %v", fileVar, err)}
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return nil, &usageError{fmt.Sprintf("%s=%s has mode %04o: the passphrase file must be readable by its owner only (chmod 600 %s)", fileVar, file, perm, file)}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("%s: %v", fileVar, err)}
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 {
		return nil, &usageError{fmt.Sprintf("%s=%s is empty", fileVar, file)}
	}
	return b, nil
}

// The strength `veild enclave reseal` asks of a new passphrase
// (docs/enclave.md, "Encrypted seal"): anyone who copies root.seal can
// try passphrases offline for ever, so it must be long and varied.
const (
	minPassphraseLen      = 16
	minPassphraseDistinct = 8
	minPassphraseBits     = 80
)

// passphraseStrength refuses a passphrase shorter than
// minPassphraseLen, with fewer than minPassphraseDistinct distinct
// characters, or whose length times log2 of its alphabet (the sum of
// the classes it draws from: 26 lower, 26 upper, 10 digits, 33 other
// ASCII, 128 for any non-ASCII) is under minPassphraseBits. An upper
// bound on entropy, not a measure of it: it stops the short and the
// repetitive, and a random base64 or hex key file passes.
func passphraseStrength(p []byte) error {
	n := utf8.RuneCount(p)
	if n < minPassphraseLen {
		return fmt.Errorf("%d characters, at least %d are needed", n, minPassphraseLen)
	}
	distinct := map[rune]bool{}
	var lower, upper, digit, other, wide bool
	for _, r := range string(p) {
		distinct[r] = true
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		case r < utf8.RuneSelf:
			other = true
		default:
			wide = true
		}
	}
	if len(distinct) < minPassphraseDistinct {
		return fmt.Errorf("only %d distinct characters, at least %d are needed", len(distinct), minPassphraseDistinct)
	}
	alphabet := 0
	for _, c := range []struct {
		in   bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 33}, {wide, 128}} {
		if c.in {
			alphabet += c.size
		}
	}
	if bits := float64(n) * math.Log2(float64(alphabet)); bits < minPassphraseBits {
		return fmt.Errorf("about %.0f bits (%d characters from an alphabet of %d), at least %d are needed: make it longer or mix letters, digits and symbols", bits, n, alphabet, minPassphraseBits)
	}
	return nil
}

// enclaveCmd is `veild enclave reseal`: it re-encrypts the software
// enclave's root.seal. The current passphrase comes from
// VEIL_SEAL_PASSPHRASE or VEIL_SEAL_KEY_FILE (neither: the seal is plain),
// the new one from VEIL_SEAL_NEW_PASSPHRASE or VEIL_SEAL_NEW_KEY_FILE
// (neither: refused, unless --plain).
func enclaveCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "reseal" {
		return &usageError{"usage: veild enclave reseal [--data DIR] [--plain]  (passphrases from " + envSealPassphrase + " / " + envSealKeyFile + " and " + envSealNewPassphrase + " / " + envSealNewKeyFile + ")"}
	}
	fs := newFlagSet("veild enclave reseal", stderr)
	data := fs.String("data", "./data", "data directory (its enclave/root.seal)")
	plain := fs.Bool("plain", false, "store the root unencrypted (no new passphrase)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	oldPass, err := sealPassphrase(envSealPassphrase, envSealKeyFile)
	if err != nil {
		return err
	}
	newPass, err := sealPassphrase(envSealNewPassphrase, envSealNewKeyFile)
	if err != nil {
		return err
	}
	defer clear(oldPass)
	defer clear(newPass)
	switch {
	case len(newPass) == 0 && !*plain:
		return &usageError{"no new passphrase: set " + envSealNewPassphrase + " or " + envSealNewKeyFile + " (or --plain to store the root unencrypted)"}
	case len(newPass) > 0 && *plain:
		return &usageError{"--plain and a new passphrase: choose one"}
	case len(newPass) > 0:
		if err := passphraseStrength(newPass); err != nil {
			return &usageError{"the new passphrase is too weak: " + err.Error() + "; nothing was changed. Generate one: umask 077; openssl rand -base64 32 > /etc/veil/seal.key"}
		}
	}
	if err := software.Reseal(*data, oldPass, newPass, *plain); err != nil {
		if errors.Is(err, software.ErrPassphrase) {
			return fmt.Errorf("%w (the current passphrase comes from %s or %s)", err, envSealPassphrase, envSealKeyFile)
		}
		return err
	}
	if *plain {
		fmt.Fprintf(stdout, "resealed %s: the root is now stored unencrypted; unset %s/%s for veild serve\n", software.SealPath(*data), envSealPassphrase, envSealKeyFile)
	} else {
		fmt.Fprintf(stdout, "resealed %s: encrypted with the new passphrase; give it to veild serve as %s or %s\n", software.SealPath(*data), envSealPassphrase, envSealKeyFile)
	}
	return nil
}
