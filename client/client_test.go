package client_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/mr-tron/base58"

	"github.com/veilhq/veil/client"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func newEVM(t *testing.T) client.Signer {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return client.NewEVMSigner(key)
}

func newEd25519(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

// asError asserts err is a *client.Error with the given status and returns it.
func asError(t *testing.T, err error, status int) *client.Error {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want *client.Error %d, got %T %v", status, err, err)
	}
	if ae.StatusCode != status || ae.Message == "" {
		t.Fatalf("want status %d with a message, got %d %q", status, ae.StatusCode, ae.Message)
	}
	return ae
}

var hexKeyRE = regexp.MustCompile(`^0x[0-9a-f]{64}$`)

func TestAgentsEndToEnd(t *testing.T) {
	s := newServer(t)
	c := s.client(s.key)
	ctx := ctx(t)

	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" {
		t.Fatalf("health %+v %v", h, err)
	}

	evm := newEVM(t)
	created, err := c.CreateAgentSigned(ctx, "alice", client.ChainBase, evm)
	if err != nil {
		t.Fatal(err)
	}
	if created.Name != "alice" || created.Chain != "base" || !client.IsAgentID(created.ID) || created.Address == "" || !strings.HasPrefix(created.MetaAddress, "st:eth:0x") {
		t.Fatalf("created %+v", created)
	}

	// Stellar (raw and SEP-53 signatures) and Solana owners, and "all".
	xlm, err := c.CreateAgentSigned(ctx, "bob-xlm", client.ChainStellar, client.NewStellarSigner(newEd25519(t), false))
	if err != nil || xlm.Chain != "stellar" {
		t.Fatalf("stellar create %+v %v", xlm, err)
	}
	if _, err := c.CreateAgentSigned(ctx, "bob-sep53", client.ChainStellar, client.NewStellarSigner(newEd25519(t), true)); err != nil {
		t.Fatalf("stellar SEP-53 create: %v", err)
	}
	sol, err := c.CreateAgentSigned(ctx, "carol-sol", client.ChainSolana, client.NewSolanaSigner(newEd25519(t)))
	if err != nil || sol.Chain != "solana" {
		t.Fatalf("solana create %+v %v", sol, err)
	}
	all, err := c.CreateAgentSigned(ctx, "dave-all", client.ChainAll, newEVM(t))
	if err != nil || all.Chain != "all" {
		t.Fatalf("all create %+v %v", all, err)
	}
	// The create answer also carries every chain's addresses (additive).
	if len(all.Chains) != 6 || len(all.Addresses) != 6 || len(all.MetaAddresses) != 6 ||
		created.Addresses["base"] != created.Address || created.MetaAddresses["base"] != created.MetaAddress {
		t.Fatalf("create answer's chains and addresses: %+v / %+v", all, created)
	}

	list, err := c.ListAgents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 5 || list[0].ID != created.ID {
		t.Fatalf("list %+v", list)
	}
	if got := list[4]; len(got.Chains) != 6 || len(got.Addresses) != 6 || len(got.MetaAddresses) != 6 {
		t.Fatalf("all-chain agent %+v", got)
	}

	for _, ref := range []string{created.ID, "alice", "alice.veil", evm.Address(), strings.ToLower(evm.Address())} {
		a, err := c.ResolveAgent(ctx, ref)
		if err != nil || a.ID != created.ID || a.FullName() != "alice.veil" {
			t.Fatalf("resolve %q: %+v %v", ref, a, err)
		}
	}
	if a, err := c.GetAgent(ctx, created.ID); err != nil || a.Addresses["base"] != created.Address {
		t.Fatalf("get %+v %v", a, err)
	}
	if a, err := c.AgentByName(ctx, "alice"); err != nil || a.ID != created.ID {
		t.Fatalf("by name %+v %v", a, err)
	}
	if a, err := c.AgentByWallet(ctx, evm.Address()); err != nil || a.ID != created.ID {
		t.Fatalf("by wallet %+v %v", a, err)
	}

	// Typed errors.
	_, err = c.CreateAgentSigned(ctx, "alice", client.ChainBase, newEVM(t))
	if !client.IsConflict(err) {
		t.Fatalf("taken name: %v", err)
	}
	asError(t, err, 409)
	_, err = c.GetAgent(ctx, uuid.NewString())
	if !client.IsNotFound(err) {
		t.Fatalf("unknown agent: %v", err)
	}
	_, err = c.AgentByName(ctx, "nobody")
	if ae := asError(t, err, 404); ae.Method != "GET" || ae.Path != "/agent/info/nobody" || ae.RequestID == "" {
		t.Fatalf("error fields %+v", ae)
	}
	_, err = c.AgentByWallet(ctx, "not-a-wallet")
	if !client.IsBadRequest(err) {
		t.Fatalf("bad wallet: %v", err)
	}
	// A signature by another wallet than the one named.
	req, err := client.SignCreate(newEVM(t), "eve", "base", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req.Wallet = evm.Address()
	req.Message = ""
	_, err = c.CreateAgent(ctx, req)
	asError(t, err, 400)
	// Client-side checks.
	if _, err := client.SignCreate(evm, "Bad Name", "base", time.Now()); err == nil || client.StatusCode(err) != 0 {
		t.Fatalf("bad name not caught by the client: %v", err)
	}
	if _, err := client.SignCreate(evm, "erin", "stellar", time.Now()); err == nil || !strings.Contains(err.Error(), "Stellar") {
		t.Fatalf("scheme mismatch not caught: %v", err)
	}

	// Another account sees nothing.
	other := s.client(s.newKey("other"))
	if _, err := other.GetAgent(ctx, created.ID); !client.IsNotFound(err) {
		t.Fatalf("foreign agent: %v", err)
	}
	if l, err := other.ListAgents(ctx); err != nil || len(l) != 0 {
		t.Fatalf("foreign list %+v %v", l, err)
	}
	// Bad keys.
	for _, key := range []string{"", "nonsense", "veil_live_" + strings.Repeat("A", 43)} {
		_, err := s.client(key).ListAgents(ctx)
		if !client.IsUnauthorized(err) {
			t.Fatalf("key %q: %v", key, err)
		}
	}

	// Export: owner signature, once.
	exp, err := client.SignExport(evm, created.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	secret, err := c.ExportKey(ctx, created.ID, exp)
	if err != nil || !hexKeyRE.MatchString(secret.Secret) {
		t.Fatalf("export %+v %v", secret, err)
	}
	if _, err := c.ExportKey(ctx, created.ID, exp); !client.IsBadRequest(err) {
		t.Fatalf("replayed export: %v", err)
	}
	if _, err := c.ExportKeySigned(ctx, created.ID, newEVM(t)); !client.IsBadRequest(err) {
		t.Fatalf("export by a stranger: %v", err)
	}
	if k, err := c.ExportKeySigned(ctx, sol.ID, client.NewSolanaSigner(newEd25519(t))); !client.IsBadRequest(err) {
		t.Fatalf("export without the owner key: %v %v", k, err)
	}

	// Status: no chain connectors in this server, so a 503 (retried, then
	// reported), typed.
	st, err := c.AgentStatus(ctx, created.ID)
	switch {
	case err == nil:
		if st.Chain != "base" || st.Address != created.Address {
			t.Fatalf("status %+v", st)
		}
	case client.IsUnavailable(err):
	default:
		t.Fatalf("status: %v", err)
	}
}

func TestConversationsNotificationsTEE(t *testing.T) {
	s := newServer(t)
	c := s.client(s.key)
	ctx := ctx(t)
	a, err := c.CreateAgentSigned(ctx, "conv-agent", client.ChainEthereum, newEVM(t))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := c.CreateConversation(ctx, a.ID)
	if err != nil || conv.Title != "" || !client.IsAgentID(conv.ID) || conv.CreatedAt.IsZero() {
		t.Fatalf("create conversation %+v %v", conv, err)
	}
	convs, err := c.ListConversations(ctx, a.ID)
	if err != nil || len(convs) != 1 || convs[0].ID != conv.ID {
		t.Fatalf("list %+v %v", convs, err)
	}
	msgs, err := c.ListMessages(ctx, a.ID, conv.ID)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("messages %+v %v", msgs, err)
	}
	if err := c.DeleteConversation(ctx, a.ID, conv.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteConversation(ctx, a.ID, conv.ID); !client.IsNotFound(err) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := c.ListMessages(ctx, a.ID, conv.ID); !client.IsNotFound(err) {
		t.Fatalf("messages of a deleted conversation: %v", err)
	}
	if _, err := c.CreateConversation(ctx, uuid.NewString()); !client.IsNotFound(err) {
		t.Fatalf("conversation of an unknown agent: %v", err)
	}

	inbox, err := c.Notifications(ctx, a.ID)
	if err != nil || inbox.UnreadCount != 0 || inbox.Notifications == nil {
		t.Fatalf("inbox %+v %v", inbox, err)
	}
	if err := c.MarkNotificationsRead(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteNotifications(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Notifications(ctx, uuid.NewString()); !client.IsNotFound(err) {
		t.Fatalf("notifications of an unknown agent: %v", err)
	}

	info, err := c.TEEInfo(ctx)
	if err != nil || info.Provider != "software" || len(info.AttestationPublicKey) != 64 {
		t.Fatalf("tee info %+v %v", info, err)
	}
	att, err := c.Attest(ctx, a.ID, "my nonce & more")
	if err != nil || att.AgentID != a.ID || att.Nonce != "my nonce & more" || att.PublicKeys["ethereum"].Address == "" || att.Quote == "" {
		t.Fatalf("attest %+v %v", att, err)
	}
	if att2, err := c.Attest(ctx, a.ID, ""); err != nil || att2.Nonce == "" {
		t.Fatalf("attest without nonce %+v %v", att2, err)
	}
	if _, err := c.Attest(ctx, a.ID, strings.Repeat("n", 129)); !client.IsBadRequest(err) {
		t.Fatalf("long nonce: %v", err)
	}
}

// Endpoints of later issues (chat, invoices, schedules) against this
// server: skipped while the router does not have them.
func TestLaterEndpointsOnRealServer(t *testing.T) {
	s := newServer(t)
	c := s.client(s.key)
	ctx := ctx(t)
	a, err := c.CreateAgentSigned(ctx, "later", client.ChainBase, newEVM(t))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(err error) bool {
		var ae *client.Error
		return errors.As(err, &ae) && ae.StatusCode == 404 && strings.HasPrefix(ae.Message, "no such endpoint")
	}
	t.Run("invoice", func(t *testing.T) {
		_, err := c.GetInvoice(ctx, uuid.NewString())
		if missing(err) {
			t.Skip("GET /invoice/{id} is not routed yet")
		}
		if !client.IsNotFound(err) {
			t.Fatalf("unknown invoice: %v", err)
		}
		if _, err := c.MarkInvoicePaid(ctx, uuid.NewString(), ""); !client.IsNotFound(err) {
			t.Fatalf("pay unknown invoice: %v", err)
		}
	})
	t.Run("schedules", func(t *testing.T) {
		l, err := c.ListSchedules(ctx, a.ID)
		if missing(err) {
			t.Skip("GET /agent/{id}/schedules is not routed yet")
		}
		if err != nil || len(l) != 0 {
			t.Fatalf("schedules %+v %v", l, err)
		}
		if _, err := c.PauseSchedule(ctx, a.ID, uuid.NewString()); !client.IsNotFound(err) {
			t.Fatalf("pause unknown schedule: %v", err)
		}
	})
	t.Run("chat", func(t *testing.T) {
		_, err := c.Chat(ctx, a.ID, client.ChatRequest{Message: "hello", ConversationID: uuid.NewString()})
		if missing(err) {
			t.Skip("POST /agent/{id}/chat is not routed yet")
		}
		// An unknown conversation is a 404 before the model runs (DESIGN.md).
		if !client.IsNotFound(err) {
			t.Fatalf("chat in an unknown conversation: %v", err)
		}
		if _, err := c.Chat(ctx, a.ID, client.ChatRequest{Message: " "}); !client.IsBadRequest(err) {
			t.Fatalf("empty chat message: %v", err)
		}
		if _, err := c.Chat(ctx, a.ID, client.ChatRequest{Message: "hi"}, client.WithProvider("nonsense", "")); !client.IsBadRequest(err) {
			t.Fatalf("unknown provider: %v", err)
		}
		first, err := c.Chat(ctx, a.ID, client.ChatRequest{Message: "what can you do?"})
		if err != nil {
			t.Fatal(err)
		}
		if first.Response == "" || !client.IsAgentID(first.ConversationID) {
			t.Fatalf("first reply %+v", first)
		}
		// The same Idempotency-Key twice, then a continuation.
		key := client.NewIdempotencyKey()
		second, err := c.Chat(ctx, a.ID, client.ChatRequest{Message: "what's my balance?", ConversationID: first.ConversationID}, client.WithIdempotencyKey(key))
		if err != nil || second.ConversationID != first.ConversationID || second.Response == "" {
			t.Fatalf("second reply %+v %v", second, err)
		}
		for _, tc := range second.ToolCalls {
			if tc.Name == "" || (tc.Status != client.ToolSuccess && tc.Status != client.ToolError) {
				t.Fatalf("tool call %+v", tc)
			}
		}
		msgs, err := c.ListMessages(ctx, a.ID, first.ConversationID)
		if err != nil || len(msgs) < 4 || msgs[0].Role != client.RoleUser || msgs[0].Text != "what can you do?" {
			t.Fatalf("messages %+v %v", msgs, err)
		}
		tools := 0
		for _, m := range msgs {
			if _, ok := m.ToolCall(); ok {
				tools++
			}
		}
		if tools != len(second.ToolCalls) {
			t.Fatalf("%d tool messages for %d tool calls", tools, len(second.ToolCalls))
		}
		convs, err := c.ListConversations(ctx, a.ID)
		if err != nil || len(convs) == 0 || convs[0].ID != first.ConversationID || convs[0].Title != "what can you do?" {
			t.Fatalf("conversations %+v %v", convs, err)
		}
	})
}

func TestKeystoreSigner(t *testing.T) {
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ks := &keystore.Key{Id: uuid.New(), Address: crypto.PubkeyToAddress(key.PublicKey), PrivateKey: key}
	raw, err := keystore.EncryptKey(ks, "correct horse", keystore.LightScryptN, keystore.LightScryptP)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.EVMSignerFromKeystore(path, "wrong"); err == nil {
		t.Fatal("wrong passphrase accepted")
	}
	s, err := client.EVMSignerFromKeystore(path, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if s.Address() != ks.Address.Hex() || s.Scheme() != client.SchemeEVM {
		t.Fatalf("address %s, want %s", s.Address(), ks.Address.Hex())
	}
	srv := newServer(t)
	c := srv.client(srv.key)
	a, err := c.CreateAgentSigned(ctx(t), "keystore-owned", "polygon", s)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := c.ExportKeySigned(ctx(t), a.ID, s); err != nil || !hexKeyRE.MatchString(k.Secret) {
		t.Fatalf("export %+v %v", k, err)
	}
}

// The signing helpers reproduce docs/signatures.md's worked examples.
func TestSignersMatchDocs(t *testing.T) {
	at := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	evm, err := client.EVMSignerFromHex("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
	if err != nil {
		t.Fatal(err)
	}
	req, err := client.SignCreate(evm, "alice.veil", "base", at)
	if err != nil {
		t.Fatal(err)
	}
	if req.Name != "alice" || req.Wallet != "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23" ||
		req.Signature != "0xd7630739970e3c9b88a4c29c7d4b589b54cc29dabb1902b0b0ad5ca7e6c2b810724553c9a59d67db4ef925f0a50d6867ad7fcef5e5f9c0d042576ba6a9cad6841b" ||
		req.Message != "Veil wants you to create agent alice.veil on base.\nWallet: 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23\nIssued At: 2026-01-15T12:00:00Z" {
		t.Fatalf("EVM create %+v", req)
	}
	exp, err := client.SignExport(evm, "0b6c9d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e", at)
	if err != nil || exp.Signature != "0xa5007a699435ae18efd96303d04d6de603fc10573738c109028b5e67f37d2ffb306774a24127e7cede51ffbeb2d663b2c2a628dbe6a9ff111d1364761f4b296b1c" {
		t.Fatalf("EVM export %+v %v", exp, err)
	}

	xlm, err := client.StellarSignerFromSecret("SAAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQC5MY", false)
	if err != nil {
		t.Fatal(err)
	}
	req, err = client.SignCreate(xlm, "alice", "stellar", at)
	if err != nil || req.Wallet != "GCFIRY65OQE7DFP5KLNS2PF2LVZMUZYJX4OZIEQ36N2IQANUB5XVYOJR" ||
		req.Signature != "LL544nS8Bd1w+jvogFJwWZFMRJQsuCPnWPnWyLpuTW9yd3GIV5RsQKE8hBOhgyc960lWeyO3wrWh8pcc/BOiCA==" {
		t.Fatalf("Stellar create %+v %v", req, err)
	}
	seed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	req, err = client.SignCreate(client.NewStellarSigner(seed, true), "alice", "stellar", at)
	if err != nil || req.Signature != "BrtGf4m7EH6NBK4oAdtnuljvGmFCGm2FrDSrwipeyjioaXTRwInU2TBkZxvWFIcXVj5Y1adNtd04vxdgIXdfDw==" {
		t.Fatalf("Stellar SEP-53 create %+v %v", req, err)
	}

	for _, kp := range []string{
		"2AXDGYSE4f2sz7tvMMzyHvUfcoJmxudvdhBcmiUSo6iuCXagjUCKEQF21awZnUGxmwD4m9vGXuC3qieHXJQHAcT",
		jsonBytes(seed),
	} {
		sol, err := client.SolanaSignerFromKeypair(kp)
		if err != nil {
			t.Fatal(err)
		}
		req, err = client.SignCreate(sol, "alice", "solana", at)
		if err != nil || req.Wallet != "AKnL4NNf3DGWZJS6cPknBuEGnVsV4A4m5tgebLHaRSZ9" ||
			req.Signature != "4kB6nK5yfd9FkmA4q1KZ8uJuGrPTAAWPxrJfaS2AD1c2hC6hT6hw446zAtPDbdmbP2VvCz4eo2AHCNWZ1MNzrXLq" {
			t.Fatalf("Solana create %+v %v", req, err)
		}
	}
	bad := append([]byte(nil), seed...)
	bad[40] ^= 1
	if _, err := client.SolanaSignerFromKeypair(base58.Encode(bad)); err == nil {
		t.Fatal("mismatched Solana keypair accepted")
	}
	if _, err := client.EVMSignerFromHex("0x1234"); err == nil {
		t.Fatal("short EVM key accepted")
	}
	if _, err := client.StellarSignerFromSecret("GCFIRY65OQE7DFP5KLNS2PF2LVZMUZYJX4OZIEQ36N2IQANUB5XVYOJR", false); err == nil {
		t.Fatal("a public key accepted as a Stellar secret")
	}
	if got := client.CreateMessage("alice.veil", "base", "0xabc", at); got != "Veil wants you to create agent alice.veil on base.\nWallet: 0xabc\nIssued At: 2026-01-15T12:00:00Z" {
		t.Fatalf("CreateMessage %q", got)
	}
}

func jsonBytes(b []byte) string {
	ints := make([]int, len(b))
	for i, v := range b {
		ints[i] = int(v)
	}
	out, _ := json.Marshal(ints)
	return string(out)
}
