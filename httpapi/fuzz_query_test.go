package httpapi_test

import (
	"encoding/json"
	"net/http/httptest"
	neturl "net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/veilhq/veil/enclave"
)

// checkAnswer fails t on a 5xx, or on a 4xx outside the spec's error
// format.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("%s = %d %s", what, rec.Code, rec.Body.Bytes())
	}
	if rec.Code >= 400 {
		var eb struct {
			Message    *string `json:"message"`
			StatusCode *int    `json:"statusCode"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Message == nil || eb.StatusCode == nil || *eb.StatusCode != rec.Code {
			t.Fatalf("%s: %d without the error format: %s", what, rec.Code, rec.Body.Bytes())
		}
	}
}

// The query string of /tee/attest (its nonce, and whatever else a client
// sends): never a 5xx, and a statement that is given is bound to exactly
// the nonce asked for, so that the client's check of it can succeed.
func FuzzAttestQuery(f *testing.F) {
	for _, s := range []string{
		"nonce=client-nonce-1", "", "nonce=", "nonce=a&nonce=b", "nonce=%zz", "nonce=%00", "nonce=" + strings.Repeat("n", 129),
		"nonce=%C3%A9t%C3%A9", "nonce=%FF%FE", "nonce=a+b", ";nonce=x", "nonce=x;y", "limit=-1&cursor=..%2F..&after=1e999",
	} {
		f.Add(s)
	}
	e := newEnv(f, envOptions{})
	r := e.do("POST", "/agent/create", e.key, newEVMOwner(f).createBody("attested", "all"))
	var a struct{ ID string }
	_ = json.Unmarshal(r.body, &a)
	f.Fuzz(func(t *testing.T, rawQuery string) {
		target := "/tee/attest/" + a.ID + "?" + rawQuery
		if u, err := neturl.ParseRequestURI(target); err != nil || u.RawQuery != rawQuery || strings.ContainsAny(rawQuery, " ") {
			t.Skip("not a query string an HTTP request can carry")
		}
		req := httptest.NewRequest("GET", target, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		checkAnswer(t, "GET "+target, rec)
		if rec.Code != 200 {
			return
		}
		q, _ := neturl.ParseQuery(rawQuery)
		want := q.Get("nonce")
		var att enclave.Attestation
		if err := json.Unmarshal(rec.Body.Bytes(), &att); err != nil {
			t.Fatalf("GET %s: %v", target, err)
		}
		if want != "" && att.Nonce != want {
			t.Fatalf("GET %s: statement for nonce %q, asked %q", target, att.Nonce, want)
		}
		if want == "" && att.Nonce == "" {
			t.Fatalf("GET %s: statement without a nonce", target)
		}
		if !utf8.ValidString(att.Nonce) || len(att.Nonce) > 128 || strings.IndexFunc(att.Nonce, unicode.IsControl) >= 0 {
			t.Fatalf("GET %s: nonce %q given a statement", target, att.Nonce)
		}
	})
}

// The path parameters of every route that takes one (agent, conversation,
// invoice and schedule ids, names, wallets): whatever the segment, the
// answer is a 2xx or a 4xx in the spec's format, never a 5xx.
func FuzzPathParams(f *testing.F) {
	for i, s := range []string{
		"", "x", "..", "../agents", "%2e%2e%2f", "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-00000000000G",
		"{00000000-0000-0000-0000-000000000000}", "urn:uuid:00000000-0000-0000-0000-000000000000", "alice", "alice.veil",
		"0x0000000000000000000000000000000000000001", "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7", "\x00", "é", "\xff",
		strings.Repeat("a", 5000),
	} {
		f.Add(uint8(i), s)
	}
	e := newEnv(f, envOptions{})
	r := e.do("POST", "/agent/create", e.key, newEVMOwner(f).createBody("pathed", "all"))
	var a struct{ ID string }
	_ = json.Unmarshal(r.body, &a)
	// html marks the pay page's own pages, which answer errors as pages.
	routes := []struct {
		method, path string
		html         bool
	}{
		{"GET", "/agent/%s", false},
		{"GET", "/agent/%s/status", false},
		{"GET", "/agent/%s/conversations", false},
		{"GET", "/agent/%s/notifications", false},
		{"GET", "/agent/%s/schedules", false},
		{"GET", "/agent/%s/policy", false},
		{"GET", "/agent/info/%s", false},
		{"GET", "/agent/wallet/%s", false},
		{"GET", "/invoice/%s", false},
		{"GET", "/pay/%s", true},
		{"GET", "/pay/%s/status", false},
		{"GET", "/pay/%s/qr.svg", true},
		{"GET", "/pay/assets/%s", true},
		{"GET", "/tee/attest/%s", false},
		{"GET", "/agent/{agent}/conversations/%s/messages", false},
		{"DELETE", "/agent/{agent}/conversations/%s", false},
		{"POST", "/agent/{agent}/schedules/%s/pause", false},
		{"POST", "/agent/{agent}/schedules/%s/cancel", false},
	}
	f.Fuzz(func(t *testing.T, route uint8, segment string) {
		rt := routes[int(route)%len(routes)]
		path := strings.ReplaceAll(rt.path, "{agent}", a.ID)
		target := strings.Replace(path, "%s", neturl.PathEscape(segment), 1)
		req := httptest.NewRequest(rt.method, target, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		rec := httptest.NewRecorder()
		e.api.ServeHTTP(rec, req)
		if rt.html && rec.Code < 500 {
			return
		}
		checkAnswer(t, rt.method+" "+target, rec)
	})
}
