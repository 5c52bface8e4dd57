package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/httpapi"
)

// owner is a wallet that signs in the test with a real key.
type owner struct {
	scheme string
	evm    *ecdsa.PrivateKey
	ed     ed25519.PrivateKey
}

func newEVMOwner(t testing.TB) owner {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return owner{scheme: "evm", evm: k}
}

func newEdOwner(t *testing.T, scheme string) owner {
	_, k, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return owner{scheme: scheme, ed: k}
}

func (o owner) wallet() string {
	switch o.scheme {
	case "evm":
		return walletsig.EVMAddress(&o.evm.PublicKey)
	case "stellar":
		return walletsig.StellarAddress(o.ed.Public().(ed25519.PublicKey))
	default:
		return walletsig.SolanaAddress(o.ed.Public().(ed25519.PublicKey))
	}
}

func (o owner) sign(msg string) string {
	switch o.scheme {
	case "evm":
		return walletsig.SignEVM(o.evm, msg)
	case "stellar":
		return walletsig.SignEd25519Base64(o.ed, msg)
	default:
		return walletsig.SignSolana(o.ed, msg)
	}
}

func (o owner) createBody(name, chain string) httpapi.CreateAgentRequest {
	msg := walletsig.CreateMessage(name, chain, o.wallet(), time.Now())
	return httpapi.CreateAgentRequest{Name: name, Chain: chain, Wallet: o.wallet(), Signature: o.sign(msg), Message: msg}
}

func (o owner) exportBody(agentID string) httpapi.ExportRequest {
	msg := walletsig.ExportMessage(agentID, o.wallet(), time.Now())
	return httpapi.ExportRequest{Signature: o.sign(msg), Message: msg}
}

func (e *env) create(t *testing.T, o owner, name, chain string) httpapi.CreateAgentResponse {
	t.Helper()
	r := e.do("POST", "/agent/create", e.key, o.createBody(name, chain))
	if r.status != 201 {
		t.Fatalf("create %s on %s = %d %s", name, chain, r.status, r.body)
	}
	var out httpapi.CreateAgentResponse
	r.decode(t, &out)
	return out
}

var (
	evmAddrRE = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	stEthRE   = regexp.MustCompile(`^st:eth:0x[0-9a-f]{132}$`)
	stEdRE    = regexp.MustCompile(`^st:(xlm|sol):[0-9a-f]{128}$`)
	gAddrRE   = regexp.MustCompile(`^G[A-Z2-7]{55}$`)
	b58RE     = regexp.MustCompile(`^[1-9A-HJ-NP-Za-km-z]{32,44}$`)
)

func TestCreateOnEachScheme(t *testing.T) {
	e := newEnv(t, envOptions{})
	cases := []struct {
		chain string
		owner owner
		addr  *regexp.Regexp
		meta  *regexp.Regexp
	}{
		{"ethereum", newEVMOwner(t), evmAddrRE, stEthRE},
		{"base", newEVMOwner(t), evmAddrRE, stEthRE},
		{"stellar", newEdOwner(t, "stellar"), gAddrRE, stEdRE},
		{"solana", newEdOwner(t, "solana"), b58RE, stEdRE},
	}
	for i, tc := range cases {
		t.Run(tc.chain, func(t *testing.T) {
			name := fmt.Sprintf("agent-%d", i)
			out := e.create(t, tc.owner, name, tc.chain)
			if _, err := uuid.Parse(out.ID); err != nil {
				t.Fatalf("id %q is not a UUID", out.ID)
			}
			if out.Name != name || out.Chain != tc.chain || !tc.addr.MatchString(out.Address) || !tc.meta.MatchString(out.MetaAddress) {
				t.Fatalf("create response %+v", out)
			}
			var info httpapi.AgentInfo
			r := e.do("GET", "/agent/"+out.ID, e.key, nil)
			r.decode(t, &info)
			if r.status != 200 || info.ID != out.ID || len(info.Chains) != 1 || info.Chains[0] != tc.chain ||
				info.Addresses[tc.chain] != out.Address || info.MetaAddresses[tc.chain] != out.MetaAddress {
				t.Fatalf("GET agent = %d %+v", r.status, info)
			}
			if !reflect.DeepEqual(out.Chains, info.Chains) || !reflect.DeepEqual(out.Addresses, info.Addresses) || !reflect.DeepEqual(out.MetaAddresses, info.MetaAddresses) {
				t.Fatalf("create answered %+v, GET agent %+v", out, info)
			}
		})
	}
}

