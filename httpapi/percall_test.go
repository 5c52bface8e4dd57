package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/httpapi"
)

// A body that starts with invalid JSON but trickles past the body
// deadline is a 408 (the body did not arrive), not a 400; the same body
// sent whole is a 400 at once.
func TestTrickledInvalidJSONIsA408(t *testing.T) {
	e := newEnv(t, envOptions{limits: httpapi.Limits{BodyTimeout: 200 * time.Millisecond}})
	addr := serveLimited(t, e)
	const body = `{nope, this is not JSON and more is coming`
	for _, tc := range []struct {
		name   string
		sent   string
		status int
	}{
		{"trickled", body[:len(body)-1], 408},
		{"whole", body, 400},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /webhooks HTTP/1.1\r\nHost: veil.test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", e.key, len(body), tc.sent)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		c.Close()
		_, code := response{status: resp.StatusCode, header: resp.Header, body: raw}.errorBody(t)
		if resp.StatusCode != tc.status || code != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, raw, tc.status)
		}
	}
}

// mcpPost sends one raw JSON-RPC body to an agent's MCP endpoint.
func (e *env) mcpPost(t *testing.T, agentID, body string, headers ...string) response {
	t.Helper()
	h := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)
	return e.doHeaders("POST", "/agent/"+agentID+"/mcp", e.key, body, h...)
}

func batch(n int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i+1)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// Every call of a JSON-RPC batch counts against the key's rate limit, and
// a batch over MCPMaxBatch is refused whole; both in the error format.
func TestMCPBatchCountsEveryCall(t *testing.T) {
	e := newEnv(t, envOptions{rates: httpapi.RateLimit{PerSecond: 0.001, Burst: 6}})
	alice := e.create(t, newEVMOwner(t), "batcher", "ethereum") // spends one token
	r := e.mcpPost(t, alice.ID, batch(httpapi.MCPMaxBatch+1))
	if msg, code := r.errorBody(t); r.status != 400 || code != 400 || !strings.Contains(msg, "at most") {
		t.Fatalf("oversized batch: %d %s", r.status, r.body)
	}
	// A batch of as many calls as tokens are left takes them all.
	left, _ := strconv.Atoi(r.header.Get("X-RateLimit-Remaining"))
	if left < 2 {
		t.Fatalf("%d tokens left", left)
	}
	if r := e.mcpPost(t, alice.ID, batch(left)); r.status != 200 || strings.Count(string(r.body), `"tools"`) != left {
		t.Fatalf("batch of %d: %d %s", left, r.status, r.body)
	}
	r = e.mcpPost(t, alice.ID, batch(2))
	if msg, code := r.errorBody(t); r.status != 429 || code != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(msg, "rate limit") {
		t.Fatalf("batch over the limit: %d %v %s", r.status, r.header, r.body)
	}
}

// The SDK's own HTTP errors (a wrong Accept, a malformed message) are in
// the API's error format, not plain text.
func TestMCPErrorsInAPIFormat(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice := e.create(t, newEVMOwner(t), "mcperrs", "ethereum")
	for _, tc := range []struct {
		name, body string
		headers    []string
	}{
		{"accept", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"Accept", "text/plain"}},
		{"content type", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"Content-Type", "text/plain"}},
		{"not json", `{"jsonrpc":`, nil},
		{"empty batch", `[]`, nil},
	} {
		r := e.mcpPost(t, alice.ID, tc.body, tc.headers...)
		if r.status < 400 {
			t.Errorf("%s: %d %s, want an error", tc.name, r.status, r.body)
			continue
		}
		if !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %q %s", tc.name, r.status, r.header.Get("Content-Type"), r.body)
			continue
		}
		if !strings.Contains(string(r.body), `"jsonrpc"`) {
			if _, code := r.errorBody(t); code != r.status {
				t.Errorf("%s: statusCode %d, status %d", tc.name, code, r.status)
			}
		}
	}
}

// One key holds at most MaxStreamsPerKey streams: the next is a 429 with
// Retry-After in the error format; closing one frees its slot.
func TestStreamsPerKeyCap(t *testing.T) {
	e := newEnv(t, envOptions{maxStreams: 2})
	alice := e.create(t, newEVMOwner(t), "streams", "ethereum")
	path := "/agent/" + alice.ID + "/notifications/stream"
	open := func() (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		req, _ := http.NewRequestWithContext(ctx, "GET", e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, cancel
	}
	var closers []func()
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for i := 0; i < 2; i++ {
		resp, cancel := open()
		closers = append(closers, func() { cancel(); resp.Body.Close() })
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
	}
	resp, cancel := open()
	raw, _ := io.ReadAll(resp.Body)
	cancel()
	r := response{status: resp.StatusCode, header: resp.Header, body: raw}
	if msg, code := r.errorBody(t); r.status != 429 || code != 429 || r.header.Get("Retry-After") == "" || !strings.Contains(msg, "streams") {
		t.Fatalf("third stream: %d %v %s", r.status, r.header, raw)
	}
	closers[0]()
	closers = closers[1:]
	waitFor(t, "a freed stream slot", func() bool {
		resp, cancel := open()
		if resp.StatusCode == 200 {
			closers = append(closers, func() { cancel(); resp.Body.Close() })
			return true
		}
		cancel()
		resp.Body.Close()
		return false
	})
}
