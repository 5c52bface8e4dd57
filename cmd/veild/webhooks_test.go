package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veilhq/veil/chains/walletsig"
)

// veild runs the webhook deliverer (under its lease): a notification of
// the account reaches a registered receiver, signed. Loopback receivers
// are refused unless --webhook-allow-private.
func TestWebhooksDeliverFromVeild(t *testing.T) {
	got := make(chan *http.Request, 10)
	bodies := make(chan []byte, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer rcv.Close()

	strict := start(t, t.TempDir())
	key := keyRE.FindString(strict.stdout.String())
	if status, body := call(t, "POST", "http://"+strict.addr+"/webhooks", key, map[string]any{"url": rcv.URL}); status != 400 {
		t.Fatalf("loopback webhook without --webhook-allow-private = %d %s", status, body)
	}
	strict.stop(t, syscall.SIGTERM)

	p := start(t, t.TempDir(), "--webhook-allow-private")
	key = keyRE.FindString(p.stdout.String())
	base := "http://" + p.addr
	status, body := call(t, "POST", base+"/webhooks", key, map[string]any{"url": rcv.URL + "/veil", "events": []string{"approval_required"}})
	if status != 201 {
		t.Fatalf("create webhook = %d %s", status, body)
	}
	var hook struct{ ID, Secret string }
	_ = json.Unmarshal(body, &hook)

	// A held payment raises approval_required.
	o := newWalletOwner(t)
	for _, name := range []string{"hooker", "hookee"} {
		msg := walletsig.CreateMessage(name, "ethereum", o.wallet, time.Now())
		if status, body := call(t, "POST", base+"/agent/create", key, map[string]string{
			"name": name, "chain": "ethereum", "wallet": o.wallet, "signature": walletsig.SignEVM(o.key, msg), "message": msg,
		}); status != 201 {
			t.Fatalf("create %s = %d %s", name, status, body)
		}
	}
	_, body = call(t, "GET", base+"/agent/info/hooker", key, nil)
	var ag struct{ ID string }
	_ = json.Unmarshal(body, &ag)
	if status, body := call(t, "PUT", base+"/agent/"+ag.ID+"/policy", key, signedPolicy(ag.ID, o)); status != 200 {
		t.Fatalf("policy = %d %s", status, body)
	}
	if status, body := call(t, "POST", base+"/agent/"+ag.ID+"/chat", key, map[string]string{"message": "send 0.001 ETH to hookee"}); status != 200 || !strings.Contains(string(body), "pending_approval") {
		t.Fatalf("chat = %d %s", status, body)
	}
	select {
	case r := <-got:
		b := <-bodies
		var ev struct{ ID, Type, AgentID string }
		_ = json.Unmarshal(b, &ev)
		if ev.Type != "approval_required" || ev.AgentID != ag.ID || r.Header.Get("Veil-Event-Id") != ev.ID || r.URL.Path != "/veil" {
			t.Fatalf("delivery %s %v", b, r.Header)
		}
		ts, v1, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("Veil-Signature"), "t="), ",v1=")
		mac := hmac.New(sha256.New, []byte(hook.Secret))
		mac.Write([]byte(ts + "." + string(b)))
		if hex.EncodeToString(mac.Sum(nil)) != v1 {
			t.Fatalf("signature %q does not check", r.Header.Get("Veil-Signature"))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery within 60 s")
	}
	p.stop(t, syscall.SIGTERM)
}
