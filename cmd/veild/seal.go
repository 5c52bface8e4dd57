package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

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
