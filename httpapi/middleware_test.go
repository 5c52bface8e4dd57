package httpapi

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A panic in a handler is a 500 in the error format, with no stack trace
// for the client, and the server keeps serving.
func TestPanicBecomes500WithoutStack(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil)), maxBody: DefaultMaxBody}
	h := s.observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic("secret internal detail")
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for i := 0; i < 2; i++ {
		resp, err := http.Get(srv.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 500 {
			t.Fatalf("status = %d", resp.StatusCode)
		}
		var e struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		if e.StatusCode != 500 || !strings.HasPrefix(e.Message, "internal server error") {
			t.Fatalf("body = %+v", e)
		}
		if strings.Contains(string(body), "secret") || strings.Contains(string(body), "goroutine") {
			t.Fatalf("body leaks internals: %s", body)
		}
		if id := resp.Header.Get(HeaderRequestID); id == "" || !strings.Contains(e.Message, id) {
			t.Fatalf("request id %q not in header and message %q", id, e.Message)
		}
	}
}
