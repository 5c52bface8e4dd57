package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veilhq/veil/client"
)

func TestKeysAndAuditCommands(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)

	r := ok(t, env, "keys", "create", "ci", "--scope", "read", "--expires", "720h")
	secret := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(secret, "veil_live_") || strings.Contains(r.stdout, "\n"+"API key") || !strings.Contains(r.stderr, "scope read") {
		t.Fatalf("keys create: %s", r)
	}
	keys := decode[[]client.APIKey](t, ok(t, env, "keys", "list", "--json").stdout)
	var ci client.APIKey
	for _, k := range keys {
		if k.Name == "ci" {
			ci = k
		}
	}
	if ci.ID == "" || ci.Scope != client.ScopeRead || ci.ExpiresAt == nil || ci.Secret != "" {
		t.Fatalf("keys list: %+v", keys)
	}
	if r := ok(t, env, "keys"); !strings.Contains(r.stdout, ci.ID) || !strings.Contains(r.stdout, "active") {
		t.Fatalf("keys table: %s", r)
	}
	// The read key reads but cannot write: exit 4? No: a 403 is the
	// server refusing, the same exit as any other refusal.
	readEnv := veilEnv(t, &server{url: s.url, key: secret})
	ok(t, readEnv, "agent", "list")
	if r := veil(t, readEnv, "", "keys", "create", "x", "--scope", "full"); r.code == 0 || !strings.Contains(r.stderr, "needs admin") {
		t.Fatalf("a read key made a key: %s", r)
	}
	rot := decode[client.RotatedKey](t, ok(t, env, "keys", "rotate", ci.ID, "--json").stdout)
	if rot.Revoked.ID != ci.ID || rot.Key.Scope != client.ScopeRead {
		t.Fatalf("rotate: %+v", rot)
	}
	if r := veil(t, readEnv, "", "agent", "list"); r.code == 0 || !strings.Contains(r.stderr, "revoked") {
		t.Fatalf("the rotated-out key still works: %s", r)
	}
	ok(t, env, "keys", "revoke", rot.Key.ID)
	fails(t, env, 2, "keys", "create", "noscope")
	fails(t, env, 2, "audit", "--since", "yesterday")

	recs := decode[client.AuditPage](t, ok(t, env, "audit", "--json").stdout).Records
	actions := []string{}
	for _, r := range recs {
		actions = append(actions, r.Action+"/"+r.Outcome)
	}
	want := "key.revoke/ok read/refused key.rotate/ok key.create/refused key.create/ok"
	if got := strings.Join(actions, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("audit trail %q, want it to start %q", got, want)
	}
	if r := ok(t, env, "audit", "--outcome", "refused", "--format", "csv"); !strings.HasPrefix(r.stdout, "id,time,") || strings.Count(r.stdout, "\n") != 3 {
		t.Fatalf("csv export: %s", r)
	}
}

// TestDevWallet: veil wallet new --dev writes a throw-away owner key that
// creates an agent on the devnet (the first hour's path, README).
func TestDevWallet(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)
	file := filepath.Join(t.TempDir(), "owner.key")
	fails(t, env, 2, "wallet", "new", "--out", file)
	r := ok(t, env, "wallet", "new", "--dev", "--out", file)
	addr := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(addr, "0x") || len(addr) != 42 || !strings.Contains(r.stderr, "DEVNET ONLY") {
		t.Fatalf("wallet new: %s", r)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", fi, err)
	}
	fails(t, env, 2, "wallet", "new", "--dev", "--out", file) // exists
	ok(t, env, "agent", "create", "devowner", "--chain", "ethereum", "--evm-key-file", file)
	// The owner wallet's address names the agent.
	if r := ok(t, env, "agent", "show", addr, "--json"); !strings.Contains(r.stdout, `"devowner"`) {
		t.Fatalf("the agent is not owned by the dev wallet %s: %s", addr, r)
	}
}
