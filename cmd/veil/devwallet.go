package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/veilhq/veil/client"
)

// veil wallet new --dev: a throw-away owner key for the first hour on the
// devnets, so that creating an agent needs no wallet of one's own. It is
// written to a file readable by its owner only and said to be devnet-only
// everywhere it shows: a key that lies in a file in the clear must never
// own anything of value.

func init() {
	var out string
	var dev, force bool
	register(&command{
		path:    "wallet new",
		summary: "write a throw-away EVM owner key for the devnets (--dev; never for real money)",
		detail: "The key is written in hex to --out (default veil-dev-owner.key, mode 0600) and its address printed. " +
			"Use it with `veil agent create NAME --chain ethereum --evm-key-file veil-dev-owner.key`. " +
			"It is a plain file on disk: use it only on devnets; a real owner wallet is a hardware or browser wallet, or an encrypted keystore (--keystore).",
		examples: []string{"veil wallet new --dev", "veil agent create alice --chain ethereum --evm-key-file veil-dev-owner.key"},
		flags: func(a *app, fs *pflag.FlagSet) {
			fs.BoolVar(&dev, "dev", false, "confirm this is for devnets only (required)")
			fs.StringVar(&out, "out", "veil-dev-owner.key", "the `file` to write")
			fs.BoolVar(&force, "force", false, "overwrite --out if it exists")
		},
		run: func(a *app, args []string) error {
			if err := noArgs("wallet new", args); err != nil {
				return err
			}
			if !dev {
				return usagef("wallet new makes only devnet keys: pass --dev to confirm it will never own real money (for a real wallet use a hardware or browser wallet, or --keystore)")
			}
			var k [32]byte
			if _, err := rand.Read(k[:]); err != nil {
				return err
			}
			h := hex.EncodeToString(k[:])
			s, err := client.EVMSignerFromHex(h)
			if err != nil {
				return err
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(out, flags, 0o600)
			if errors.Is(err, os.ErrExist) {
				return usagef("%s exists: pass --force to overwrite it, or --out another file", out)
			}
			if err != nil {
				return err
			}
			if _, err := f.WriteString(h + "\n"); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			return a.print(map[string]string{"address": s.Address(), "file": out, "network": "devnet only"}, func() error {
				fmt.Fprintf(a.stderr, "DEVNET ONLY: a throw-away owner key in the clear in %s; never send real money to %s.\n", out, s.Address())
				fmt.Fprintln(a.stdout, s.Address())
				fmt.Fprintf(a.stderr, "Next: veil agent create alice --chain ethereum --evm-key-file %s\n", out)
				return nil
			})
		},
	})
}
