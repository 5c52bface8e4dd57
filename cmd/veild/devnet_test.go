package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
)

// devnetProc is a running `veild devnet`.
type devnetProc struct {
	cmd    *exec.Cmd
	exited chan error // receives Wait's result once
	stderr *lockedBuffer
}

// startDevnet runs `veild devnet` and waits until it has written out.
func startDevnet(t *testing.T, data, out string) *devnetProc {
	t.Helper()
	cmd := exec.Command(veildBin, "devnet", "--data", data, "--devnet-base-port", "0", "--out", out)
	stdout := &lockedBuffer{}
	d := &devnetProc{cmd: cmd, exited: make(chan error, 1), stderr: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = stdout, d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(stdout.String(), "Chains config written to "+out) {
		select {
		case err := <-d.exited:
			t.Fatalf("veild devnet exited: %v\nstderr: %s", err, d.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("veild devnet did not report its chains config; stderr: %s", d.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return d
}

// Two members on their own bbolt stores share the chains of one `veild
// devnet`: an agent on one member pays an agent on the other by name, on
// an EVM chain, Stellar and Solana, and the payee's member finds each
// payment on the shared chains; each sees the other's registered name.
func TestSharedDevnetsForTwoMembers(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "shared", "chains.json")
	devnet := startDevnet(t, filepath.Join(dir, "devnet"), cfgFile)

	fi, err := os.Stat(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("chains config mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(cfgFile)
	var file chainsConfig
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.EVM) != 4 || file.Stellar == nil || file.Solana == nil {
		t.Fatalf("chains config has %d EVM chains, stellar %v, solana %v; want all six:\n%s", len(file.EVM), file.Stellar != nil, file.Solana != nil, raw)
	}

	a := start(t, filepath.Join(dir, "a"), "--chains-config", cfgFile)
	b := start(t, filepath.Join(dir, "b"), "--chains-config", cfgFile)
	for _, p := range []*proc{a, b} {
		if logs := p.stderr.all.String(); strings.Contains(logs, "starting EVM devnets") || strings.Contains(logs, "component=devnet") {
			t.Fatalf("a member started devnets of its own:\n%s", logs)
		}
	}
	keyA, keyB := keyRE.FindString(a.stdout.String()), keyRE.FindString(b.stdout.String())
	create := func(p *proc, key, name string) string {
		t.Helper()
		owner, _ := crypto.GenerateKey()
		wallet := walletsig.EVMAddress(&owner.PublicKey)
		msg := walletsig.CreateMessage(name, "all", wallet, time.Now())
		status, body := call(t, "POST", "http://"+p.addr+"/agent/create", key, map[string]string{
			"name": name, "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
		})
		if status != 201 {
			t.Fatalf("create %s = %d %s", name, status, body)
		}
		var ag struct{ ID string }
		_ = json.Unmarshal(body, &ag)
		return ag.ID
	}
	chat := func(p *proc, key, agentID, msg, tool string) string {
		t.Helper()
		status, body := call(t, "POST", "http://"+p.addr+"/agent/"+agentID+"/chat", key, map[string]string{"message": msg})
		var r struct {
			ToolCalls []struct{ Name, Status, Detail string }
		}
		_ = json.Unmarshal(body, &r)
		if status != 200 || len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != tool || r.ToolCalls[0].Status != "success" {
			t.Fatalf("%q = %d %s", msg, status, body)
		}
		return r.ToolCalls[0].Detail
	}
	payer := create(a, keyA, "shared-payer")
	payee := create(b, keyB, "shared-payee")

	// Each member resolves the name the other registered on the chains.
	chat(a, keyA, payer, "who is shared-payee.veil", "resolve_name")
	chat(b, keyB, payee, "who is shared-payer.veil", "resolve_name")

	payments := []string{
		"send 0.001 ETH to shared-payee on ethereum",
		"send 1 XLM to shared-payee",
		"send 0.01 SOL to shared-payee",
	}
	for _, m := range payments {
		if d := chat(a, keyA, payer, m, "send_payment"); !strings.Contains(d, `"txHash"`) {
			t.Fatalf("%q detail %s", m, d)
		}
	}
	// The payee's member (b) finds them with its own scanners, on the
	// chains a wrote to.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := call(t, "GET", "http://"+b.addr+"/agent/"+payee+"/notifications", keyB, nil)
		var inbox struct {
			Notifications []struct{ Type, Body string }
		}
		_ = json.Unmarshal(body, &inbox)
		received := 0
		for _, n := range inbox.Notifications {
			if n.Type == "payment_received" {
				received++
			}
		}
		if received == len(payments) {
			break
		}
		if received > len(payments) || time.Now().After(deadline) {
			t.Fatalf("payee on member b has %d payment_received notifications, want %d: %s", received, len(payments), body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	a.stop(t, syscall.SIGTERM)
	b.stop(t, syscall.SIGTERM)

	if err := devnet.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-devnet.exited:
		if err != nil {
			t.Fatalf("veild devnet exit: %v; stderr: %s", err, devnet.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("veild devnet did not stop on SIGTERM")
	}
}

// serve refuses a chains config that lacks a chain rather than starting
// a private devnet for it, which would split the members' view.
func TestChainsConfigMissingAChain(t *testing.T) {
	f := filepath.Join(t.TempDir(), "chains.json")
	if err := os.WriteFile(f, []byte(`{"stellar":{"horizonUrl":"http://127.0.0.1:1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(veildBin, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--devnet-base-port", "0", "--chains-config", f).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "chain horizen: not in --chains-config") {
		t.Fatalf("exit %v: %s", err, out)
	}
}
