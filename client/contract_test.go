package client_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/veilhq/veil/client"
)

// recorder answers a fixed body and records the request, to check what the
// client sends for the endpoints whose server side lands in other issues.
type recorder struct {
	status int
	body   string
	req    *http.Request
	sent   string
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.req, rc.sent = r, string(b)
	w.Header().Set("Content-Type", "application/json")
	if rc.status == 0 {
		rc.status = 200
	}
	w.WriteHeader(rc.status)
	_, _ = io.WriteString(w, rc.body)
}

const agentID = "0b6c9d3e-4f5a-4b7c-8d9e-0f1a2b3c4d5e"

func TestChatRequestAndResponse(t *testing.T) {
	rc := &recorder{body: `{"response":"Sent 0.5 USDC to bob.veil.","toolCalls":[
		{"name":"send_payment","status":"success","detail":"{\"txHash\":\"0xabc\",\"txLink\":\"http://127.0.0.1:1/tx/0xabc\",\"amount\":\"0.5\"}"},
		{"name":"create_invoice","status":"success","detail":"{\"id\":\"inv-1\",\"paymentLink\":\"http://127.0.0.1:1/pay/inv-1\"}"},
		{"name":"scan_payments","status":"success","detail":"{\"count\":3}"},
		{"name":"get_balance","status":"error","detail":"{\"error\":\"chain unreachable\"}"}],
		"conversationId":"c-1"}`}
	c := fakeClient(t, rc, client.WithAIProvider("openai", "sk-client"))
	resp, err := c.Chat(ctx(t), agentID, client.ChatRequest{Message: "send 0.5 USDC to bob", ConversationID: "c-0"},
		client.WithIdempotencyKey("idem-1"), client.WithRequestID("req-1"))
	if err != nil {
		t.Fatal(err)
	}
	r := rc.req
	if r.Method != "POST" || r.URL.Path != "/agent/"+agentID+"/chat" || rc.sent != `{"message":"send 0.5 USDC to bob","conversationId":"c-0"}` {
		t.Fatalf("sent %s %s %s", r.Method, r.URL.Path, rc.sent)
	}
	for h, want := range map[string]string{
		"Authorization": "Bearer veil_live_test", "X-AI-Provider": "openai", "X-AI-Key": "sk-client",
		"Idempotency-Key": "idem-1", "X-Request-Id": "req-1", "Content-Type": "application/json",
	} {
		if got := r.Header.Get(h); got != want {
			t.Fatalf("%s = %q, want %q", h, got, want)
		}
	}
	if !strings.HasPrefix(r.Header.Get("User-Agent"), "veil-go/") {
		t.Fatalf("User-Agent %q", r.Header.Get("User-Agent"))
	}
	if resp.ConversationID != "c-1" || len(resp.ToolCalls) != 4 {
		t.Fatalf("resp %+v", resp)
	}
	tc := resp.ToolCalls
	if !tc[0].OK() || tc[0].Field("txHash") != "0xabc" || tc[1].Field("id") != "inv-1" || tc[2].Field("count") != "3" {
		t.Fatalf("fields %+v", tc)
	}
	if tc[3].OK() || tc[3].ErrorText() != "chain unreachable" {
		t.Fatalf("error tool %+v %q", tc[3], tc[3].ErrorText())
	}
	links := resp.Links()
	if len(links) != 2 || links[0] != (client.Link{Kind: "txLink", URL: "http://127.0.0.1:1/tx/0xabc"}) || links[1].Kind != "paymentLink" {
		t.Fatalf("links %+v", links)
	}

	// A per-call provider overrides the client's; a key-only call keeps
	// the client's provider.
	if _, err := c.Chat(ctx(t), agentID, client.ChatRequest{Message: "x"}, client.WithProvider("anthropic", "sk-call")); err != nil {
		t.Fatal(err)
	}
	if rc.req.Header.Get("X-AI-Provider") != "anthropic" || rc.req.Header.Get("X-AI-Key") != "sk-call" || rc.sent != `{"message":"x"}` {
		t.Fatalf("per-call provider: %v %s", rc.req.Header, rc.sent)
	}
	if _, err := c.Chat(ctx(t), agentID, client.ChatRequest{Message: "x"}, client.WithProvider("", "sk-2")); err != nil {
		t.Fatal(err)
	}
	if rc.req.Header.Get("X-AI-Provider") != "openai" || rc.req.Header.Get("X-AI-Key") != "sk-2" {
		t.Fatalf("key-only call: %v", rc.req.Header)
	}
	// Without provider options, no provider headers.
	c2 := fakeClient(t, rc, client.WithoutAutoIdempotencyKey())
	if _, err := c2.Chat(ctx(t), agentID, client.ChatRequest{Message: "x"}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"X-AI-Provider", "X-AI-Key", "Idempotency-Key"} {
		if v := rc.req.Header.Get(h); v != "" {
			t.Fatalf("%s sent: %q", h, v)
		}
	}
}

