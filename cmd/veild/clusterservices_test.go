package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The background services across members (issue 37 item 3), with three
// veild members on one PostgreSQL store:
//
//   - a notification stream on one member sees a notification that
//     another member stored, pushed over the cluster: the members run with
//     --stream-poll 1h, so no poll of the store can deliver it within the
//     test's deadline;
//   - the member holding the webhook deliverer's lease is killed (SIGKILL)
//     while the receiver holds its attempts, right after the schedule
//     reminder began a pass over three due slots: every notification of
//     the account reaches the receiver, signed; only the attempts the
//     receiver held when the member died are made again, once; each
//     scheduled slot pays once, and a payment made while no member ran the
//     deliverer is notified once and delivered.
//
// Nothing asserts a duration: every wait is for a condition, with a
// deadline of minutes; the stream's latency is logged as a figure.
func TestBackgroundServicesAcrossMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a devnet and three veild members")
	}
	rcv := newHookReceiver(t)
	c := newTestCluster(t, 3)
	c.extra = []string{"--webhook-allow-private", "--stream-poll", "1h"}
	c.startAll()
	defer func() {
		if t.Failed() {
			for _, m := range c.live() {
				t.Logf("--- member %d:\n%s", m.i, tail(m.logs.String(), 60))
			}
		}
	}()

	// The webhook first: a webhook gets the notifications stored after it
	// was created.
	o := c.do(0, "POST", "/webhooks", "", map[string]any{"url": rcv.srv.URL + "/veil"})
	if o.status != 201 {
		t.Fatalf("create webhook = %d %s", o.status, o.body)
	}
	var hook struct{ ID, Secret string }
	_ = json.Unmarshal(o.body, &hook)
	rcv.secret = hook.Secret

	payee := c.createAgent(1, "s-payee")
	var payers []string
	for i := range 3 {
		payers = append(payers, c.createAgent(i, fmt.Sprintf("s-payer-%d", i)))
	}
	all := append([]string{payee}, payers...)

	// 1. A stream on a member that does not own the payee sees the
	// payment the owner notifies.
	owner := c.ownerOf(payee)
	via := (owner + 1) % 3
	events, closeStream := c.stream(via, payee)
	pay := func(payer int, amount string) {
		t.Helper()
		o := c.do(owner, "POST", "/agent/"+payers[payer]+"/chat", "s-pay-"+amount,
			map[string]string{"message": fmt.Sprintf("send %s ETH to s-payee on ethereum", amount)})
		var r chatOut
		_ = json.Unmarshal(o.body, &r)
		if o.status != 200 || len(r.ToolCalls) != 1 || r.ToolCalls[0].Status != "success" {
			t.Fatalf("payment of %s ETH = %d %s", amount, o.status, o.body)
		}
	}
	pay(0, "0.0011111")
	timeout := time.After(120 * time.Second) // a deadline for a loaded machine; the poll is 1h
	for seen := false; !seen; {
		select {
		case ev := <-events:
			// Other events of the payee (none are expected) are skipped.
			if seen = ev.note.Type == "payment_received" && strings.HasPrefix(ev.note.Body, "0.0011111 ETH "); seen {
				t.Logf("FIGURE stream: member %d's stream saw member %d's notification %v after it was stored", via, owner, ev.at.Sub(ev.note.CreatedAt).Round(time.Millisecond))
			} else {
				t.Logf("the stream on member %d sent %+v first", via, ev.note)
			}
		case <-timeout:
			t.Fatalf("the stream on member %d never saw the payment member %d notified (no relay: its poll is 1h)", via, owner)
		}
	}
	closeStream()

	// 2. Schedules: one daily payment per payer, made due at once below.
	for i := range payers {
		o := c.do(i, "POST", "/agent/"+payers[i]+"/chat", fmt.Sprintf("s-sched-%d", i),
			map[string]string{"message": fmt.Sprintf("send 0.00177%d SOL to s-payee daily", i+1)})
		var r chatOut
		_ = json.Unmarshal(o.body, &r)
		if o.status != 200 || len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "schedule_payment" || r.ToolCalls[0].Status != "success" {
			t.Fatalf("schedule chat = %d %s", o.status, o.body)
		}
	}
	// Everything so far delivered, so that the attempts held below are
	// those of the pass.
	rcv.waitDelivered(t, c, all, 180*time.Second)

	holder := c.leaseHolder("webhooks")
	reminder := c.leaseHolder("reminder")
	if holder < 0 {
		t.Fatalf("no member logged that it holds the webhooks lease")
	}
	rcv.hold()
	if n := rewindClusterSchedules(t, c.dsn); n != len(payers) {
		t.Fatalf("rewound %d schedules, want %d", n, len(payers))
	}
	var first string
	select {
	case first = <-rcv.held:
	case <-time.After(180 * time.Second):
		t.Fatal("the reminder's pass raised no delivery in 180 s")
	}
	c.kill(holder)
	inFlight := rcv.release()
	t.Logf("killed member %d (the webhooks lease; the reminder's was member %d's) with %d attempts held, the first %s", holder, reminder, len(inFlight), first)

	// A payment while no member runs the deliverer (until a survivor
	// takes the lease over, a TTL after the last renewal).
	live := c.live()[0].i
	o = c.do(live, "POST", "/agent/"+payers[live]+"/chat", "s-pay-late", map[string]string{"message": "send 0.0022221 ETH to s-payee on ethereum"})
	if o.status != 200 {
		t.Fatalf("payment during the takeover = %d %s", o.status, o.body)
	}

	// Every scheduled slot pays once, the late payment is notified once.
	want := map[string]bool{"0.0011111 ETH ": true, "0.0022221 ETH ": true}
	for i := range payers {
		want[fmt.Sprintf("0.00177%d SOL ", i+1)] = true
	}
	deadline := time.Now().Add(180 * time.Second)
	for {
		counts := map[string]int{}
		o := c.do(live, "GET", "/agent/"+payee+"/notifications", "", nil)
		var inbox struct {
			Notifications []struct{ Type, Body string }
		}
		_ = json.Unmarshal(o.body, &inbox)
		for _, n := range inbox.Notifications {
			for prefix := range want {
				if n.Type == "payment_received" && strings.HasPrefix(n.Body, prefix) {
					counts[prefix]++
				}
			}
		}
		missing := 0
		for prefix := range want {
			if counts[prefix] > 1 {
				t.Fatalf("payment %q notified %d times", prefix, counts[prefix])
			}
			if counts[prefix] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d payments never notified: %v", missing, counts)
		}
		time.Sleep(500 * time.Millisecond) // polling a condition, not timing it
	}

	// Every notification of the account delivered, signed; repeated only
	// where the attempt was in flight when its member died, and once.
	rcv.waitDelivered(t, c, all, 180*time.Second)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.badSig) > 0 {
		t.Fatalf("attempts with a signature that does not check: %v", rcv.badSig)
	}
	repeated := 0
	for id, n := range rcv.attempts {
		switch {
		case n > 2:
			t.Fatalf("event %s attempted %d times", id, n)
		case n == 2 && !inFlight[id]:
			t.Fatalf("event %s attempted twice, but its first attempt was not in flight when the deliverer's member died", id)
		case n == 2:
			repeated++
		}
	}
	t.Logf("%d events delivered; %d attempted again after the takeover (of %d in flight at the kill)", len(rcv.attempts), repeated, len(inFlight))
	o = c.do(live, "GET", "/webhooks/"+hook.ID+"/deliveries?limit=100", "", nil)
	var dels []struct{ ID, Status string }
	if err := json.Unmarshal(o.body, &dels); err != nil || len(dels) == 0 {
		t.Fatalf("deliveries = %d %s", o.status, o.body)
	}
	for _, d := range dels {
		if d.Status != "delivered" {
			t.Fatalf("delivery %s is %s: %s", d.ID, d.Status, o.body)
		}
	}
}

