package httpapi_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/webhook"
	"github.com/veilhq/veil/httpapi"
)

func TestWebhookEndpoints(t *testing.T) {
	e := newEnv(t, envOptions{})
	o := newEVMOwner(t)
	alice := e.create(t, o, "hooked", "ethereum")
	other := e.newKey("other")

	for _, tc := range []struct {
		name string
		body any
		want int
	}{
		{"no url", map[string]any{}, 400},
		{"not http", map[string]any{"url": "ftp://example.com/x"}, 400},
		{"loopback", map[string]any{"url": "http://127.0.0.1:9/x"}, 400},
		{"metadata", map[string]any{"url": "http://169.254.169.254/latest/meta-data"}, 400},
		{"localhost", map[string]any{"url": "http://localhost/x"}, 400},
		{"unknown event", map[string]any{"url": "https://example.com/x", "events": []string{"everything"}}, 400},
		{"events not a list", map[string]any{"url": "https://example.com/x", "events": "payment_sent"}, 400},
		{"agent not a uuid", map[string]any{"url": "https://example.com/x", "agentId": "alice"}, 400},
		{"unknown agent", map[string]any{"url": "https://example.com/x", "agentId": "00000000-0000-4000-8000-000000000000"}, 404},
	} {
		r := e.do("POST", "/webhooks", e.key, tc.body)
		if r.status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
			continue
		}
		r.errorBody(t)
	}
	// Another account's agent is not found.
	if r := e.do("POST", "/webhooks", other, map[string]any{"url": "https://example.com/x", "agentId": alice.ID}); r.status != 404 {
		t.Fatalf("foreign agent: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/webhooks", "", map[string]any{"url": "https://example.com/x"}); r.status != 401 {
		t.Fatalf("no key: %d", r.status)
	}

	r := e.do("POST", "/webhooks", e.key, map[string]any{"url": "https://example.com/veil", "events": []string{"payment_sent", "payment_sent", "invoice_paid"}, "agentId": alice.ID})
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var created httpapi.WebhookView
	r.decode(t, &created)
	if created.ID == "" || !strings.HasPrefix(created.Secret, "whsec_") || created.AgentID == nil || *created.AgentID != alice.ID ||
		strings.Join(created.Events, ",") != "payment_sent,invoice_paid" || created.URL != "https://example.com/veil" {
		t.Fatalf("created = %+v", created)
	}
	all := e.do("POST", "/webhooks", e.key, map[string]any{"url": "https://example.com/all"})
	if all.status != 201 || !strings.Contains(string(all.body), `"events":[]`) || !strings.Contains(string(all.body), `"agentId":null`) {
		t.Fatalf("create for all: %d %s", all.status, all.body)
	}

	// The secret is shown once.
	r = e.do("GET", "/webhooks", e.key, nil)
	if r.status != 200 || strings.Contains(string(r.body), "whsec_") || strings.Contains(string(r.body), `"secret"`) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var list []httpapi.WebhookView
	r.decode(t, &list)
	if len(list) != 2 || list[0].ID != created.ID {
		t.Fatalf("list = %+v", list)
	}

	// Another account sees nothing of it.
	if r := e.do("GET", "/webhooks", other, nil); r.status != 200 || string(r.body) != "[]\n" {
		t.Fatalf("other's list: %d %s", r.status, r.body)
	}
	for _, req := range []struct{ method, path string }{
		{"DELETE", "/webhooks/" + created.ID},
		{"POST", "/webhooks/" + created.ID + "/test"},
		{"GET", "/webhooks/" + created.ID + "/deliveries"},
		{"GET", "/webhooks/not-a-uuid/deliveries"},
	} {
		r := e.do(req.method, req.path, other, nil)
		if msg, _ := r.errorBody(t); r.status != 404 || msg != "webhook not found" {
			t.Fatalf("%s %s by another account: %d %s", req.method, req.path, r.status, r.body)
		}
	}

	// Test queues a delivery.
	r = e.do("POST", "/webhooks/"+created.ID+"/test", e.key, nil)
	if r.status != 202 || !strings.Contains(string(r.body), `"status":"pending"`) || !strings.Contains(string(r.body), `"type":"test"`) {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/webhooks/"+created.ID+"/deliveries", e.key, nil)
	var ds []httpapi.DeliveryView
	r.decode(t, &ds)
	if r.status != 200 || len(ds) != 1 || ds[0].Type != "test" {
		t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/webhooks/"+created.ID+"/deliveries?limit=0", e.key, nil); r.status != 400 {
		t.Fatalf("limit=0: %d", r.status)
	}

	if r := e.do("DELETE", "/webhooks/"+created.ID, e.key, nil); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/webhooks/"+created.ID, e.key, nil); r.status != 404 {
		t.Fatalf("delete again: %d", r.status)
	}
}