func TestCreateAllChains(t *testing.T) {
	e := newEnv(t, envOptions{})
	out := e.create(t, newEVMOwner(t), "everywhere", "all")
	if out.Chain != "all" {
		t.Fatalf("chain = %q, want all", out.Chain)
	}
	var info httpapi.AgentInfo
	e.do("GET", "/agent/"+out.ID, e.key, nil).decode(t, &info)
	want := []string{"horizen", "ethereum", "polygon", "base", "stellar", "solana"}
	if strings.Join(info.Chains, ",") != strings.Join(want, ",") {
		t.Fatalf("chains = %v", info.Chains)
	}
	if out.Address != info.Addresses["horizen"] || out.MetaAddress != info.MetaAddresses["horizen"] {
		t.Fatalf("create answered %s, horizen is %s", out.Address, info.Addresses["horizen"])
	}
	if !gAddrRE.MatchString(info.Addresses["stellar"]) || !b58RE.MatchString(info.Addresses["solana"]) {
		t.Fatalf("addresses %v", info.Addresses)
	}
	// The create answer also carries AgentInfo's three per-chain fields
	// (additive, for Wraith's SDK: docs/compat-wraith.md), equal to GET's.
	if strings.Join(out.Chains, ",") != strings.Join(want, ",") || !reflect.DeepEqual(out.Addresses, info.Addresses) || !reflect.DeepEqual(out.MetaAddresses, info.MetaAddresses) {
		t.Fatalf("create answered chains %v addresses %v metaAddresses %v; GET has %+v", out.Chains, out.Addresses, out.MetaAddresses, info)
	}
	// Keys are per chain: no two chains share an address.
	seen := map[string]string{}
	for c, a := range info.Addresses {
		if prev, ok := seen[a]; ok {
			t.Fatalf("%s and %s share address %s", prev, c, a)
		}
		seen[a] = c
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	e := newEnv(t, envOptions{})
	o := newEVMOwner(t)
	good := o.createBody("valid-name", "ethereum")
	type body = map[string]any
	cases := []struct {
		name string
		body any
		msg  string
	}{
		{"missing name", body{"chain": "ethereum", "wallet": good.Wallet, "signature": good.Signature}, "name"},
		{"missing chain", body{"name": "valid-name", "wallet": good.Wallet, "signature": good.Signature}, "chain"},
		{"missing wallet", body{"name": "valid-name", "chain": "ethereum", "signature": good.Signature}, "wallet"},
		{"missing signature", body{"name": "valid-name", "chain": "ethereum", "wallet": good.Wallet}, "signature"},
		{"unknown chain", o.createBody("valid-name", "bitcoin"), "unknown chain"},
		{"chain wrong type", body{"name": "valid-name", "chain": 1, "wallet": good.Wallet, "signature": good.Signature}, "chain"},
	}
	for _, n := range []string{"ab", "Alice", "ALICE", "alice.veil", "al ice", "a_b", "ümlaut", strings.Repeat("a", 33), "名前前前"} {
		cases = append(cases, struct {
			name string
			body any
			msg  string
		}{"name " + n, o.createBody(n, "ethereum"), "3 to 32 characters"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/agent/create", e.key, tc.body)
			if r.status != 400 {
				t.Fatalf("status = %d %s", r.status, r.body)
			}
			if msg, _ := r.errorBody(t); !strings.Contains(msg, tc.msg) {
				t.Fatalf("message %q does not mention %q", msg, tc.msg)
			}
		})
	}
	// Nothing was created by any of them.
	if r := e.do("GET", "/agents", e.key, nil); strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("agents after rejected creates: %s", r.body)
	}
}

