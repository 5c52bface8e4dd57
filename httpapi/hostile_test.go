package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/persistence"
)

// storeSnapshot lists every key and version of the tables a request could
// change, so a test can prove that rejected requests changed nothing.
func storeSnapshot(t *testing.T, st persistence.Store) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{agent.TableAgents, agent.TableAgentNames, agent.TableAgentAccounts, agent.TableAgentWallets,
		agent.TableConversations, agent.TableMessages, agent.TableNotifications, agent.TableUsedSigs, state.TableInvoices,
		"schedules", "memories", "payments", "accounts", "apikeys"} {
		recs, err := st.List(context.Background(), table, persistence.Query{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			fmt.Fprintf(&b, "%s/%s@%d\n", table, r.Key, r.Version)
		}
	}
	return b.String()
}

// hostile builds the i-th malformed or hostile request of a seeded stream.
func hostile(r *rand.Rand, base, agentID string) (method, path string, body []byte, hdr http.Header) {
	hdr = http.Header{}
	junkStrings := []string{"", " ", "\x00", "ÄÖÜ", "名前", "🙂🙂🙂", "../../etc/passwd", "%2e%2e%2f", strings.Repeat("a", 5000),
		"<script>alert(1)</script>", "'; DROP TABLE agents; --", "\u202eevil", "a\nb", "0x", "null"}
	junkValues := []string{`1`, `-1`, `1e309`, `123456789012345678901234567890`, `true`, `null`, `[]`, `{}`, `[1,2,3]`,
		`{"a":{"b":{"c":{"d":{}}}}}`, `"` + strings.Repeat("x", 100) + `"`}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	jstr := func(s string) string { return fmt.Sprintf("%q", s) }
	field := func() string {
		if r.IntN(2) == 0 {
			return jstr(pick(junkStrings))
		}
		return pick(junkValues)
	}
	switch r.IntN(9) {
	case 0: // create with wrong types, unicode names, missing or bogus signatures
		body = []byte(fmt.Sprintf(`{"name":%s,"chain":%s,"wallet":%s,"signature":%s}`, field(), field(), field(), field()))
		return "POST", "/agent/create", body, hdr
	case 1: // duplicate keys: the last name wins, and the signature is junk anyway
		body = []byte(fmt.Sprintf(`{"name":"dup-a","name":%s,"chain":"ethereum","chain":"base","wallet":"0x%040x","signature":"0x%0130x"}`,
			jstr(pick(junkStrings)), r.Uint64(), r.Uint64()))
		return "POST", "/agent/create", body, hdr
	case 2: // bodies over the cap, or broken JSON
		if r.IntN(2) == 0 {
			body = bytes.Repeat([]byte("x"), 64<<10+1+r.IntN(1024))
		} else {
			body = []byte(`{"name": "abc", "chain": `)[:1+r.IntN(24)]
		}
		return "POST", "/agent/create", body, hdr
	case 3: // path traversal and junk ids
		ids := []string{"..", "%2e%2e", "../agents", url(pick(junkStrings)), uuid.NewString() + "x", strings.ToUpper(agentID), agentID + "%00"}
		suffix := []string{"", "/status", "/conversations", "/notifications", "/export", "/chat"}
		return "GET", "/agent/" + pick(ids) + pick(suffix), nil, hdr
	case 4: // chat with bad bodies
		msgs := []string{`{"message":1}`, `{"message":""}`, `{"message":null}`, `{"message":["x"]}`, fmt.Sprintf(`{"message":%q}`, strings.Repeat("m", 8001)),
			// Never "" or null: those mean "no conversation", a valid chat.
			fmt.Sprintf(`{"message":"hi","conversationId":%s}`, pick([]string{`" "`, `"../x"`, `1`, `[]`, `{}`, `"` + strings.Repeat("c", 300) + `"`, `"名前"`})), `{"message":"hi","conversationId":"` + uuid.NewString() + `"}`}
		return "POST", "/agent/" + agentID + "/chat", []byte(pick(msgs)), hdr
	case 5: // chat with a junk provider
		hdr.Set("X-AI-Provider", pick([]string{"gemini", "OPENAI ", "openai\x00", strings.Repeat("p", 300), "llama"}))
		if strings.HasPrefix(hdr.Get("X-AI-Provider"), "OPENAI") {
			hdr.Set("X-AI-Provider", "mistral")
		}
		return "POST", "/agent/" + agentID + "/chat", []byte(`{"message":"hello"}`), hdr
	case 6: // export with junk signatures
		body = []byte(fmt.Sprintf(`{"signature":%s,"message":%s}`, field(), field()))
		return "POST", "/agent/" + agentID + "/export", body, hdr
	case 7: // conversations and invoices that do not exist
		paths := []string{"/agent/" + agentID + "/conversations/" + uuid.NewString() + "/messages", "/invoice/" + uuid.NewString(),
			"/invoice/" + url(pick(junkStrings)), "/agent/info/" + url(pick(junkStrings)), "/agent/wallet/" + url(pick(junkStrings))}
		return "GET", pick(paths), nil, hdr
	default: // deletes of things that do not exist
		return "DELETE", "/agent/" + agentID + "/conversations/" + pick([]string{uuid.NewString(), "x", ".."}), nil, hdr
	}
}

func url(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() == 0 {
		return "%20"
	}
	return b.String()
}

func TestTenThousandHostileRequests(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "target", "ethereum")
	before := storeSnapshot(t, e.store)
	r := rand.New(rand.NewPCG(42, 7))
	client := &http.Client{}
	counts := map[int]int{}
	for i := 0; i < 10000; i++ {
		method, path, body, hdr := hostile(r, e.url, a.ID)
		req, err := http.NewRequest(method, e.url+path, bytes.NewReader(body))
		if err != nil {
			continue // a path Go itself refuses never reaches the server
		}
		req.Header = hdr
		req.Header.Set("Authorization", "Bearer "+e.key)
		resp, err := client.Do(req)
		if err != nil && strings.Contains(err.Error(), "invalid header field") {
			continue // the client refuses to send it: never reaches the server
		}
		if err != nil {
			t.Fatalf("request %d %s %s: %v", i, method, path, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Fatalf("request %d %s %q (body %.120q) = %d %s", i, method, path, body, resp.StatusCode, raw)
		}
		response{status: resp.StatusCode, body: raw}.errorBody(t)
	}
	if after := storeSnapshot(t, e.store); after != before {
		t.Fatalf("hostile requests changed stored state:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if r := e.do("GET", "/agent/"+a.ID, e.key, nil); r.status != 200 {
		t.Fatalf("server unhealthy after the storm: %d", r.status)
	}
	t.Logf("statuses: %v", counts)
}