// leaseHolder is the live member whose log says it acquired the named
// lease last (-1: none).
func (c *testCluster) leaseHolder(name string) int {
	re := regexp.MustCompile(`msg="lease: acquired; starting its work".* lease=` + regexp.QuoteMeta(name) + `( |$)`)
	lost := regexp.MustCompile(`msg="lease: lost; its work stopped".* lease=` + regexp.QuoteMeta(name) + `( |$)`)
	for _, m := range c.live() {
		held := false
		for _, line := range strings.Split(m.logs.String(), "\n") {
			switch {
			case re.MatchString(line):
				held = true
			case lost.MatchString(line):
				held = false
			}
		}
		if held {
			return m.i
		}
	}
	return -1
}

// streamEvent is one notification a stream sent, and when it came.
type streamEvent struct {
	note struct {
		ID        int64
		Type      string
		Body      string
		CreatedAt time.Time
	}
	at time.Time
}

// stream opens agent's notification stream through member i (from now
// on) and sends its notifications on the channel until closed.
func (c *testCluster) stream(i int, agent string) (<-chan streamEvent, func()) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+c.member(i).addr+"/agent/"+agent+"/notifications/stream", nil)
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		cancel()
		c.t.Fatalf("stream via member %d: %v %v", i, err, resp)
	}
	rd := bufio.NewReader(resp.Body)
	// The first comment says the stream is up: what is stored from now on
	// is sent.
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			cancel()
			c.t.Fatalf("stream via member %d: %v", i, err)
		}
		if line == "\n" {
			break
		}
	}
	out := make(chan streamEvent, 16)
	go func() {
		defer resp.Body.Close()
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				ev := streamEvent{at: time.Now()}
				if json.Unmarshal([]byte(data), &ev.note) == nil {
					select {
					case out <- ev:
					default:
					}
				}
			}
		}
	}()
	return out, cancel
}

