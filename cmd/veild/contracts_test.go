//go:build !nodevnet

package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/devnet"
	"github.com/veilhq/veil/chains/evm/evmtest"
)

// TestContractsDeployThenServe: `veild contracts deploy` against a node
// prints the VEIL_* block, running it again deploys nothing and prints the
// same block, and `veild serve` with that block starts; with the sender
// variable pointing at an ordinary account it refuses to start, naming the
// variable. On the embedded devnet and on a Hardhat 2 node.
func TestContractsDeployThenServe(t *testing.T) {
	t.Run("devnet", func(t *testing.T) {
		d, err := devnet.StartEVM(context.Background(), devnet.EVMOptions{Chains: []chains.ID{chains.Polygon}, Log: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		net := d.Net(chains.Polygon)
		key, _ := crypto.ToECDSA(crypto.Keccak256([]byte("veild contracts deploy test")))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := net.Fund(ctx, crypto.PubkeyToAddress(key.PublicKey)); err != nil {
			t.Fatal(err)
		}
		deployThenServe(t, "polygon", net.RPCURL(), key, "80002", "--test-tokens", "yes")
	})
	t.Run("hardhat", func(t *testing.T) {
		n := evmtest.StartHardhat(t)
		// Hardhat's account #1 (public, funded): #0 deployed the shared contracts.
		key, _ := crypto.HexToECDSA("59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
		deployThenServe(t, "ethereum", n.URL, key, "31337") // test tokens: auto, yes on 31337
	})
}

func deployThenServe(t *testing.T, chain, rpcURL string, key *ecdsa.PrivateKey, chainID string, extra ...string) {
	up := strings.ToUpper(chain)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "deployer.key")
	if err := os.WriteFile(keyFile, []byte(hexutil.Encode(crypto.FromECDSA(key))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deploy := func() (string, string, error) {
		args := append([]string{"contracts", "deploy", "--chain", chain, "--rpc", rpcURL, "--key-file", keyFile, "--state", filepath.Join(dir, "state.json")}, extra...)
		cmd := exec.Command(veildBin, args...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, progress, err := deploy()
	if err != nil {
		t.Fatalf("%v\n%s", err, progress)
	}
	for _, want := range []string{"VEIL_RPC_" + up + "=", "VEIL_EVM_" + up + "_CHAIN_ID=" + chainID, "VEIL_EVM_" + up + "_SENDER=0x", "VEIL_EVM_" + up + "_NAMES=0x",
		"VEIL_EVM_" + up + "_TOKENS=USDC=0x", "VEIL_EVM_" + up + "_FROM_BLOCK="} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(progress, "waiting for the receipt") || strings.Contains(progress+out, hexutil.Encode(crypto.FromECDSA(key))[2:]) {
		t.Fatalf("progress:\n%s", progress)
	}
	again, progress, err := deploy()
	if err != nil || again != out || !strings.Contains(progress, "0 deployed") {
		t.Fatalf("second run (%v):\n%s\n%s", err, again, progress)
	}

	var env []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "VEIL_") {
			env = append(env, line)
		}
	}
	serveWithEnv(t, env)

	// A mistyped sender: serve refuses to start and says which variable.
	bad := append(append([]string{}, env...), "VEIL_EVM_"+up+"_SENDER=0x00000000000000000000000000000000000000b0")
	cmd := exec.Command(veildBin, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--devnet-base-port", "0")
	cmd.Env = append(os.Environ(), bad...)
	msg, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok || !strings.Contains(strings.ToLower(string(msg)), "veil_evm_"+chain+"_sender=0x00000000000000000000000000000000000000b0") ||
		!strings.Contains(string(msg), "no contract code") {
		t.Fatalf("serve with a wrong sender: %v\n%s", err, msg)
	}

	// Usage errors change nothing and exit 2.
	for _, args := range [][]string{
		{"contracts", "deploy", "--chain", "stellar", "--rpc", rpcURL, "--key-file", keyFile},
		{"contracts", "deploy", "--chain", chain, "--rpc", rpcURL},
		{"contracts", "deploy", "--chain", chain, "--rpc", rpcURL, "--keystore", keyFile},
		{"contracts", "list"},
	} {
		out, err := exec.Command(veildBin, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
}

// serveWithEnv runs `veild serve` with env added until it serves, then
// stops it.
func serveWithEnv(t *testing.T, env []string) {
	t.Helper()
	cmd := exec.Command(veildBin, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--devnet-base-port", "0", "--shutdown-grace", "5s")
	cmd.Env = append(os.Environ(), env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(errPipe)
	var all strings.Builder
	for sc.Scan() {
		all.WriteString(sc.Text() + "\n")
		if servingRE.MatchString(sc.Text()) {
			_ = cmd.Process.Signal(os.Interrupt)
			_, _ = io.Copy(io.Discard, errPipe)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("veild exit: %v\n%s", err, all.String())
			}
			return
		}
	}
	t.Fatalf("veild exited before serving:\n%s", all.String())
}
