package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/client"
)

func TestHelpAndUsage(t *testing.T) {
	env := veilEnv(t, nil)
	for _, args := range [][]string{{"--help"}, {"help"}, {"-h"}} {
		r := ok(t, env, args...)
		for _, want := range []string{"agent create", "chat AGENT", "notifications AGENT", "invoice paid", "Exit codes", "Examples:", "VEIL_API_KEY"} {
			if !strings.Contains(r.stdout, want) {
				t.Fatalf("veil %v lacks %q:\n%s", args, want, r.stdout)
			}
		}
	}
	for _, args := range [][]string{{"chat", "--help"}, {"help", "chat"}, {"agent", "create", "-h"}, {"notifications", "--help"}, {"invoice", "paid", "--help"}} {
		r := ok(t, env, args...)
		if !strings.Contains(r.stdout, "Usage:\n  veil ") || !strings.Contains(r.stdout, "Examples:") {
			t.Fatalf("veil %v:\n%s", args, r.stdout)
		}
	}
	if r := ok(t, env, "help", "agent"); !strings.Contains(r.stdout, "export") {
		t.Fatalf("group help:\n%s", r.stdout)
	}
	if r := ok(t, env, "agent", "--help"); !strings.Contains(r.stdout, "veil agent [command]") || !strings.Contains(r.stdout, "list") {
		t.Fatalf("group --help:\n%s", r.stdout)
	}
	if r := ok(t, env, "version"); !strings.HasPrefix(r.stdout, "veil ") {
		t.Fatalf("version %q", r.stdout)
	}
	// Usage errors: exit 2 and a hint on stderr.
	for _, args := range [][]string{{}, {"bogus"}, {"agent"}, {"agent", "fly"}, {"agent", "list", "--nope"}, {"agent", "create", "Alice", "--chain", "base"},
		{"agent", "create", "alice"}, {"chat"}, {"invoice", "show"}, {"notifications", "alice", "--interval", "1ms"}} {
		r := fails(t, env, 2, args...)
		if r.stderr == "" {
			t.Fatalf("veil %v: no message", args)
		}
	}
	// No API key: exit 4 with a hint, before any request.
	r := fails(t, append(env, "VEIL_URL=http://127.0.0.1:1"), 4, "agent", "list")
	if !strings.Contains(r.stderr, "VEIL_API_KEY") {
		t.Fatalf("no-key hint: %s", r.stderr)
	}
	// Server unreachable: exit 6.
	fails(t, append(env, "VEIL_URL=http://127.0.0.1:1", "VEIL_API_KEY=k"), 6, "agent", "list")
	r = fails(t, append(env, "VEIL_URL=http://127.0.0.1:1"), 6, "health", "--json")
	if e := decode[jsonError](t, r.stderr); e.ExitCode != 6 || e.Message == "" {
		t.Fatalf("json error %+v", e)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

var hexKeyRE = regexp.MustCompile(`^0x[0-9a-f]{64}$`)

func TestAgentCommands(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)

	if r := ok(t, env, "health"); !strings.Contains(r.stdout, "ok") {
		t.Fatalf("health %s", r)
	}
	if r := ok(t, env, "agent", "list", "--json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("empty list %q", r.stdout)
	}

	// EVM owner from the environment, human output.
	evmKey, _ := crypto.GenerateKey()
	evmHex := "0x" + hex.EncodeToString(crypto.FromECDSA(evmKey))
	evmAddr := walletsig.EVMAddress(&evmKey.PublicKey)
	r := ok(t, append(env, "VEIL_EVM_KEY="+evmHex), "agent", "create", "alice", "--chain", "base")
	if !strings.Contains(r.stdout, "Created alice.veil") || !strings.Contains(r.stdout, "st:eth:0x") {
		t.Fatalf("create: %s", r)
	}
	// The same name by another owner: conflict, exit 5, JSON error on
	// stderr (the same owner again is an idempotent repeat).
	otherKey, _ := crypto.GenerateKey()
	r = fails(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(otherKey))), 5, "agent", "create", "alice", "--chain", "base", "--json")
	if e := decode[jsonError](t, r.stderr); e.StatusCode != 409 || e.ExitCode != 5 || r.stdout != "" {
		t.Fatalf("conflict %+v %s", e, r)
	}

	// A keystore file with its passphrase in a file, JSON output.
	ksKey, _ := crypto.GenerateKey()
	ks := &keystore.Key{Id: uuid.New(), Address: crypto.PubkeyToAddress(ksKey.PublicKey), PrivateKey: ksKey}
	raw, err := keystore.EncryptKey(ks, "hunter2", keystore.LightScryptN, keystore.LightScryptP)
	if err != nil {
		t.Fatal(err)
	}
	ksPath := writeFile(t, "UTC--key.json", string(raw))
	pwPath := writeFile(t, "pw", "hunter2\n")
	r = ok(t, env, "agent", "create", "bob.veil", "--chain", "all", "--keystore", ksPath, "--password-file", pwPath, "--json")
	bob := decode[client.CreatedAgent](t, r.stdout)
	if bob.Name != "bob" || bob.Chain != "all" || !client.IsAgentID(bob.ID) {
		t.Fatalf("bob %+v", bob)
	}
	// Wrong passphrase: a local error, exit 1, nothing created.
	fails(t, append(env, "VEIL_KEYSTORE_PASSWORD=wrong"), 1, "agent", "create", "bob2", "--chain", "base", "--keystore", ksPath)

	// Stellar seed file (SEP-53 signing) and Solana keypair file.
	_, xlmKey, _ := ed25519.GenerateKey(rand.Reader)
	seed, _ := strkey.Encode(strkey.VersionByteSeed, xlmKey.Seed())
	ok(t, env, "agent", "create", "carol", "--chain", "stellar", "--stellar-secret-file", writeFile(t, "seed", seed+"\n"), "--sep53")
	_, solKey, _ := ed25519.GenerateKey(rand.Reader)
	ints := make([]int, 64)
	for i, b := range solKey {
		ints[i] = int(b)
	}
	idJSON, _ := json.Marshal(ints)
	ok(t, env, "agent", "create", "dave", "--chain", "solana", "--solana-keypair", writeFile(t, "id.json", string(idJSON)))

	// Signed elsewhere: print the message, sign it (as a browser wallet
	// would), pass the signature.
	extKey, _ := crypto.GenerateKey()
	extAddr := walletsig.EVMAddress(&extKey.PublicKey)
	r = ok(t, env, "agent", "create", "erin", "--chain", "polygon", "--wallet", extAddr, "--print-message")
	if !strings.HasPrefix(r.stdout, "Veil wants you to create agent erin.veil on polygon.\nWallet: "+extAddr+"\nIssued At: ") {
		t.Fatalf("printed message %q", r.stdout)
	}
	sig := walletsig.SignEVM(extKey, r.stdout)
	ok(t, env, "agent", "create", "erin", "--chain", "polygon", "--wallet", extAddr, "--signature", sig, "--message-file", writeFile(t, "msg.txt", r.stdout+"\n"))
	// A signature by another key: the server's 400, exit 1.
	r = fails(t, env, 1, "agent", "create", "frank", "--chain", "polygon", "--wallet", extAddr, "--signature", walletsig.SignEVM(evmKey, "x"))
	if !strings.Contains(r.stderr, "(400)") {
		t.Fatalf("bad signature: %s", r)
	}

	// List and lookups by name, full name, id and owner wallet.
	list := decode[[]client.AgentInfo](t, ok(t, env, "agent", "list", "--json").stdout)
	if len(list) != 5 || list[0].Name != "alice" || len(list[1].Chains) != 6 {
		t.Fatalf("list %+v", list)
	}
	alice := list[0]
	if r := ok(t, env, "agent", "list"); !strings.Contains(r.stdout, "alice.veil") || !strings.Contains(r.stdout, "NAME") {
		t.Fatalf("table: %s", r.stdout)
	}
	for _, ref := range []string{"alice", "alice.veil", alice.ID, evmAddr} {
		got := decode[client.AgentInfo](t, ok(t, env, "agent", "show", ref, "--json").stdout)
		if got.ID != alice.ID {
			t.Fatalf("show %s: %+v", ref, got)
		}
	}
	if r := ok(t, env, "agent", "show", "alice"); !strings.Contains(r.stdout, alice.Addresses["base"]) {
		t.Fatalf("show: %s", r.stdout)
	}
	// The default agent from the environment.
	if got := decode[client.AgentInfo](t, ok(t, append(env, "VEIL_AGENT=bob"), "agent", "show", "--json").stdout); got.ID != bob.ID {
		t.Fatalf("default agent %+v", got)
	}
	r = fails(t, env, 3, "agent", "show", "nobody", "--json")
	if e := decode[jsonError](t, r.stderr); e.StatusCode != 404 || e.ExitCode != 3 {
		t.Fatalf("not found %+v", e)
	}
	fails(t, env, 3, "agent", "show", uuid.NewString())
	fails(t, append(env, "VEIL_API_KEY=veil_live_"+strings.Repeat("A", 43)), 4, "agent", "list")

	// Status per chain: an array with --json, one object with --chain;
	// amounts for people are cut to 6 decimals with their symbol.
	sts := decode[[]client.AgentStatus](t, ok(t, env, "agent", "status", "bob", "--json").stdout)
	if len(sts) != 6 {
		t.Fatalf("bob's statuses %+v", sts)
	}
	for i, st := range sts {
		if st.Chain != list[1].Chains[i] || st.Address != list[1].Addresses[st.Chain] {
			t.Fatalf("status %d %+v", i, st)
		}
	}
	if st := decode[client.AgentStatus](t, ok(t, env, "agent", "status", "alice", "--chain", "base", "--json").stdout); st.Chain != "base" || st.Address != alice.Addresses["base"] {
		t.Fatalf("status --chain base %+v", st)
	}
	r = ok(t, env, "agent", "status", "bob")
	for _, want := range []string{"ETH", "ZEN", "POL", "XLM", "SOL", list[1].Addresses["solana"]} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("status for people lacks %q:\n%s", want, r.stdout)
		}
	}
	if regexp.MustCompile(`\.\d{7,}`).MatchString(r.stdout) {
		t.Fatalf("status prints more than 6 decimals:\n%s", r.stdout)
	}
	r = fails(t, env, 1, "agent", "status", "alice", "--chain", "solana", "--json")
	if e := decode[jsonError](t, r.stderr); e.StatusCode != 400 || !strings.Contains(e.Message, "not solana") {
		t.Fatalf("status on a chain alice is not on: %+v", e)
	}

	// Export with the owner's keystore; a stranger's key is refused.
	r = ok(t, env, "agent", "export", "bob", "--keystore", ksPath, "--password-file", pwPath, "--json")
	if k := decode[client.ExportedKey](t, r.stdout); !hexKeyRE.MatchString(k.Secret) {
		t.Fatalf("export %+v", k)
	}
	r = ok(t, append(env, "VEIL_EVM_KEY="+evmHex), "agent", "export", "alice")
	if !hexKeyRE.MatchString(strings.TrimSpace(r.stdout)) {
		t.Fatalf("export (plain) %q", r.stdout)
	}
	fails(t, append(env, "VEIL_EVM_KEY="+evmHex), 1, "agent", "export", "bob")
	fails(t, env, 2, "agent", "export", "bob")
}

