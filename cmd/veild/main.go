// Command veild is the Veil server: `veild serve`, `veild apikey create`,
// `veild devnet`, `veild version`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/veilhq/veil/internal/buildinfo"
)

// version is set at build time with -ldflags "-X main.version=…" (make
// build); without it the version comes from the Go toolchain's build
// information (internal/buildinfo).
var version = "dev"

const usage = `veild — the Veil agent platform server

Usage:
  veild serve [flags]                    serve the API (see veild serve -h)
  veild apikey create --account NAME     create an API key for an account (printed once)
  veild devnet [--out FILE]              run the six devnets for a local cluster; members use
                                         veild serve --chains-config FILE
  veild contracts deploy --chain C --rpc URL --key-file F
                                         deploy Veil's contracts on an EVM network and print
                                         its VEIL_EVM_<CHAIN>_* configuration
  veild enclave reseal [--data DIR]      encrypt or re-encrypt the enclave root's seal
                                         (VEIL_SEAL_PASSPHRASE → VEIL_SEAL_NEW_PASSPHRASE)
  veild backup --data DIR --out FILE     consistent copy of the bbolt file, from the running
                                         server (its admin socket) or from the stopped file
  veild restore --data DIR --from FILE   put a backup in place (server stopped)
  veild version                          print the version

Every flag has an env twin: --data is VEIL_DATA, --addr is VEIL_ADDR, ...
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "veild:", err)
		}
		os.Exit(exitCode(err))
	}
}

type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var ue *usageError
	if errors.As(err, &ue) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if errors.Is(err, errRejoin) {
		return exitRejoin
	}
	return 1
}

// commands are veild's commands by name; each gets the arguments after
// its name.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"serve":     serve,
	"apikey":    apikeyCmd,
	"backup":    backupCmd,
	"restore":   restoreCmd,
	"devnet":    devnetCmd,
	"contracts": contractsCmd,
	"enclave":   enclaveCmd,
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &usageError{"no command given"}
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "veild", buildinfo.Read(version))
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return &usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
}
