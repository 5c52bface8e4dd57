//go:build !nodevnet

package evm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
)

// The failpoint test kills a process that is paying, at each dangerous step,
// with SIGKILL (the process dies there: no deferred code, no cleanup), then
// restarts on the same store and proves the payment happens exactly once and
// the sender's nonces have no gap and no reuse.
const (
	crashCfgEnv   = "VEIL_EVM_CRASH_CFG"
	crashDBEnv    = "VEIL_EVM_CRASH_DB"
	crashPointEnv = "VEIL_EVM_CRASH_POINT"
	crashKeyEnv   = "VEIL_EVM_CRASH_KEY"
)

// TestCrashChild is the child's body; it runs only under the parent.
func TestCrashChild(t *testing.T) {
	raw := os.Getenv(crashCfgEnv)
	if raw == "" {
		t.Skip("child of TestFailpointsCrashRestart")
	}
	var cfg evm.Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	point := evm.Failpoint(os.Getenv(crashPointEnv))
	store := openStore(t, os.Getenv(crashDBEnv))
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	c := connect(t, cfg, store, evmtest.NewSigner(alice, bob), func(o *evm.Options) {
		o.Failpoint = func(p evm.Failpoint) error {
			if p == point {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never returns
			}
			return nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.SendStealth(ctx, alice.Ref(cfg.Chain), alice.Address.Hex(), bob.Meta, "0.1", "", os.Getenv(crashKeyEnv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitMined(ctx, r.TxHash); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MaintainOnce(ctx, false); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("failpoint %s was never reached", point)
}

func TestFailpointsCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	d := startDevnet(t, chains.Base)
	cfg, _ := d.Config(chains.Base)
	dir := t.TempDir()
	alice, bob := evmtest.NewAgent("alice"), evmtest.NewAgent("bob")
	signer := evmtest.NewSigner(alice, bob)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	{
		store := openStore(t, dir)
		c := connect(t, cfg, store, signer, nil)
		f, err := c.Fund(ctx, alice.Address.Hex())
		if err != nil {
			t.Fatal(err)
		}
		mustMined(t, c, f.TxHash)
		c.Close()
		_ = store.Close()
	}
	cfgJSON, _ := json.Marshal(cfg)
	points := []evm.Failpoint{evm.FailAfterSign, evm.FailBeforePersist, evm.FailBeforeBroadcast, evm.FailAfterBroadcast, evm.FailBeforeConfirm}
	results := map[string]string{}
	for _, p := range points {
		key := "crash-" + string(p)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashCfgEnv+"="+string(cfgJSON), crashDBEnv+"="+dir,
			crashPointEnv+"="+string(p), crashKeyEnv+"="+key)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: child was not killed at the failpoint: %v\n%s", p, err, out)
		}

		// Restart: a new connector on the same store; maintenance
		// rebroadcasts what was persisted; the caller retries its key.
		store := openStore(t, dir)
		c := connect(t, cfg, store, signer, nil)
		if _, err := c.MaintainOnce(ctx, true); err != nil {
			t.Fatalf("%s: maintenance after restart: %v", p, err)
		}
		r, err := c.SendStealth(ctx, alice.Ref(chains.Base), alice.Address.Hex(), bob.Meta, "0.1", "", key)
		if err != nil {
			t.Fatalf("%s: retry: %v", p, err)
		}
		mustMined(t, c, r.TxHash)
		for i := 0; ; i++ {
			rep, err := c.MaintainOnce(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Pending == 0 {
				break
			}
			if i > 500 {
				t.Fatalf("%s: still pending: %+v", p, rep)
			}
			time.Sleep(10 * time.Millisecond)
		}
		// A second retry answers the same transaction.
		r2, err := c.SendStealth(ctx, alice.Ref(chains.Base), alice.Address.Hex(), bob.Meta, "0.1", "", key)
		if err != nil || r2.TxHash != r.TxHash {
			t.Fatalf("%s: second retry %+v %v, want %s", p, r2, err, r.TxHash)
		}
		results[key] = r.TxHash
		c.Close()
		_ = store.Close()
	}

	// Exactly one payment per key, and nonces 0..n-1 each used once.
	store := openStore(t, dir)
	defer store.Close()
	c := connect(t, cfg, store, signer, nil)
	anns := scanAll(t, c, 1000)
	if len(anns) != len(points) {
		t.Fatalf("%d payments on chain for %d keys", len(anns), len(points))
	}
	byTx := map[string]bool{}
	for _, a := range anns {
		if ok, _ := bob.Owns(a); !ok || a.Amount != "0.1" {
			t.Fatalf("unexpected announcement %+v", a)
		}
		byTx[a.TxHash] = true
	}
	for k, h := range results {
		if !byTx[h] {
			t.Fatalf("%s: recorded %s is not the payment on chain", k, h)
		}
	}
	checkNonces(t, c, alice.Address, 0, len(points))
	if n, _ := c.NextNonce(ctx, alice.Address); n != uint64(len(points)) {
		t.Fatalf("ledger next nonce %d, want %d", n, len(points))
	}
}
