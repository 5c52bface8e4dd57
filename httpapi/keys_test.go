package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/apikey"
	"github.com/veilhq/veil/runtime/audit"
)

// auditOf reads the whole trail of the account a key belongs to.
func (e *env) auditOf(key string) []audit.Record {
	e.t.Helper()
	acc, _, err := apikey.Lookup(context.Background(), e.store, key)
	if err != nil && acc.ID == "" {
		e.t.Fatal(err)
	}
	recs, _, err := audit.List(context.Background(), e.store, acc.ID, audit.Filter{Limit: audit.MaxLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

func (e *env) createKey(admin string, body map[string]any) httpapi.APIKey {
	e.t.Helper()
	r := e.do("POST", "/keys", admin, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("create key %v: %d %s", body, r.status, r.body)
	}
	var k httpapi.APIKey
	if err := jsonUnmarshal(r.body, &k); err != nil {
		e.t.Fatal(err)
	}
	if !strings.HasPrefix(k.Secret, apikey.PrefixLive) || k.Status != "active" {
		e.t.Fatalf("created key: %+v", k)
	}
	return k
}

func TestKeysLifecycle(t *testing.T) {
	e := newEnv(t, envOptions{})
	ci := e.createKey(e.key, map[string]any{"name": "ci", "scope": "read-only", "rateLimit": map[string]any{"perSecond": 5, "burst": 10}})
	if ci.Scope != client.ScopeRead || ci.RateLimit == nil || ci.RateLimit.Burst != 10 {
		t.Fatalf("ci key: %+v", ci)
	}
	// The list never shows a key's text.
	r := e.do("GET", "/keys", e.key, nil)
	if r.status != 200 || strings.Contains(string(r.body), ci.Secret) || !strings.Contains(string(r.body), ci.ID) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Fatal("key list is cacheable")
	}

	// Bad input: a clear 400, and no key made.
	before := len(e.auditOf(e.key))
	for _, body := range []map[string]any{
		{"scope": "full"},
		{"name": "x", "scope": "root"},
		{"name": "x", "scope": "full", "expiresIn": "-1h"},
		{"name": "x", "scope": "full", "expiresAt": "2001-01-01T00:00:00Z"},
		{"name": "x", "scope": "full", "rateLimit": map[string]any{"perSecond": 0, "burst": 1}},
	} {
		if r := e.do("POST", "/keys", e.key, body); r.status != 400 {
			t.Errorf("%v: %d %s", body, r.status, r.body)
		}
	}
	var keys []httpapi.APIKey
	e.do("GET", "/keys", e.key, nil).decode(t, &keys)
	if len(keys) != 2 {
		t.Fatalf("keys after bad creates: %d", len(keys))
	}
	if got := len(e.auditOf(e.key)) - before; got != 5 {
		t.Fatalf("5 refused creates left %d audit records", got)
	}

	// Revoke: the next request is refused, and audited under the key.
	r = e.do("DELETE", "/keys/"+ci.ID, e.key, nil)
	if r.status != 200 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/agents", ci.Secret, nil)
	if msg, _ := r.errorBody(t); r.status != 401 || !strings.Contains(msg, "revoked") {
		t.Fatalf("revoked key: %d %s", r.status, r.body)
	}
	recs := e.auditOf(e.key)
	if recs[0].KeyID != ci.ID || recs[0].Outcome != audit.OutcomeRefused || recs[0].Route != "/agents" || recs[0].KeyName != "ci" {
		t.Fatalf("refused attempt's record: %+v", recs[0])
	}
	if recs[1].Action != "key.revoke" || recs[1].Outcome != audit.OutcomeOK || !strings.Contains(recs[1].Detail, ci.ID) {
		t.Fatalf("revoke's record: %+v", recs[1])
	}

	// Rotate: the new key works with the old one's settings, the old one
	// is refused from then on.
	bot := e.createKey(e.key, map[string]any{"name": "bot", "scope": "chat", "expiresIn": "720h"})
	r = e.do("POST", "/keys/"+bot.ID+"/rotate", e.key, nil)
	if r.status != 201 {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	var rot httpapi.RotatedKey
	r.decode(t, &rot)
	if rot.Key.Scope != client.ScopeChat || rot.Key.Name != "bot" || rot.Key.ExpiresAt == nil || rot.Revoked.RotatedTo == nil || *rot.Revoked.RotatedTo != rot.Key.ID {
		t.Fatalf("rotated: %+v", rot)
	}
	if r := e.do("GET", "/agents", bot.Secret, nil); r.status != 401 {
		t.Fatalf("old key after rotation: %d", r.status)
	}
	if r := e.do("GET", "/agents", rot.Key.Secret, nil); r.status != 200 {
		t.Fatalf("new key after rotation: %d %s", r.status, r.body)
	}

	// An account's last admin key stays; another account's keys are not
	// found; an unknown id is 404.
	var boot httpapi.APIKey
	e.do("GET", "/keys", e.key, nil).decode(t, &keys)
	for _, k := range keys {
		if k.Scope == client.ScopeAdmin {
			boot = k
		}
	}
	if r := e.do("DELETE", "/keys/"+boot.ID, e.key, nil); r.status != 409 {
		t.Fatalf("revoking the last admin key: %d %s", r.status, r.body)
	}
	other := e.newKey("other")
	if r := e.do("GET", "/keys", other, nil); r.status != 403 {
		t.Fatalf("a full key read the keys: %d", r.status)
	}
	for _, id := range []string{"key_0000000000000000", "nope"} {
		if r := e.do("DELETE", "/keys/"+id, e.key, nil); r.status != 404 {
			t.Fatalf("revoke %s: %d", id, r.status)
		}
	}
	// The operator manages another account's keys.
	ok := e.createKey(e.key, map[string]any{"name": "acme admin", "scope": "admin", "account": "acme"})
	if ok.Account != "acme" {
		t.Fatalf("operator's key for acme: %+v", ok)
	}
	if r := e.do("POST", "/keys", ok.Secret, map[string]any{"name": "x", "scope": "full", "account": "default"}); r.status != 403 {
		t.Fatalf("acme's admin made a key for the operator's account: %d", r.status)
	}
	if r := e.do("GET", "/keys?account=acme", e.key, nil); r.status != 200 || !strings.Contains(string(r.body), ok.ID) {
		t.Fatalf("operator lists acme's keys: %d %s", r.status, r.body)
	}
}

// TestScopes: each scope reaches what docs/api.md's table says and no
// more; a refusal is a 403 naming the scope needed, and is audited.
func TestScopes(t *testing.T) {
	e := newEnv(t, envOptions{})
	secrets := map[apikey.Scope]string{apikey.ScopeAdmin: e.key}
	for _, s := range []apikey.Scope{apikey.ScopeRead, apikey.ScopeChat, apikey.ScopeFull} {
		secrets[s] = e.createKey(e.key, map[string]any{"name": string(s), "scope": string(s)}).Secret
	}
	const agentID = "00000000-0000-4000-8000-000000000000"
	cases := []struct {
		method, path string
		need         apikey.Scope
	}{
		{"GET", "/agents", apikey.ScopeRead},
		{"GET", "/agent/" + agentID + "/policy", apikey.ScopeRead},
		{"POST", "/agent/" + agentID + "/chat", apikey.ScopeChat},
		{"POST", "/agent/" + agentID + "/conversations", apikey.ScopeChat},
		{"PUT", "/agent/" + agentID + "/policy", apikey.ScopeFull},
		{"POST", "/webhooks", apikey.ScopeFull},
		{"POST", "/agent/create", apikey.ScopeFull},
		{"GET", "/keys", apikey.ScopeAdmin},
		{"POST", "/keys", apikey.ScopeAdmin},
		{"GET", "/audit", apikey.ScopeAdmin},
	}
	for _, tc := range cases {
		for _, s := range apikey.Scopes() {
			var body any = map[string]any{}
			if tc.method == "GET" {
				body = nil
			}
			r := e.do(tc.method, tc.path, secrets[s], body)
			refused := r.status == http.StatusForbidden
			if want := !s.Allows(tc.need); refused != want {
				t.Errorf("%s %s with a %s key: %d %s (refusal wanted: %t)", tc.method, tc.path, s, r.status, r.body, want)
			}
			if refused {
				if msg, _ := r.errorBody(t); !strings.Contains(msg, "needs "+string(tc.need)) {
					t.Errorf("refusal does not name the scope needed: %s", msg)
				}
			}
		}
	}
	refusals := 0
	for _, rec := range e.auditOf(e.key) {
		if rec.Outcome == audit.OutcomeRefused {
			refusals++
		}
	}
	// read: 8 refused, chat: 6, full: 3.
	if refusals != 17 {
		t.Fatalf("%d refusals audited, want 17", refusals)
	}
}

// TestEveryMutatingRouteIsAudited walks the router: every route that is
// not a GET and needs a key writes exactly one audit record per request,
// whatever its answer; a new route is covered, or this fails. Public
// writes (the pay page's "I paid" and x402) are listed with their reason.
func TestEveryMutatingRouteIsAudited(t *testing.T) {
	e := newEnv(t, envOptions{})
	public := map[string]string{
		"POST /pay/{invoiceId}/paid": "the payer's notice on the public pay page: no account's key; the claim that settles an invoice is audited by its agent (invoice.claim, TestPublicClaimSettlesOnce)",
	}
	const uuid = "00000000-0000-4000-8000-000000000000"
	n := 0
	err := chi.Walk(e.api.Routes(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == "GET" || method == "HEAD" || strings.HasSuffix(route, "/*") {
			return nil
		}
		path := route
		for _, p := range []string{"{keyId}"} {
			path = strings.ReplaceAll(path, p, "key_0000000000000000")
		}
		for strings.Contains(path, "{") {
			i := strings.Index(path, "{")
			j := strings.Index(path[i:], "}")
			path = path[:i] + uuid + path[i+j+1:]
		}
		if r := e.do(method, path, "", map[string]any{}); r.status != http.StatusUnauthorized {
			if public[method+" "+route] == "" {
				t.Errorf("%s %s answers %d without a key and is not in the list of public writes", method, route, r.status)
			}
			return nil
		}
		before := len(e.auditOf(e.key))
		r := e.do(method, path, e.key, map[string]any{})
		recs := e.auditOf(e.key)
		if got := len(recs) - before; got != 1 {
			t.Errorf("%s %s (%d): %d audit records, want 1", method, route, r.status, got)
			return nil
		}
		rec := recs[0]
		if rec.Route != route || rec.Method != method || rec.Status != r.status || rec.RequestID != r.header.Get("X-Request-Id") || rec.Source == "" || rec.KeyID == "" {
			t.Errorf("%s %s: record %+v (answer %d)", method, route, rec, r.status)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 {
		t.Fatalf("only %d mutating routes walked", n)
	}
}

func TestAuditListFiltersAndExports(t *testing.T) {
	e := newEnv(t, envOptions{})
	for i := 0; i < 3; i++ {
		e.do("POST", "/webhooks", e.key, map[string]any{"url": "ftp://nope"})
	}
	e.createKey(e.key, map[string]any{"name": "csv", "scope": "read"})
	var page httpapi.AuditPage
	e.do("GET", "/audit?action=webhook&limit=2", e.key, nil).decode(t, &page)
	if len(page.Records) != 2 || page.NextCursor == nil || page.Records[0].Action != "webhook.create" || page.Records[0].Outcome != "failed" || page.Records[0].Detail == "" {
		t.Fatalf("first page: %+v", page)
	}
	var next httpapi.AuditPage
	e.do("GET", "/audit?action=webhook&limit=2&cursor="+*page.NextCursor, e.key, nil).decode(t, &next)
	if len(next.Records) != 1 || next.NextCursor != nil {
		t.Fatalf("second page: %+v", next)
	}
	r := e.do("GET", "/audit?format=csv", e.key, nil)
	lines := strings.Split(strings.TrimSpace(string(r.body)), "\n")
	if r.status != 200 || !strings.HasPrefix(lines[0], "id,time,accountId") || len(lines) != 5 || !strings.Contains(r.header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/audit?format=jsonl&outcome=ok", e.key, nil)
	if lines := strings.Split(strings.TrimSpace(string(r.body)), "\n"); r.status != 200 || len(lines) != 1 || !strings.Contains(lines[0], `"key.create"`) {
		t.Fatalf("jsonl: %d %s", r.status, r.body)
	}
	for _, q := range []string{"since=yesterday", "outcome=maybe", "limit=0", "format=xml", "cursor=x/y"} {
		if r := e.do("GET", "/audit?"+q, e.key, nil); r.status != 400 {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
}