func TestCreateRejectsBadSignatures(t *testing.T) {
	e := newEnv(t, envOptions{})
	evm, evm2 := newEVMOwner(t), newEVMOwner(t)
	xlm, xlm2 := newEdOwner(t, "stellar"), newEdOwner(t, "stellar")
	sol, sol2 := newEdOwner(t, "solana"), newEdOwner(t, "solana")
	signedBy := func(wallet, signer owner, name, chain string) httpapi.CreateAgentRequest {
		b := wallet.createBody(name, chain)
		b.Signature = signer.sign(b.Message)
		return b
	}
	withMessage := func(o owner, name, chain, msg string) httpapi.CreateAgentRequest {
		return httpapi.CreateAgentRequest{Name: name, Chain: chain, Wallet: o.wallet(), Signature: o.sign(msg), Message: msg}
	}
	old := time.Now().Add(-11 * time.Minute)
	cases := []struct {
		name string
		body httpapi.CreateAgentRequest
	}{
		{"evm signed by another key", signedBy(evm, evm2, "sig-a", "ethereum")},
		{"stellar signed by another key", signedBy(xlm, xlm2, "sig-b", "stellar")},
		{"solana signed by another key", signedBy(sol, sol2, "sig-c", "solana")},
		{"evm wallet on stellar", evm.createBody("sig-d", "stellar")},
		{"stellar wallet on ethereum", xlm.createBody("sig-e", "ethereum")},
		{"solana wallet on stellar", sol.createBody("sig-f", "stellar")},
		{"message names another agent", withMessage(evm, "sig-g", "ethereum", walletsig.CreateMessage("other", "ethereum", evm.wallet(), time.Now()))},
		{"message names another chain", withMessage(evm, "sig-h", "ethereum", walletsig.CreateMessage("sig-h", "base", evm.wallet(), time.Now()))},
		{"message authorizes export", withMessage(evm, "sig-i", "ethereum", walletsig.ExportMessage("sig-i", evm.wallet(), time.Now()))},
		{"expired message", withMessage(evm, "sig-j", "ethereum", walletsig.CreateMessage("sig-j", "ethereum", evm.wallet(), old))},
		{"garbage signature", func() httpapi.CreateAgentRequest {
			b := evm.createBody("sig-k", "ethereum")
			b.Signature = "0xzz"
			return b
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", "/agent/create", e.key, tc.body)
			if r.status != 400 {
				t.Fatalf("status = %d %s", r.status, r.body)
			}
			r.errorBody(t)
		})
	}
	// The omitted-message form: the two canonical lines, signed.
	short := walletsig.CreateMessageShort("short-form", "ethereum", evm.wallet())
	r := e.do("POST", "/agent/create", e.key, map[string]string{"name": "short-form", "chain": "ethereum", "wallet": evm.wallet(), "signature": evm.sign(short)})
	if r.status != 201 {
		t.Fatalf("omitted message = %d %s", r.status, r.body)
	}
}

