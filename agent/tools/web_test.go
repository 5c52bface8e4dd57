package tools

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestWebRequestSend checks the one exchange pay_invoice and fetch_paid
// share: the headers and body go out, the answer's body is capped at the
// limit (truncated says it was longer), and a request that got no answer
// is told apart from an answer.
func TestWebRequestSend(t *testing.T) {
	var gotMethod, gotType, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotMethod, gotType = r.Method, r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Set("X-Size", r.URL.Query().Get("n"))
		_, _ = io.WriteString(w, strings.Repeat("x", len(r.URL.Query().Get("n"))))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, n       string
		body          []byte
		limit         int
		wantBody      string
		wantTruncated bool
	}{
		{name: "under the limit", n: "123", limit: 4, wantBody: "xxx"},
		{name: "at the limit", n: "1234", limit: 4, wantBody: "xxxx"},
		{name: "over the limit", n: "12345", limit: 4, wantBody: "xxxx", wantTruncated: true},
		{name: "with a body", n: "1", body: []byte(`{"a":1}`), limit: 4, wantBody: "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodGet
			if tc.body != nil {
				method = http.MethodPost
			}
			r := webRequest{method: method, url: srv.URL + "/?n=" + tc.n, body: tc.body, limit: tc.limit,
				header: map[string]string{"Content-Type": "application/json"}}
			ans, answered, err := r.send(context.Background(), srv.Client())
			if err != nil || !answered {
				t.Fatalf("send: answered %v, %v", answered, err)
			}
			if ans.status != http.StatusOK || string(ans.body) != tc.wantBody || ans.truncated != tc.wantTruncated || ans.header.Get("X-Size") != tc.n {
				t.Fatalf("answer %d %q truncated %v header %q; want 200 %q truncated %v", ans.status, ans.body, ans.truncated, ans.header.Get("X-Size"), tc.wantBody, tc.wantTruncated)
			}
			if gotMethod != method || gotType != "application/json" || gotBody != string(tc.body) {
				t.Fatalf("server saw %s %q body %q", gotMethod, gotType, gotBody)
			}
		})
	}
	t.Run("no answer", func(t *testing.T) {
		r := webRequest{method: http.MethodGet, url: "http://127.0.0.1:1/", limit: 4}
		_, answered, err := r.send(context.Background(), NewWebClient(WebOptions{}))
		if err == nil || answered {
			t.Fatalf("a refused address: answered %v, %v", answered, err)
		}
	})
}