// A notification the agent stores reaches the receiver, signed, with the
// body the docs give.
func TestWebhookDeliversNotifications(t *testing.T) {
	e := newEnv(t, envOptions{webhookAllowPrivate: true})
	alice := e.create(t, newEVMOwner(t), "pusher", "ethereum")
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
	}))
	defer rcv.Close()
	r := e.do("POST", "/webhooks", e.key, map[string]any{"url": rcv.URL + "/in", "events": []string{"payment_received"}})
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var hook httpapi.WebhookView
	r.decode(t, &hook)

	ctx := context.Background()
	for _, typ := range []string{agent.NoteInvoicePaid, agent.NotePaymentReceived} {
		if _, err := e.host.Request(ctx, alice.ID, &agent.Notify{Type: typ, Title: "Received 1 ETH", Body: "from bob"}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := webhook.NewDeliverer(webhook.Options{Store: e.store, AllowPrivate: true}).RunOnce(ctx)
	if err != nil || rep.Delivered != 1 {
		t.Fatalf("deliver: %+v %v", rep, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	var p struct {
		ID        string             `json:"id"`
		Type      string             `json:"type"`
		AgentID   string             `json:"agentId"`
		CreatedAt time.Time          `json:"createdAt"`
		Data      agent.Notification `json:"data"`
	}
	if err := json.Unmarshal(bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != "payment_received" || p.AgentID != alice.ID || p.Data.Title != "Received 1 ETH" || p.Data.ID != 2 || got[0].Header.Get(webhook.HeaderEventID) != p.ID {
		t.Fatalf("payload %s, headers %v", bodies[0], got[0].Header)
	}
	sig := got[0].Header.Get(webhook.HeaderSignature)
	ts, v1, _ := strings.Cut(strings.TrimPrefix(sig, "t="), ",v1=")
	mac := hmac.New(sha256.New, []byte(hook.Secret))
	mac.Write([]byte(ts + "." + string(bodies[0])))
	if hex.EncodeToString(mac.Sum(nil)) != v1 {
		t.Fatalf("signature %q does not check", sig)
	}
}

// The stream sends the notifications stored after it began, over real
// HTTP, resumes after Last-Event-ID, and is account-scoped.
func TestNotificationStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	alice := e.create(t, newEVMOwner(t), "streamer", "ethereum")
	ctx := context.Background()
	notify := func(title string) {
		t.Helper()
		if _, err := e.host.Request(ctx, alice.ID, &agent.Notify{Type: agent.NotePaymentSent, Title: title}); err != nil {
			t.Fatal(err)
		}
	}
	notify("before the stream")
	path := "/agent/" + alice.ID + "/notifications/stream"
	if r := e.do("GET", path, e.newKey("other"), nil); r.status != 404 {
		t.Fatalf("another account: %d %s", r.status, r.body)
	}
	if r := e.doHeaders("GET", path, e.key, nil, "Last-Event-ID", "x"); r.status != 400 {
		t.Fatalf("bad Last-Event-ID: %d", r.status)
	}

	open := func(headers ...string) (*bufio.Reader, func()) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		req, _ := http.NewRequestWithContext(cctx, "GET", e.url+path, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return bufio.NewReader(resp.Body), func() { cancel(); resp.Body.Close() }
	}
	// next reads the next event (skipping comments) as its id and data.
	next := func(rd *bufio.Reader) (string, agent.Notification) {
		t.Helper()
		var id, data string
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("read stream: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "id: "):
				id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && data != "":
				var n agent.Notification
				if err := json.Unmarshal([]byte(data), &n); err != nil {
					t.Fatal(err)
				}
				return id, n
			}
		}
	}
	rd, closeStream := open()
	// Written after the stream is up (the first comment has been sent
	// once the headers arrived).
	notify("first")
	notify("second")
	if id, n := next(rd); id != "2" || n.Title != "first" || n.Type != agent.NotePaymentSent {
		t.Fatalf("first event: %s %+v", id, n)
	}
	if id, n := next(rd); id != "3" || n.Title != "second" {
		t.Fatalf("second event: %s %+v", id, n)
	}
	closeStream()

	rd, closeStream = open("Last-Event-ID", "1")
	defer closeStream()
	if id, n := next(rd); id != "2" || n.Title != "first" {
		t.Fatalf("resumed: %s %+v", id, n)
	}
}