func TestDuplicateAndRacingNames(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.create(t, newEVMOwner(t), "taken", "ethereum")
	r := e.do("POST", "/agent/create", e.key, newEVMOwner(t).createBody("taken", "polygon"))
	if r.status != 409 {
		t.Fatalf("duplicate = %d %s", r.status, r.body)
	}
	r.errorBody(t)

	// Many creates race for one name: exactly one wins.
	const n = 12
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for i := 0; i < n; i++ {
		body := newEVMOwner(t).createBody("contested", "ethereum")
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- e.do("POST", "/agent/create", e.key, body).status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[201] != 1 || count[409] != n-1 {
		t.Fatalf("racing creates: %v, want one 201 and %d 409", count, n-1)
	}
	var list []httpapi.AgentInfo
	e.do("GET", "/agents", e.key, nil).decode(t, &list)
	if len(list) != 2 {
		t.Fatalf("agents = %d, want 2 (no trace of the losers)", len(list))
	}
}

func TestLookupsAndAccountScoping(t *testing.T) {
	e := newEnv(t, envOptions{})
	other := e.newKey("other")
	o := newEVMOwner(t)
	a := e.create(t, o, "alice", "ethereum")
	b := e.create(t, o, "bob", "polygon")

	var list []httpapi.AgentInfo
	e.do("GET", "/agents", e.key, nil).decode(t, &list)
	if len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("list = %+v", list)
	}
	if r := e.do("GET", "/agents", other, nil); strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("other account sees %s", r.body)
	}
	paths := map[string]string{
		"id":        "/agent/" + a.ID,
		"name":      "/agent/info/alice",
		"full name": "/agent/info/alice.veil",
		"wallet":    "/agent/wallet/" + o.wallet(),
		"wallet lc": "/agent/wallet/" + strings.ToLower(o.wallet()),
	}
	for what, p := range paths {
		var info httpapi.AgentInfo
		r := e.do("GET", p, e.key, nil)
		r.decode(t, &info)
		if r.status != 200 || info.ID != a.ID || info.Name != "alice" {
			t.Fatalf("by %s: %d %s", what, r.status, r.body)
		}
		// Another account: 404, with the same message as a missing agent.
		fr := e.do("GET", p, other, nil)
		if fr.status != 404 {
			t.Fatalf("by %s from another account: %d %s", what, fr.status, fr.body)
		}
		if msg, _ := fr.errorBody(t); msg != "agent not found" {
			t.Fatalf("foreign message %q leaks", msg)
		}
	}
	for _, p := range []string{"/agent/" + uuid.NewString(), "/agent/not-a-uuid", "/agent/info/nobody", "/agent/wallet/" + newEVMOwner(t).wallet(),
		"/agent/" + a.ID + "/status/x"} {
		if r := e.do("GET", p, e.key, nil); r.status != 404 {
			t.Fatalf("%s = %d %s", p, r.status, r.body)
		} else {
			r.errorBody(t)
		}
	}
	if r := e.do("GET", "/agent/wallet/0x1234", e.key, nil); r.status != 400 {
		t.Fatalf("malformed wallet = %d", r.status)
	}
	// Other account's agent endpoints are all 404.
	for _, p := range []string{"/agent/" + a.ID + "/status", "/agent/" + a.ID + "/conversations", "/agent/" + a.ID + "/notifications", "/tee/attest/" + a.ID + "?nonce=x"} {
		if r := e.do("GET", p, other, nil); r.status != 404 {
			t.Fatalf("%s from other account = %d", p, r.status)
		}
	}
}

func TestStatusWithoutChainIsHonest(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "status-agent", "ethereum")
	r := e.do("GET", "/agent/"+a.ID+"/status", e.key, nil)
	// No chain connector in this environment: the balance is not guessed.
	if r.status != 503 {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	r.errorBody(t)
	// And the create flow recorded its on-chain steps as pending.
	rec, err := e.host.Request(context.Background(), a.ID, &agent.Get{AccountID: accountOf(t, e)})
	if err != nil {
		t.Fatal(err)
	}
	got := rec.(*agent.Record)
	if got.Funding["ethereum"] != agent.SetupPending || got.Registration["ethereum"] != agent.SetupPending {
		t.Fatalf("setup = %v / %v, want pending", got.Funding, got.Registration)
	}
}

