package faultproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHTTPFaults: the armed request meets its fault once (the client gets
// no answer; the node acts on it or not, as the fault says); every other
// request passes unchanged.
func TestHTTPFaults(t *testing.T) {
	var acted atomic.Int64
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "pay") {
			acted.Add(1)
		}
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer node.Close()
	for _, tc := range []struct {
		name  string
		fault Fault
		acted int64
	}{
		{"answer lost", AnswerLost, 1},
		{"request dropped", RequestDropped, 0},
		{"hang", Hang, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acted.Store(0)
			p, err := NewHTTP(node.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			post := func(body string) (string, error) {
				resp, err := http.Post(p.URL()+"/rpc", "text/plain", strings.NewReader(body))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return string(b), err
			}
			hit, done := p.Arm(tc.fault, BodyContains("pay"))
			if got, err := post("read"); err != nil || got != "ok /rpc" {
				t.Fatalf("unarmed request = %q, %v", got, err)
			}
			errc := make(chan error, 1)
			go func() { _, err := post("pay"); errc <- err }()
			<-hit
			if tc.fault == Hang {
				p.Release()
			}
			if err := <-errc; err == nil {
				t.Fatal("the faulty request was answered")
			}
			<-done
			if n := acted.Load(); n != tc.acted {
				t.Fatalf("the node acted %d times; want %d", n, tc.acted)
			}
			// Once: the next one passes.
			if got, err := post("pay"); err != nil || got != "ok /rpc" || acted.Load() != tc.acted+1 {
				t.Fatalf("next request = %q, %v (acted %d)", got, err, acted.Load())
			}
		})
	}
}