func TestInvoiceAndScheduleRequests(t *testing.T) {
	inv := `{"id":"i-1","agentName":"alice","amount":"25","asset":"USDC","memo":"logo work","status":"pending","txHash":null,"paymentLink":"http://h/pay/i-1","createdAt":"2026-01-15T12:00:00Z","chain":"base","payTo":"0xabc"}`
	rc := &recorder{body: inv}
	c := fakeClient(t, rc)
	i, err := c.GetInvoice(ctx(t), "i-1")
	if err != nil || rc.req.Method != "GET" || rc.req.URL.Path != "/invoice/i-1" {
		t.Fatalf("%+v %v %s", i, err, rc.req.URL)
	}
	if i.TxHash != nil || i.Status != client.InvoicePending || i.PayTo != "0xabc" || i.CreatedAt.IsZero() {
		t.Fatalf("invoice %+v", i)
	}
	if _, err := c.MarkInvoicePaid(ctx(t), "i-1", ""); err != nil || rc.req.Method != "POST" || rc.req.URL.Path != "/invoice/i-1/paid" || rc.sent != "" || rc.req.Header.Get("Content-Type") != "" {
		t.Fatalf("paid without tx: %v %s %q", err, rc.req.URL, rc.sent)
	}

	rc.body = `[{"id":"s-1","recipient":"bob","amount":"5","asset":"ZEN","interval":"weekly","status":"active","nextRun":"2026-01-22T12:00:00Z","lastRun":null}]`
	l, err := c.ListSchedules(ctx(t), agentID)
	if err != nil || len(l) != 1 || l[0].Interval != client.IntervalWeekly || l[0].LastRun != nil || rc.req.URL.Path != "/agent/"+agentID+"/schedules" {
		t.Fatalf("schedules %+v %v", l, err)
	}
	rc.body = `{"id":"s-1","status":"cancelled","nextRun":"2026-01-22T12:00:00Z"}`
	for action, f := range map[string]func() (*client.Schedule, error){
		"pause":  func() (*client.Schedule, error) { return c.PauseSchedule(ctx(t), agentID, "s-1") },
		"resume": func() (*client.Schedule, error) { return c.ResumeSchedule(ctx(t), agentID, "s-1") },
		"cancel": func() (*client.Schedule, error) { return c.CancelSchedule(ctx(t), agentID, "s-1") },
	} {
		if _, err := f(); err != nil || rc.req.Method != "POST" || rc.req.URL.Path != "/agent/"+agentID+"/schedules/s-1/"+action {
			t.Fatalf("%s: %v %s", action, err, rc.req.URL)
		}
	}
	if _, err := c.ScheduleAction(ctx(t), agentID, "s-1", "explode"); err == nil {
		t.Fatal("unknown action accepted")
	}
}

func TestPathsAreEscapedAndBaseURLPath(t *testing.T) {
	rc := &recorder{body: `{}`}
	srvClient := fakeClient(t, rc)
	base := srvClient.BaseURL()
	c, err := client.New(base+"/api/", "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AgentByWallet(ctx(t), "a/b?c"); err != nil {
		t.Fatal(err)
	}
	if rc.req.URL.EscapedPath() != "/api/agent/wallet/a%2Fb%3Fc" || rc.req.URL.RawQuery != "" {
		t.Fatalf("path %q query %q", rc.req.URL.EscapedPath(), rc.req.URL.RawQuery)
	}
	for _, bad := range []string{"ftp://x", "localhost:8080", "http://"} {
		if _, err := client.New(bad, "k"); err == nil {
			t.Fatalf("URL %q accepted", bad)
		}
	}
}