func accountOf(t *testing.T, e *env) string {
	t.Helper()
	var list []httpapi.AgentInfo
	e.do("GET", "/agents", e.key, nil).decode(t, &list)
	rec, err := e.store.Get(context.Background(), agent.TableAgents, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var r agent.Record
	if err := jsonUnmarshal(rec.Value, &r); err != nil {
		t.Fatal(err)
	}
	return r.AccountID
}

func TestExport(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		chain string
		owner owner
	}{{"ethereum", newEVMOwner(t)}, {"stellar", newEdOwner(t, "stellar")}, {"solana", newEdOwner(t, "solana")}} {
		t.Run(tc.chain, func(t *testing.T) {
			a := e.create(t, tc.owner, "export-"+tc.chain, tc.chain)
			body := tc.owner.exportBody(a.ID)
			r := e.do("POST", "/agent/"+a.ID+"/export", e.key, body)
			if r.status != 200 {
				t.Fatalf("export = %d %s", r.status, r.body)
			}
			var out struct{ Secret string }
			r.decode(t, &out)
			raw, err := hex.DecodeString(strings.TrimPrefix(out.Secret, "0x"))
			if err != nil || !strings.HasPrefix(out.Secret, "0x") || len(raw) != 32 {
				t.Fatalf("secret is not 0x + 32 bytes hex")
			}
			// The secret is the key of the agent's address.
			var addr string
			switch tc.chain {
			case "ethereum":
				k, err := crypto.ToECDSA(raw)
				if err != nil {
					t.Fatal(err)
				}
				addr = crypto.PubkeyToAddress(k.PublicKey).Hex()
			case "stellar":
				addr = walletsig.StellarAddress(ed25519.NewKeyFromSeed(raw).Public().(ed25519.PublicKey))
			default:
				addr = walletsig.SolanaAddress(ed25519.NewKeyFromSeed(raw).Public().(ed25519.PublicKey))
			}
			if addr != a.Address {
				t.Fatalf("exported key is for %s, agent address %s", addr, a.Address)
			}
			// The same signature again: 400.
			if r := e.do("POST", "/agent/"+a.ID+"/export", e.key, body); r.status != 400 {
				t.Fatalf("replayed export = %d", r.status)
			}
		})
	}
	o := newEVMOwner(t)
	a := e.create(t, o, "export-neg", "ethereum")
	stranger := newEVMOwner(t)
	bad := []httpapi.ExportRequest{
		{}, // missing both
		{Signature: o.exportBody(a.ID).Signature}, // missing message
		stranger.exportBody(a.ID),                 // not the owner
		func() httpapi.ExportRequest { // no Issued At: not fresh
			msg := strings.SplitN(walletsig.ExportMessage(a.ID, o.wallet(), time.Now()), "\nIssued At", 2)[0]
			return httpapi.ExportRequest{Message: msg, Signature: o.sign(msg)}
		}(),
		func() httpapi.ExportRequest { // names another agent
			msg := walletsig.ExportMessage(uuid.NewString(), o.wallet(), time.Now())
			return httpapi.ExportRequest{Message: msg, Signature: o.sign(msg)}
		}(),
	}
	for i, b := range bad {
		if r := e.do("POST", "/agent/"+a.ID+"/export", e.key, b); r.status != 400 {
			t.Fatalf("bad export %d = %d %s", i, r.status, r.body)
		}
	}
	if r := e.do("POST", "/agent/"+a.ID+"/export", e.newKey("thief"), o.exportBody(a.ID)); r.status != 404 {
		t.Fatalf("foreign export = %d", r.status)
	}
}

func TestConversations(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "talker", "ethereum")
	base := "/agent/" + a.ID + "/conversations"
	var c1, c2 agent.Conversation
	r := e.do("POST", base, e.key, nil)
	if r.status != 201 {
		t.Fatalf("create conversation = %d %s", r.status, r.body)
	}
	r.decode(t, &c1)
	if c1.Title != "" || !strings.Contains(string(r.body), `"title":""`) {
		t.Fatalf("new conversation %s", r.body)
	}
	time.Sleep(2 * time.Millisecond) // distinct timestamps for the ordering below
	e.do("POST", base, e.key, nil).decode(t, &c2)

	var list []agent.Conversation
	e.do("GET", base, e.key, nil).decode(t, &list)
	if len(list) != 2 || list[0].ID != c2.ID || list[1].ID != c1.ID {
		t.Fatalf("list not most recent first: %+v", list)
	}
	r = e.do("GET", base+"/"+c1.ID+"/messages", e.key, nil)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != "[]" {
		t.Fatalf("messages of empty conversation = %d %s", r.status, r.body)
	}
	r = e.do("DELETE", base+"/"+c1.ID, e.key, nil)
	if r.status != 200 || len(r.body) != 0 {
		t.Fatalf("delete = %d %q", r.status, r.body)
	}
	for _, p := range []string{base + "/" + c1.ID + "/messages", base + "/" + uuid.NewString() + "/messages", base + "/junk/messages"} {
		if r := e.do("GET", p, e.key, nil); r.status != 404 {
			t.Fatalf("%s = %d", p, r.status)
		}
	}
	if r := e.do("DELETE", base+"/"+c1.ID, e.key, nil); r.status != 404 {
		t.Fatalf("second delete = %d", r.status)
	}
	e.do("GET", base, e.key, nil).decode(t, &list)
	if len(list) != 1 || list[0].ID != c2.ID {
		t.Fatalf("after delete: %+v", list)
	}
}

