package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestHealthNeedsNoKey(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.do("GET", "/health", "", nil)
	if r.status != 200 || strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
		t.Fatalf("health = %d %s", r.status, r.body)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatal("no request id header")
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, envOptions{})
	unknown := "veil_live_" + strings.Repeat("A", 43)
	cases := []struct {
		name   string
		header string
		want   int
		msg    string
	}{
		{"missing", "", 401, "missing Authorization"},
		{"not bearer", "Basic " + e.key, 401, "malformed Authorization"},
		{"bearer without key", "Bearer", 401, "malformed Authorization"},
		{"malformed key", "Bearer veil_live_short", 401, "malformed API key"},
		{"wrong prefix", "Bearer sk_live_" + strings.Repeat("A", 43), 401, "malformed API key"},
		{"unknown key", "Bearer " + unknown, 401, "invalid API key"},
		{"valid", "Bearer " + e.key, 200, ""},
		{"scheme case-insensitive", "bearer " + e.key, 200, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.url+"/agents", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := response{status: resp.StatusCode, header: resp.Header, body: body}
			if r.status != tc.want {
				t.Fatalf("status = %d, want %d (%s)", r.status, tc.want, body)
			}
			if tc.want == 200 {
				if strings.TrimSpace(string(body)) != "[]" {
					t.Fatalf("body = %s, want []", body)
				}
				return
			}
			msg, _ := r.errorBody(t)
			if !strings.Contains(msg, tc.msg) {
				t.Fatalf("message %q does not contain %q", msg, tc.msg)
			}
		})
	}
}

func TestRouterErrorsUseErrorFormat(t *testing.T) {
	e := newEnv(t, envOptions{})
	if r := e.do("GET", "/nope", e.key, nil); r.status != 404 {
		t.Fatalf("unknown route = %d", r.status)
	} else {
		r.errorBody(t)
	}
	if r := e.do("PUT", "/health", "", nil); r.status != 405 {
		t.Fatalf("wrong method = %d", r.status)
	} else {
		r.errorBody(t)
	}
}

func TestBodyCap(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := `{"name":"` + strings.Repeat("a", 70<<10) + `"}`
	// Declared length over the cap: refused before reading.
	r := e.do("POST", "/agent/create", e.key, big)
	if r.status != 413 {
		t.Fatalf("declared oversize = %d %s", r.status, r.body)
	}
	r.errorBody(t)
	// Undeclared (chunked) length: cut while reading.
	req, _ := http.NewRequest("POST", e.url+"/agent/create", io.MultiReader(bytes.NewReader([]byte(big))))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rr := response{status: resp.StatusCode, body: body}
	if rr.status != 413 {
		t.Fatalf("chunked oversize = %d %s", rr.status, body)
	}
	rr.errorBody(t)
}

func TestBadJSONIs400(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, body := range []string{`{`, `[]`, `{"name": 5}`, `{"name":"abc"} trailing`, ``} {
		r := e.do("POST", "/agent/create", e.key, body)
		if r.status != 400 {
			t.Fatalf("body %q: status %d %s", body, r.status, r.body)
		}
		r.errorBody(t)
	}
}

func TestRequestAfterShutdownBeganIs503(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.api.BeginShutdown()
	for _, path := range []string{"/health", "/agents"} {
		r := e.do("GET", path, e.key, nil)
		if r.status != 503 || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s after shutdown = %d, Retry-After %q", path, r.status, r.header.Get("Retry-After"))
		}
		r.errorBody(t)
	}
}

func TestRequestIDIsEchoed(t *testing.T) {
	e := newEnv(t, envOptions{})
	req, _ := http.NewRequest("GET", e.url+"/health", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "abc-123" {
		t.Fatalf("request id = %q", got)
	}
	req.Header.Set("X-Request-Id", "bad id with spaces")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Fatalf("unsafe request id passed through: %q", got)
	}
}
