package main

import (
	"bufio"
	"fmt"
	"github.com/spf13/pflag"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/veilhq/veil/client"
)

// walletFlags choose the owner wallet that signs a create or export
// message, or carry a signature made elsewhere (a browser wallet).
type walletFlags struct {
	evmKeyFile             string
	keystore, passwordFile string
	stellarSecretFile      string
	sep53                  bool
	solanaKeypair          string

	wallet, signature, message, messageFile string
	printMessage                            bool
}

func (w *walletFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&w.evmKeyFile, "evm-key-file", "", "`file` holding an EVM private key in hex (env VEIL_EVM_KEY holds the key itself)")
	fs.StringVarP(&w.keystore, "keystore", "k", "", "EVM keystore `file` (geth, cast wallet, MetaMask export)")
	fs.StringVar(&w.passwordFile, "password-file", "", "`file` holding the keystore passphrase (env VEIL_KEYSTORE_PASSWORD; else asked on the terminal)")
	fs.StringVar(&w.stellarSecretFile, "stellar-secret-file", "", "`file` holding a Stellar secret seed S… (env VEIL_STELLAR_SECRET holds the seed itself)")
	fs.BoolVar(&w.sep53, "sep53", false, "sign the Stellar message the SEP-53 way (as Freighter does)")
	fs.StringVar(&w.solanaKeypair, "solana-keypair", "", "Solana keypair `file` (the Solana CLI's id.json, or base58 text)")
	fs.StringVarP(&w.wallet, "wallet", "w", "", "owner wallet `address`, with --signature (signed elsewhere) or --print-message")
	fs.StringVar(&w.signature, "signature", "", "a `signature` made elsewhere over the message (with --wallet and --message)")
	fs.StringVar(&w.message, "message", "", "the exact signed message `text` (with --signature)")
	fs.StringVar(&w.messageFile, "message-file", "", "`file` holding the exact signed message (with --signature)")
	fs.BoolVar(&w.printMessage, "print-message", false, "print the message to sign with --wallet's wallet (Issued At now) and exit")
}

// presigned reports a signature made elsewhere.
func (w *walletFlags) presigned() bool { return w.signature != "" }

// signer returns the signer the flags (or environment) choose.
func (w *walletFlags) signer(a *app) (client.Signer, error) {
	var chosen []string
	for name, v := range map[string]string{"--evm-key-file": w.evmKeyFile, "--keystore": w.keystore, "--stellar-secret-file": w.stellarSecretFile, "--solana-keypair": w.solanaKeypair} {
		if v != "" {
			chosen = append(chosen, name)
		}
	}
	if len(chosen) > 1 {
		return nil, usagef("choose one wallet: %s", strings.Join(chosen, ", "))
	}
	switch {
	case w.evmKeyFile != "":
		return signerFromFile(w.evmKeyFile, client.EVMSignerFromHex)
	case w.keystore != "":
		pass, err := w.passphrase(a)
		if err != nil {
			return nil, err
		}
		return client.EVMSignerFromKeystore(w.keystore, pass)
	case w.stellarSecretFile != "":
		return signerFromFile(w.stellarSecretFile, w.stellar)
	case w.solanaKeypair != "":
		return client.SolanaSignerFromKeypairFile(w.solanaKeypair)
	}
	evm, xlm := a.getenv("VEIL_EVM_KEY"), a.getenv("VEIL_STELLAR_SECRET")
	switch {
	case evm != "" && xlm != "":
		return nil, usagef("both VEIL_EVM_KEY and VEIL_STELLAR_SECRET are set: choose a wallet with a flag")
	case evm != "":
		return client.EVMSignerFromHex(evm)
	case xlm != "":
		return w.stellar(xlm)
	}
	return nil, usagef("no wallet to sign with: pass --keystore, --evm-key-file, --stellar-secret-file or --solana-keypair (or VEIL_EVM_KEY / VEIL_STELLAR_SECRET), or --wallet with --signature made elsewhere")
}

// signerFromFile is the signer parse makes of a key file's text.
func signerFromFile(path string, parse func(string) (client.Signer, error)) (client.Signer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parse(string(raw))
}

func (w *walletFlags) stellar(seed string) (client.Signer, error) {
	return client.StellarSignerFromSecret(seed, w.sep53)
}

func (w *walletFlags) passphrase(a *app) (string, error) {
	if w.passwordFile != "" {
		raw, err := os.ReadFile(w.passwordFile)
		if err != nil {
			return "", err
		}
		return strings.TrimRight(string(raw), "\r\n"), nil
	}
	if p := a.getenv("VEIL_KEYSTORE_PASSWORD"); p != "" {
		return p, nil
	}
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(a.stderr, "Passphrase for %s: ", w.keystore)
		p, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		return string(p), err
	}
	if a.stdin != nil {
		// Piped: the first line of standard input.
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		if line = strings.TrimRight(line, "\r\n"); line != "" || err == nil {
			return line, nil
		}
	}
	return "", usagef("the keystore needs a passphrase: pass --password-file or set VEIL_KEYSTORE_PASSWORD")
}

// signedMessage returns --message or --message-file's text.
func (w *walletFlags) signedMessage() (string, error) {
	if w.messageFile != "" {
		if w.message != "" {
			return "", usagef("pass --message or --message-file, not both")
		}
		raw, err := os.ReadFile(w.messageFile)
		if err != nil {
			return "", err
		}
		// Editors add a final newline; the signed text has none.
		return strings.TrimRight(string(raw), "\r\n"), nil
	}
	return strings.ReplaceAll(w.message, `\n`, "\n"), nil
}

// printSignable prints a message for the owner to sign elsewhere, with a
// final newline only on a terminal (the signed text has none).
func (a *app) printSignable(msg string) {
	fmt.Fprint(a.stdout, msg)
	if isTerminal(a.stdout) {
		fmt.Fprintln(a.stdout)
	}
}

// ownerAction is an action on an existing agent that its owner wallet
// signs (export, approve, deny): how to make its message, and its request
// from a signature made elsewhere or from a signer.
type ownerAction[R any] struct {
	what      string // names the action in "(… always sends the signed message)"
	message   func(wallet string) string
	presigned func(signature, message string) R
	sign      func(client.Signer) (R, error)
}

// request returns the action's request as the wallet flags choose: with
// --print-message it prints the message and reports done; with
// --signature it carries the signed message (which must be given); else
// the flags' (or environment's) wallet signs.
func (o ownerAction[R]) request(a *app, w *walletFlags) (req R, done bool, err error) {
	switch {
	case w.printMessage:
		if w.wallet == "" {
			return req, false, usagef("--print-message needs --wallet ADDRESS (the owner wallet)")
		}
		a.printSignable(o.message(w.wallet))
		return req, true, nil
	case w.presigned():
		msg, err := w.signedMessage()
		if err != nil {
			return req, false, err
		}
		if msg == "" {
			return req, false, usagef("--signature needs --message or --message-file (%s always sends the signed message)", o.what)
		}
		return o.presigned(w.signature, msg), false, nil
	}
	s, err := w.signer(a)
	if err != nil {
		return req, false, err
	}
	req, err = o.sign(s)
	return req, false, err
}