func TestNotifications(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "inbox", "ethereum")
	for i := 1; i <= 3; i++ {
		// Services raise notifications through the agent actor.
		if _, err := e.host.Request(context.Background(), a.ID, &agent.Notify{Type: agent.NotePaymentReceived, Title: fmt.Sprintf("n%d", i), Body: "0.1 ETH"}); err != nil {
			t.Fatal(err)
		}
	}
	p := "/agent/" + a.ID + "/notifications"
	var inbox agent.Inbox
	e.do("GET", p, e.key, nil).decode(t, &inbox)
	if inbox.UnreadCount != 3 || len(inbox.Notifications) != 3 || inbox.Notifications[0].Title != "n3" || inbox.Notifications[2].ID != 1 {
		t.Fatalf("inbox = %+v", inbox)
	}
	if r := e.do("POST", p+"/read", e.key, nil); r.status != 200 || len(r.body) != 0 {
		t.Fatalf("read = %d %q", r.status, r.body)
	}
	e.do("GET", p, e.key, nil).decode(t, &inbox)
	if inbox.UnreadCount != 0 || len(inbox.Notifications) != 3 || !inbox.Notifications[1].Read {
		t.Fatalf("after read: %+v", inbox)
	}
	if r := e.do("DELETE", p, e.key, nil); r.status != 200 || len(r.body) != 0 {
		t.Fatalf("delete = %d %q", r.status, r.body)
	}
	r := e.do("GET", p, e.key, nil)
	if !strings.Contains(string(r.body), `"notifications":[]`) || !strings.Contains(string(r.body), `"unreadCount":0`) {
		t.Fatalf("after delete: %s", r.body)
	}
	// Ids keep growing after a delete: a client never sees an id reused.
	if _, err := e.host.Request(context.Background(), a.ID, &agent.Notify{Type: agent.NoteInvoicePaid, Title: "n4"}); err != nil {
		t.Fatal(err)
	}
	e.do("GET", p, e.key, nil).decode(t, &inbox)
	if len(inbox.Notifications) != 1 || inbox.Notifications[0].ID != 4 {
		t.Fatalf("after delete and notify: %+v", inbox)
	}
}

func TestTEE(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "attested", "all")
	var info enclave.Info
	r := e.do("GET", "/tee/info", e.key, nil)
	r.decode(t, &info)
	if r.status != 200 || info.Provider != "software" || len(info.AttestationPublicKey) != 64 {
		t.Fatalf("info = %d %s", r.status, r.body)
	}
	var att enclave.Attestation
	r = e.do("GET", "/tee/attest/"+a.ID+"?nonce=client-nonce-1", e.key, nil)
	r.decode(t, &att)
	if r.status != 200 || att.Nonce != "client-nonce-1" || att.AgentID != a.ID || len(att.PublicKeys) != 6 {
		t.Fatalf("attest = %d %s", r.status, r.body)
	}
	if att.PublicKeys["horizen"].Address != a.Address {
		t.Fatalf("attested address %s, agent %s", att.PublicKeys["horizen"].Address, a.Address)
	}
	// Verifiable with public data only (what a client has: /tee/info).
	if err := enclave.VerifySoftwareAttestation(info, att); err != nil {
		t.Fatalf("verify: %v", err)
	}
	att.Nonce = "another"
	if err := enclave.VerifySoftwareAttestation(info, att); err == nil {
		t.Fatal("a statement verified with another nonce")
	}
	if r := e.do("GET", "/tee/attest/"+a.ID+"?nonce="+strings.Repeat("n", 200), e.key, nil); r.status != 400 {
		t.Fatalf("long nonce = %d", r.status)
	}
	r = e.do("GET", "/tee/attest/"+a.ID, e.key, nil)
	r.decode(t, &att)
	if r.status != 200 || att.Nonce == "" {
		t.Fatalf("attest without nonce = %d %s", r.status, r.body)
	}
}

func TestStatusChainParameter(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "status-chains", "ethereum")
	tests := []struct {
		query  string
		status int
		want   string
	}{
		{"?chain=nowhere", 400, "unknown chain"},
		{"?chain=base", 400, "it is on ethereum, not base"},
		// A chain it is on: no connector here, so the balance is not guessed.
		{"?chain=ethereum", 503, ""},
		{"", 503, ""},
	}
	for _, tc := range tests {
		r := e.do("GET", "/agent/"+a.ID+"/status"+tc.query, e.key, nil)
		if r.status != tc.status || !strings.Contains(string(r.body), tc.want) {
			t.Fatalf("%s: %d %s", tc.query, r.status, r.body)
		}
	}
}
