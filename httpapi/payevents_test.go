package httpapi_test

import (
	"bufio"
	"context"
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
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

// When an open payment settles, a webhook receiver (real HTTP) and the
// notification stream each see exactly one payment.confirmed or
// payment.failed naming the record, however often the settlement is
// delivered; the failure's notification is payment_failed (issue 32
// item 3).
func TestPaymentEventsOnWebhookAndStream(t *testing.T) {
	e := newEnv(t, envOptions{webhookAllowPrivate: true})
	alice := e.create(t, newEVMOwner(t), "settler", "ethereum")
	ctx := context.Background()

	if r := e.do("POST", "/webhooks", e.key, map[string]any{"url": "http://127.0.0.1:9/x", "events": []string{"payment.bogus"}}); r.status != 400 || !strings.Contains(string(r.body), "payment.confirmed") {
		t.Fatalf("unknown event: %d %s", r.status, r.body)
	}
	var mu sync.Mutex
	var bodies [][]byte
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer rcv.Close()
	events := []string{client.EventPaymentConfirmed, client.EventPaymentFailed, agent.NotePaymentFailed}
	if r := e.do("POST", "/webhooks", e.key, map[string]any{"url": rcv.URL + "/in", "events": events}); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}

	// The stream is up before anything settles.
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, "GET", e.url+"/agent/"+alice.ID+"/notifications/stream", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)

	out := state.NewOutgoing(e.store, alice.ID, nil)
	open := func(key, amount string) tools.OutgoingPayment {
		t.Helper()
		amt, err := chains.ParseAmountOf(amount, 18)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := out.Open(ctx, tools.OutgoingPayment{Kind: tools.KindSendPayment, Source: tools.PaymentSource{Type: tools.SourceMCP},
			Chain: chains.Ethereum, Asset: "ETH", Amount: amt,
			Recipient: tools.PaymentRecipient{Name: "bob.veil", Address: "st:eth:0xabc"}, IdempotencyKey: key})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	ok, bad := open("k-ok", "0.001"), open("k-bad", "0.002")
	settle := func(rec tools.OutgoingPayment, status chains.SettlementStatus) {
		t.Helper()
		s := chains.Settlement{Chain: chains.Ethereum, IdempotencyKey: rec.IdempotencyKey, AgentID: alice.ID, Op: "send",
			TxHash: "0x" + rec.IdempotencyKey, Status: status, Confirmations: 1, Reason: "reverted"}
		for range 2 { // delivered twice: told once
			if _, err := e.host.Request(ctx, alice.ID, &agent.PaymentSettled{Settlement: s}); err != nil {
				t.Fatal(err)
			}
		}
	}
	settle(ok, chains.SettlementConfirmed)
	settle(bad, chains.SettlementFailed)
	if _, err := e.host.Request(ctx, alice.ID, &agent.Notify{Type: agent.NoteInvoicePaid, Title: "end"}); err != nil {
		t.Fatal(err)
	}

	// The stream, up to the marker: each event once, in id order.
	type frame struct {
		id, event string
		data      client.PaymentEvent
	}
	var frames []frame
	var f frame
	for done := false; !done; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("read stream: %v (so far %+v)", err, frames)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			f.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			f.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &f.data); err != nil {
				t.Fatal(err)
			}
		case line == "" && f.event != "":
			frames = append(frames, f)
			done = f.data.Title == "end"
			f = frame{}
		}
	}
	count := map[string]int{}
	var got []string
	for _, f := range frames {
		got = append(got, f.event+":"+f.data.Type)
		count[f.event]++
		switch f.event {
		case client.EventPaymentConfirmed:
			if f.data.Payment.ID != ok.ID || f.data.Payment.Status != "confirmed" || f.data.Payment.TxHash != "0xk-ok" {
				t.Fatalf("confirmed event %+v", f.data)
			}
		case client.EventPaymentFailed:
			if f.data.Payment.ID != bad.ID || f.data.Payment.Status != "failed" || !strings.Contains(f.data.Body, "reverted") {
				t.Fatalf("failed event %+v", f.data)
			}
		}
	}
	// Each was pending (its outcome unknown): the confirmed one gets
	// payment_sent and its event, the failed one payment_failed and its event.
	want := "notification:payment_sent payment.confirmed:payment.confirmed notification:payment_failed payment.failed:payment.failed notification:invoice_paid"
	if strings.Join(got, " ") != want {
		t.Fatalf("stream frames %q, want %q", strings.Join(got, " "), want)
	}

	// The webhook: one delivery of each subscribed event.
	rep, err := webhook.NewDeliverer(webhook.Options{Store: e.store, AllowPrivate: true}).RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var types []string
	for _, b := range bodies {
		var p struct {
			Type string              `json:"type"`
			Data client.PaymentEvent `json:"data"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		types = append(types, p.Type+":"+p.Data.Payment.ID)
	}
	wantHooks := map[string]bool{"payment.confirmed:" + ok.ID: true, "payment.failed:" + bad.ID: true, "payment_failed:": true}
	if len(types) != 3 || rep.Delivered != 3 {
		t.Fatalf("deliveries %q (%+v); want one of each of %v", types, rep, wantHooks)
	}
	for _, ty := range types {
		if !wantHooks[ty] {
			t.Fatalf("delivery %q; want one of each of %v", ty, wantHooks)
		}
		delete(wantHooks, ty)
	}
}