func TestConfigFile(t *testing.T) {
	s := startVeild(t)
	base := veilEnv(t, nil)
	cfgDir := t.TempDir()
	env := append(base, "XDG_CONFIG_HOME="+cfgDir)
	ok(t, env, "config", "set", "url", s.url)
	ok(t, env, "config", "set", "apiKey", s.key)
	path := filepath.Join(cfgDir, "veil", "config.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file %v %v", fi, err)
	}
	if r := ok(t, env, "config", "path"); strings.TrimSpace(r.stdout) != path {
		t.Fatalf("path %q", r.stdout)
	}
	r := ok(t, env, "config", "show")
	if strings.Contains(r.stdout, s.key) || !strings.Contains(r.stdout, s.url) {
		t.Fatalf("config show leaks the key or lacks the url:\n%s", r.stdout)
	}
	// The file alone is enough.
	ok(t, env, "agent", "list")
	// The environment overrides the file, a flag overrides both.
	fails(t, append(env, "VEIL_URL=http://127.0.0.1:1"), 6, "agent", "list")
	ok(t, append(env, "VEIL_URL=http://127.0.0.1:1"), "agent", "list", "--url", s.url)
	fails(t, env, 4, "agent", "list", "--api-key", "veil_live_"+strings.Repeat("B", 43))
	// --config names another file; a missing explicit file is an error.
	other := writeFile(t, "c.json", `{"url":"`+s.url+`","apiKey":"`+s.key+`","agent":"x"}`)
	ok(t, base, "--config", other, "agent", "list")
	fails(t, base, 1, "agent", "list", "--config", filepath.Join(t.TempDir(), "none.json"))
	fails(t, env, 2, "config", "set", "colour", "blue")
}

