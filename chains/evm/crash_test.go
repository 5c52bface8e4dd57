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
	"github.com/veilhq/veil/chains/chainstest"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/internal/settletest"
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
	crashAgentEnv = "VEIL_EVM_CRASH_AGENTS" // prefix of the agents' ids
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
	point := os.Getenv(crashPointEnv)
	store := openStore(t, os.Getenv(crashDBEnv))
	prefix := os.Getenv(crashAgentEnv)
	alice, bob := evmtest.NewAgent(prefix+"alice"), evmtest.NewAgent(prefix+"bob")
	c := connect(t, cfg, store, evmtest.NewSigner(alice, bob), func(o *evm.Options) {
		o.Failpoint = func(p string) error {
			if p == point {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // never returns
			}
			return nil
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.SendStealth(ctx, alice.Ref(cfg.Chain), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, ""), Amount: amt("0.1"), To: bob.Meta, IdempotencyKey: os.Getenv(crashKeyEnv)})
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

// On the devnet and on a Hardhat node (its own wordings for "already
// known" and "nonce too low" on rebroadcast).
func TestFailpointsCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, b := range interopBackends(t) {
		t.Run(b.name, func(t *testing.T) { failpointsCrashRestart(t, b) })
	}
}

func failpointsCrashRestart(t *testing.T, b backend) {
	cfg := b.cfg
	dir := t.TempDir()
	prefix := onSharedNode("crash-"+b.name) + "-"
	alice, bob := evmtest.NewAgent(prefix+"alice"), evmtest.NewAgent(prefix+"bob")
	signer := evmtest.NewSigner(alice, bob)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b.fund(t, alice.Address)
	var cursor string
	{
		store := openStore(t, dir)
		c := connect(t, cfg, store, signer, nil)
		cursor = scanHead(t, c)
		c.Close()
		_ = store.Close()
	}
	cfgJSON, _ := json.Marshal(cfg)
	points := []string{evm.FailAfterSign, evm.FailBeforePersist, evm.FailBeforeBroadcast, evm.FailAfterBroadcast, evm.FailBeforeConfirm}
	results := map[string]string{}
	for _, p := range points {
		key := "crash-" + string(p)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashCfgEnv+"="+string(cfgJSON), crashDBEnv+"="+dir,
			crashPointEnv+"="+string(p), crashKeyEnv+"="+key, crashAgentEnv+"="+prefix)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: child was not killed at the failpoint: %v\n%s", p, err, out)
		}

		// Restart: a new connector on the same store; maintenance
		// rebroadcasts what was persisted; the caller retries its key.
		store := openStore(t, dir)
		var settled settletest.Recorder
		c := connect(t, cfg, store, signer, func(o *evm.Options) { o.OnSettled = settled.On })
		if _, err := c.MaintainOnce(ctx, true); err != nil {
			t.Fatalf("%s: maintenance after restart: %v", p, err)
		}
		r, err := c.SendStealth(ctx, alice.Ref(cfg.Chain), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, ""), Amount: amt("0.1"), To: bob.Meta, IdempotencyKey: key})
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
		// Its settlement is reported once.
		if got := settled.Of(key); len(got) != 1 || got[0].Status != chains.SettlementConfirmed || got[0].TxHash != r.TxHash {
			t.Fatalf("%s: settlements %+v; want one confirmed of %s", p, got, r.TxHash)
		}
		// A second retry answers the same transaction.
		r2, err := c.SendStealth(ctx, alice.Ref(cfg.Chain), alice.Address.Hex(), chains.SendRequest{Asset: chainstest.Asset(c, ""), Amount: amt("0.1"), To: bob.Meta, IdempotencyKey: key})
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
	all, _, err := c.Scan(ctx, cursor, 1000)
	if err != nil {
		t.Fatal(err)
	}
	byTx := map[string]bool{}
	for _, a := range all {
		if ok, _ := bob.Owns(a); !ok {
			continue // another test's payment on a shared node
		}
		if a.Amount != "0.1" || byTx[a.TxHash] {
			t.Fatalf("unexpected announcement %+v", a)
		}
		byTx[a.TxHash] = true
	}
	if len(byTx) != len(points) {
		t.Fatalf("%d payments on chain for %d keys", len(byTx), len(points))
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