// hookReceiver is the webhook receiver: it checks every attempt's
// signature, counts attempts by event, and while holding blocks every
// attempt until released (or its sender dies).
type hookReceiver struct {
	srv    *httptest.Server
	secret string
	held   chan string

	mu        sync.Mutex
	attempts  map[string]int
	delivered map[string]bool // agentId/notification id answered 200
	badSig    []string
	holding   chan struct{} // closed by release; nil: not holding
	inFlight  map[string]bool
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{held: make(chan string, 64), attempts: map[string]int{}, delivered: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	var ev struct {
		ID, AgentID string
		Data        struct{ ID int64 }
	}
	_ = json.Unmarshal(body, &ev)
	ts, v1, _ := strings.Cut(strings.TrimPrefix(req.Header.Get("Veil-Signature"), "t="), ",v1=")
	r.mu.Lock()
	mac := hmac.New(sha256.New, []byte(r.secret))
	mac.Write([]byte(ts + "." + string(body)))
	if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(v1)) || req.Header.Get("Veil-Event-Id") != ev.ID {
		r.badSig = append(r.badSig, ev.ID)
	}
	r.attempts[ev.ID]++
	hold := r.holding
	if hold != nil {
		r.inFlight[ev.ID] = true
	}
	r.mu.Unlock()
	if hold != nil {
		select {
		case r.held <- ev.ID:
		default:
		}
		select {
		case <-hold:
		case <-req.Context().Done():
		}
		return // its sender is dead: the answer goes nowhere
	}
	r.mu.Lock()
	r.delivered[fmt.Sprintf("%s/%d", ev.AgentID, ev.Data.ID)] = true
	r.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// hold makes every attempt from now on wait until release.
func (r *hookReceiver) hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = make(chan struct{})
	r.inFlight = map[string]bool{}
}

// release ends holding and answers which events had attempts held.
func (r *hookReceiver) release() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.holding)
	r.holding = nil
	return r.inFlight
}

// waitDelivered waits until every notification of the agents was
// delivered (answered 200) at least once.
func (r *hookReceiver) waitDelivered(t *testing.T, c *testCluster, agents []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var missing []string
		for _, id := range agents {
			o := c.do(c.live()[0].i, "GET", "/agent/"+id+"/notifications", "", nil)
			var inbox struct {
				Notifications []struct {
					ID   int64
					Type string
				}
			}
			if err := json.Unmarshal(o.body, &inbox); err != nil || o.status != 200 {
				t.Fatalf("notifications of %s = %d %s", id, o.status, o.body)
			}
			r.mu.Lock()
			for _, n := range inbox.Notifications {
				if !r.delivered[fmt.Sprintf("%s/%d", id, n.ID)] {
					missing = append(missing, fmt.Sprintf("%s/%d %s", id, n.ID, n.Type))
				}
			}
			r.mu.Unlock()
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications never delivered to the webhook: %v", len(missing), missing)
		}
		time.Sleep(500 * time.Millisecond) // polling a condition, not timing it
	}
}
