package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/client"
)

// flaky answers the first `fail` requests with status (and Retry-After when
// retryAfter is not ""), then 200 with body.
type flaky struct {
	fail       int
	status     int
	retryAfter string
	body       string
	n          atomic.Int32
	mu         sync.Mutex
	reqs       []*http.Request
	bodies     []string
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	if int(f.n.Add(1)) <= f.fail {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": "busy, retry", "statusCode": f.status})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, f.body)
}

func fakeClient(t *testing.T, h http.Handler, opts ...client.Option) *client.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "veil_live_test", append([]client.Option{client.WithRetry(fastRetry)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	f := &flaky{fail: 1, status: 503, retryAfter: "1", body: `[]`}
	c := fakeClient(t, f)
	start := time.Now()
	if _, err := c.ListAgents(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := f.n.Load(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After: 1", d)
	}
}

func TestRetryBackoffThenGiveUp(t *testing.T) {
	for _, status := range []int{429, 503, 504, 502} {
		f := &flaky{fail: 2, status: status, body: `{"status":"ok"}`}
		c := fakeClient(t, f)
		if _, err := c.Health(ctx(t)); err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if n := f.n.Load(); n != 3 {
			t.Fatalf("%d: %d requests, want 3", status, n)
		}
	}
	// More failures than attempts: the last error, typed.
	f := &flaky{fail: 10, status: 503, body: `[]`}
	_, err := fakeClient(t, f).ListAgents(ctx(t))
	if !client.IsUnavailable(err) || f.n.Load() != int32(fastRetry.MaxAttempts) {
		t.Fatalf("err %v after %d requests", err, f.n.Load())
	}
	// Statuses a repeat does not fix are not retried.
	for _, status := range []int{400, 401, 404, 409, 500} {
		f := &flaky{fail: 10, status: status, body: `[]`}
		_, err := fakeClient(t, f).ListAgents(ctx(t))
		if client.StatusCode(err) != status || f.n.Load() != 1 {
			t.Fatalf("%d: err %v after %d requests", status, err, f.n.Load())
		}
	}
}

func TestRetryAfterBeyondCapIsReturned(t *testing.T) {
	f := &flaky{fail: 1, status: 429, retryAfter: "120", body: `[]`}
	_, err := fakeClient(t, f).ListAgents(ctx(t))
	ae := asError(t, err, 429)
	if ae.RetryAfter != 120*time.Second || f.n.Load() != 1 || !client.IsRateLimited(err) {
		t.Fatalf("err %+v after %d requests", ae, f.n.Load())
	}
	// An HTTP-date Retry-After.
	f = &flaky{fail: 1, status: 503, retryAfter: time.Now().Add(-time.Second).UTC().Format(http.TimeFormat), body: `[]`}
	if _, err := fakeClient(t, f).ListAgents(ctx(t)); err != nil || f.n.Load() != 2 {
		t.Fatalf("HTTP-date Retry-After: %v after %d", err, f.n.Load())
	}
}

func TestRetryStopsWithContext(t *testing.T) {
	// A Retry-After far beyond the deadline: the call must give up when the
	// context ends, not after the wait (the bound is generous, for loaded
	// machines, and still far below the minute it would otherwise take).
	f := &flaky{fail: 10, status: 503, retryAfter: "60", body: `[]`}
	c := fakeClient(t, f)
	cx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ListAgents(cx)
	if !client.IsUnavailable(err) || time.Since(start) > 30*time.Second || f.n.Load() != 1 {
		t.Fatalf("err %v after %v and %d requests", err, time.Since(start), f.n.Load())
	}
}

func TestUnsafeCallsAreNotRetried(t *testing.T) {
	ctx := ctx(t)
	id := "0b6c9d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e"
	calls := map[string]func(c *client.Client) error{
		"create": func(c *client.Client) error {
			_, err := c.CreateAgent(ctx, client.CreateAgentRequest{Name: "alice", Chain: "base", Wallet: "0x", Signature: "0x"})
			return err
		},
		"export": func(c *client.Client) error {
			_, err := c.ExportKey(ctx, id, client.ExportRequest{Signature: "s", Message: "m"})
			return err
		},
		"new conversation": func(c *client.Client) error { _, err := c.CreateConversation(ctx, id); return err },
		"delete conversation": func(c *client.Client) error {
			return c.DeleteConversation(ctx, id, id)
		},
		"chat without idempotency key": func(c *client.Client) error {
			_, err := c.Chat(ctx, id, client.ChatRequest{Message: "hi"})
			return err
		},
	}
	for name, call := range calls {
		for _, status := range []int{429, 503} {
			f := &flaky{fail: 10, status: status, body: `{}`}
			err := call(fakeClient(t, f, client.WithoutAutoIdempotencyKey()))
			if client.StatusCode(err) != status || f.n.Load() != 1 {
				t.Fatalf("%s on %d: err %v after %d requests", name, status, err, f.n.Load())
			}
		}
	}
	// Transport failures are not retried either.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	url := srv.URL
	srv.Close()
	c, _ := client.New(url, "k", client.WithRetry(fastRetry))
	if _, err := c.CreateAgent(ctx, client.CreateAgentRequest{}); err == nil || client.StatusCode(err) != 0 {
		t.Fatalf("create on a closed server: %v", err)
	}
}

func TestIdempotentPostsAreRetried(t *testing.T) {
	ctx := ctx(t)
	id := "0b6c9d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e"
	inv := `{"id":"` + id + `","agentName":"alice","amount":"5","asset":"USDC","memo":"m","status":"paid","txHash":"0xabc","paymentLink":"http://x/pay/1","createdAt":"2026-01-15T12:00:00Z"}`
	calls := map[string]struct {
		body string
		call func(c *client.Client) error
	}{
		"notifications read":   {"", func(c *client.Client) error { return c.MarkNotificationsRead(ctx, id) }},
		"notifications delete": {"", func(c *client.Client) error { return c.DeleteNotifications(ctx, id) }},
		"invoice paid": {inv, func(c *client.Client) error {
			i, err := c.MarkInvoicePaid(ctx, id, "0xabc")
			if err == nil && (i.Status != "paid" || i.TxHash == nil || *i.TxHash != "0xabc") {
				t.Errorf("invoice %+v", i)
			}
			return err
		}},
		"schedule pause": {`{"id":"` + id + `","status":"paused","nextRun":"2026-01-16T12:00:00Z"}`, func(c *client.Client) error {
			s, err := c.PauseSchedule(ctx, id, id)
			if err == nil && s.Status != "paused" {
				t.Errorf("schedule %+v", s)
			}
			return err
		}},
		"chat with auto idempotency key": {`{"response":"hi","conversationId":"` + id + `"}`, func(c *client.Client) error {
			_, err := c.Chat(ctx, id, client.ChatRequest{Message: "hi"})
			return err
		}},
	}
	for name, tc := range calls {
		f := &flaky{fail: 2, status: 503, retryAfter: "0", body: tc.body}
		if err := tc.call(fakeClient(t, f)); err != nil || f.n.Load() != 3 {
			t.Fatalf("%s: err %v after %d requests", name, err, f.n.Load())
		}
		if name == "chat with auto idempotency key" {
			k := f.reqs[0].Header.Get("Idempotency-Key")
			if !client.IsAgentID(k) {
				t.Fatalf("auto Idempotency-Key %q", k)
			}
			for i, r := range f.reqs {
				if r.Header.Get("Idempotency-Key") != k || f.bodies[i] != `{"message":"hi"}` {
					t.Fatalf("attempt %d: key %q body %s", i, r.Header.Get("Idempotency-Key"), f.bodies[i])
				}
			}
		}
		if name == "invoice paid" && f.bodies[2] != `{"txHash":"0xabc"}` {
			t.Fatalf("paid body on retry: %q", f.bodies[2])
		}
	}
}

func TestNonJSONErrorBody(t *testing.T) {
	c := fakeClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "<html>bad gateway</html>")
	}), client.WithRetry(client.NoRetry))
	_, err := c.ListAgents(ctx(t))
	ae := asError(t, err, 502)
	if ae.Message != "Bad Gateway" || !strings.Contains(err.Error(), "GET /agents: 502") {
		t.Fatalf("%+v / %v", ae, err)
	}
}