func TestConversationAndNotificationCommands(t *testing.T) {
	s := startVeild(t)
	env := veilEnv(t, s)
	key, _ := crypto.GenerateKey()
	ok(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(key))), "agent", "create", "talker", "--chain", "ethereum")

	id := strings.TrimSpace(ok(t, env, "conversations", "new", "talker").stdout)
	if !client.IsAgentID(id) {
		t.Fatalf("new conversation %q", id)
	}
	convs := decode[[]client.Conversation](t, ok(t, env, "conversations", "talker", "--json").stdout)
	if len(convs) != 1 || convs[0].ID != id || convs[0].Title != "" {
		t.Fatalf("conversations %+v", convs)
	}
	if r := ok(t, env, "conversations", "list", "talker"); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "(empty)") {
		t.Fatalf("table %s", r.stdout)
	}
	if msgs := decode[[]client.Message](t, ok(t, env, "conversations", "show", "talker", id, "--json").stdout); len(msgs) != 0 {
		t.Fatalf("messages %+v", msgs)
	}
	ok(t, env, "conversations", "delete", "talker", id)
	fails(t, env, 3, "conversations", "delete", "talker", id)
	fails(t, env, 3, "conversations", "show", "talker", id)
	fails(t, env, 2, "conversations", "show", "talker")

	inbox := decode[client.Inbox](t, ok(t, env, "notifications", "talker", "--json").stdout)
	if inbox.UnreadCount != 0 || inbox.Notifications == nil {
		t.Fatalf("inbox %+v", inbox)
	}
	ok(t, env, "notifications", "read", "talker")
	ok(t, env, "notifications", "clear", "talker")
	ok(t, env, "notifications", "list", "talker", "--unread")
	fails(t, env, 3, "notifications", "nobody")

	// --follow polls until interrupted, then exits 0.
	cmd := execVeil(env, "notifications", "talker", "--follow", "--interval", "200ms")
	// Interrupt once it follows (waiting on that, not on a fixed time that
	// a loaded machine may not give it).
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(cmd.Stderr.(*syncBuf).String(), "Following notifications of talker.veil"); {
		if time.Now().After(deadline) {
			t.Fatalf("follow never started; stderr %s", cmd.Stderr)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing it
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("follow: %v; stderr %s", err, cmd.Stderr)
	}
	if !strings.Contains(cmd.Stderr.(*syncBuf).String(), "Following notifications of talker.veil") {
		t.Fatalf("follow stderr: %s", cmd.Stderr)
	}

	// Invoices and schedules: 404 for unknown ids (exit 3) once routed.
	fails(t, env, 3, "invoice", "show", uuid.NewString())
	fails(t, env, 3, "schedules", "pause", "talker", uuid.NewString())
	r := veil(t, env, "", "schedules", "talker", "--json")
	if r.code == 0 {
		if l := decode[[]client.Schedule](t, r.stdout); len(l) != 0 {
			t.Fatalf("schedules %+v", l)
		}
	} else if !strings.Contains(r.stderr, "no such endpoint") {
		t.Fatalf("schedules: %s", r)
	}

	// tee
	info := decode[client.TEEInfo](t, ok(t, env, "tee", "info", "--json").stdout)
	if info.Provider == "" {
		t.Fatalf("tee info %+v", info)
	}
	att := decode[client.Attestation](t, ok(t, env, "tee", "attest", "talker", "--nonce", "n-1", "--json").stdout)
	if att.Nonce != "n-1" || att.PublicKeys["ethereum"].Address == "" {
		t.Fatalf("attest %+v", att)
	}
}
