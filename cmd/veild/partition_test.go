package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
)

// clusterLoad is the traffic the fault tests run under: chats that pay
// the payee (unique amounts) or write a note, with Idempotency-Keys and
// retries across members; and payments without an Idempotency-Key, sent
// once, whose callers never retry.
type clusterLoad struct {
	c      *testCluster
	payers []string
	payees []payee
	stop   chan struct{}
	wg     sync.WaitGroup

	mu        sync.Mutex
	seq       int
	acks      []ack
	once      []onceCall
	retriable int
}

// payee is an agent the load pays. The load spreads its payments over
// several, because an agent keeps at most agent.InboxCap notifications
// and the checks read the payments from the payees' inboxes: one payee
// would lose the oldest once a run on a fast machine paid it more often.
type payee struct{ id, name string }

type ack struct{ amount, payee, agent, conv, text string }

// onceCall is a payment without Idempotency-Key: acknowledged, or failed
// at a time after which it must not run.
type onceCall struct {
	agent, amount, payee, text string
	ok                         bool
	failedAt                   time.Time
	status                     int
}

func startLoad(c *testCluster, payers []string, payees []payee, workers int) *clusterLoad {
	l := &clusterLoad{c: c, payers: payers, payees: payees, stop: make(chan struct{})}
	for range workers {
		l.wg.Add(1)
		go l.idempotent()
	}
	l.wg.Add(1)
	go l.withoutKey()
	return l
}

func (l *clusterLoad) next() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

func (l *clusterLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *clusterLoad) idempotent() {
	defer l.wg.Done()
	for !l.stopped() && !l.c.t.Failed() {
		n := l.next()
		ag := l.payers[n%len(l.payers)]
		var a ack
		var msg string
		if n%2 == 0 {
			// Ends in 1, so that the chain's formatting keeps it as is.
			a.amount = fmt.Sprintf("0.00%04d1", n)
			to := l.payees[n%len(l.payees)]
			a.payee = to.id
			msg = fmt.Sprintf("send %s ETH to %s on ethereum", a.amount, to.name)
		} else {
			a.text = fmt.Sprintf("note number %d", n)
			msg = a.text
		}
		o := l.c.do(n, "POST", "/agent/"+ag+"/chat", fmt.Sprintf("load-%d", n), map[string]string{"message": msg})
		if o.status != 200 {
			l.c.t.Errorf("chat %q = %d %s", msg, o.status, o.body)
			return
		}
		var r chatOut
		_ = json.Unmarshal(o.body, &r)
		if a.amount != "" && (len(r.ToolCalls) != 1 || r.ToolCalls[0].Status != "success") {
			l.c.t.Errorf("payment %q: %s", msg, o.body)
			return
		}
		a.agent, a.conv = ag, r.ConversationID
		l.mu.Lock()
		l.acks = append(l.acks, a)
		l.retriable += o.retriable
		l.mu.Unlock()
	}
}

func (l *clusterLoad) withoutKey() {
	defer l.wg.Done()
	for !l.stopped() && !l.c.t.Failed() {
		n := l.next()
		ag := l.payers[n%len(l.payers)]
		to := l.payees[n%len(l.payees)]
		call := onceCall{agent: ag, amount: fmt.Sprintf("0.00%04d3", n), payee: to.id}
		call.text = fmt.Sprintf("send %s ETH to %s on ethereum", call.amount, to.name)
		o := l.c.once(n, "POST", "/agent/"+ag+"/chat", map[string]string{"message": call.text})
		call.status = o.status
		switch {
		case o.status == 200:
			var r chatOut
			_ = json.Unmarshal(o.body, &r)
			call.ok = len(r.ToolCalls) == 1 && r.ToolCalls[0].Status == "success"
			if !call.ok {
				l.c.t.Errorf("payment %q: %s", call.text, o.body)
				return
			}
		case o.retriable > 0:
			call.failedAt = o.failedAt
		default:
			l.c.t.Errorf("payment %q without Idempotency-Key = %d %s", call.text, o.status, o.body)
			return
		}
		l.mu.Lock()
		l.once = append(l.once, call)
		l.mu.Unlock()
		time.Sleep(200 * time.Millisecond) // pacing, so the keyed load dominates
	}
}

// waitAcks waits until n chats were acknowledged since the load began.
func (l *clusterLoad) waitAcks(n int) {
	t := l.c.t
	t.Helper()
	deadline := time.Now().Add(180 * time.Second)
	for {
		l.mu.Lock()
		got := len(l.acks)
		l.mu.Unlock()
		if got >= n || t.Failed() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("load stalled at %d acknowledged chats", got)
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, not timing it
	}
}

func (l *clusterLoad) acked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

func (l *clusterLoad) finish() {
	close(l.stop)
	l.wg.Wait()
}

// A three-member cluster under payment load heals from the faults of
// issue 25: a member stopped with SIGSTOP while requests are in flight to
// it, and a real two-sided partition (member 0 cut from 1 and 2, both
// ways, remoting and health) that both sides survive. After each fault the
// cluster converges to one topology and every member answers every agent
// with 200; at the end every acknowledged write is there, every
// acknowledged payment reached the payee exactly once, a payment sent
// without an Idempotency-Key never twice, and no request ran after its caller
// had been told it failed.
//
// It runs the faults of issues 25 and 37: SIGSTOP for 3 s and, of another
// member, for 10 s, and a 10 s partition (about 2-3 minutes on a loaded
// 2-core machine). Nothing here asserts a duration to the second: every
// wait is for a condition, with a deadline (healDeadline) many times the
// documented bound of a heal, so only a heal that does not come, or comes
// an order of magnitude late, fails it; the times are figures, with where
// they went (healPhases).
func TestClusterHealsAfterPausesAndPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a devnet and three veild members for minutes")
	}
	type pauseFault struct {
		name   string
		payer  int // the fault stops the member that owns this payer
		length time.Duration
	}
	pauses := []pauseFault{{"SIGSTOP 3s", 0, 3 * time.Second}, {"SIGSTOP 10s", 1, 10 * time.Second}}
	cutFor := 10 * time.Second
	c, payees, payers, all, load := startLoadedCluster(t, "p", 4, 6, 3)
	load.waitAcks(6)

	type figure struct {
		fault string
		heal  time.Duration
		note  string
	}
	var figures []figure
	for _, f := range pauses {
		member := c.ownerOf(payers[f.payer])
		before := load.acked()
		c.signal(member, syscall.SIGSTOP)
		// The pause is the fault being tested: its length is the input,
		// not an assertion on timing.
		time.Sleep(f.length)
		c.signal(member, syscall.SIGCONT)
		resumed := time.Now()
		heal, err := c.waitHealed(all, healDeadline)
		if err != nil {
			t.Fatalf("%s of member %d: %v", f.name, member, err)
		}
		figures = append(figures, figure{fault: f.name, heal: heal, note: formatPhases(c.healPhases(resumed, resumed.Add(heal)), heal)})
		t.Logf("%s of member %d: healed %v after SIGCONT", f.name, member, heal)
		load.waitAcks(before + 6) // the load goes on after the fault
	}

	// The partition: member 0 alone on one side. A probe asks member 0
	// directly for every agent while it is cut off, for cutFor and at
	// least until it has refused one (it takes a poll timeout or two to
	// notice; a deadline, not a timing, bounds the wait).
	before := load.acked()
	c.partition(0)
	var refused, answered, failed int
	var firstRefusal string
	cutAt := time.Now()
	client := &http.Client{Timeout: 5 * time.Second}
	for time.Since(cutAt) < cutFor || refused == 0 {
		if time.Since(cutAt) > 120*time.Second {
			t.Fatalf("the minority side never refused a request in 120 s of partition (it answered %d)", answered)
		}
		m := c.member(0)
		for _, id := range all {
			switch st, body := c.get(client, m, "/agent/"+id+"/status"); st {
			case 503:
				if refused == 0 {
					firstRefusal = fmt.Sprintf("%v after the cut: %s", time.Since(cutAt).Round(time.Millisecond), body)
				}
				refused++
			case 200:
				answered++
			default:
				failed++
			}
		}
	}
	cut := time.Since(cutAt)
	c.heal()
	healedCut := time.Now()
	heal, err := c.waitHealed(all, healDeadline)
	if err != nil {
		t.Fatalf("partition of member 0: %v", err)
	}
	name := fmt.Sprintf("partition {0} | {1,2}, %v", cut.Round(time.Second))
	figures = append(figures, figure{fault: name, heal: heal,
		note: fmt.Sprintf("minority answered %d requests, refused %d (503), %d timed out; %s", answered, refused, failed, formatPhases(c.healPhases(healedCut, healedCut.Add(heal)), heal))})
	t.Logf("%s: healed %v after the cut healed; the minority side answered %d status requests (before it noticed), refused %d with 503, %d other; first refusal %s", name, heal, answered, refused, failed, firstRefusal)
	load.waitAcks(before + 6)
	load.finish()
	if t.Failed() {
		return
	}
	c.mu.Lock()
	rejoins := c.rejoins
	c.mu.Unlock()
	t.Logf("%d chats acknowledged, %d retriable failures seen by clients, %d payments without Idempotency-Key (%d failed), %d restarts to rejoin",
		len(load.acks), load.retriable, len(load.once), countFailed(load.once), rejoins)
	for _, f := range figures {
		t.Logf("FIGURE %s: one topology and every agent answering on every member %v after the fault ended. %s", f.fault, f.heal.Round(10*time.Millisecond), f.note)
	}

	checksAt := time.Now()
	checkAcknowledged(t, c, load.acks)
	checkPayments(t, c, payees, load.acks, load.once)
	checkNotRunAfterFailure(t, c, payers, load.once)
	t.Logf("the final checks took %v", time.Since(checksAt).Round(time.Second))
	c.stopAll()
}

func countFailed(calls []onceCall) int {
	n := 0
	for _, c := range calls {
		if !c.ok {
			n++
		}
	}
	return n
}

// checkAcknowledged: every acknowledged note is in its conversation.
func checkAcknowledged(t *testing.T, c *testCluster, acks []ack) {
	t.Helper()
	for i, a := range acks {
		if a.text == "" {
			continue
		}
		o := c.do(i, "GET", "/agent/"+a.agent+"/conversations/"+a.conv+"/messages", "", nil)
		if o.status != 200 || !strings.Contains(string(o.body), a.text) {
			t.Fatalf("acknowledged message %q missing from %s/%s: %d %s", a.text, a.agent, a.conv, o.status, o.body)
		}
	}
}

// checkPayments: every acknowledged payment reached the payee exactly
// once; none (acknowledged or not, with or without a key) twice.
func checkPayments(t *testing.T, c *testCluster, payees []payee, acks []ack, once []onceCall) {
	t.Helper()
	want := map[string]bool{} // payee/amount → must arrive
	for _, a := range acks {
		if a.amount != "" {
			want[a.payee+"/"+a.amount] = true
		}
	}
	for _, o := range once {
		k := o.payee + "/" + o.amount
		want[k] = want[k] || o.ok
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		counts := map[string]int{}
		for _, p := range payees {
			o := c.do(0, "GET", "/agent/"+p.id+"/notifications", "", nil)
			var inbox struct {
				Notifications []struct{ Type, Body string }
			}
			_ = json.Unmarshal(o.body, &inbox)
			if len(inbox.Notifications) >= agent.InboxCap {
				t.Fatalf("payee %s holds %d notifications, the inbox cap: the oldest may be trimmed; spread the load over more payees", p.name, len(inbox.Notifications))
			}
			for _, n := range inbox.Notifications {
				if n.Type != "payment_received" {
					continue
				}
				if amount, _, ok := strings.Cut(n.Body, " ETH "); ok {
					counts[p.id+"/"+amount]++
				}
			}
		}
		missing := 0
		for amount, must := range want {
			if counts[amount] > 1 {
				t.Fatalf("payment %s ETH reached its payee %d times", amount, counts[amount])
			}
			if must && counts[amount] == 0 {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged payments never reached the payee", missing)
		}
		time.Sleep(500 * time.Millisecond) // polling a condition, not timing it
	}
}

// checkNotRunAfterFailure: a payment without Idempotency-Key whose caller
// was told it failed did not start after that answer (its user message,
// stored when the chat starts, is not younger than the failure).
func checkNotRunAfterFailure(t *testing.T, c *testCluster, payers []string, once []onceCall) {
	t.Helper()
	started := map[string]time.Time{} // message text → when stored
	for i, ag := range payers {
		o := c.do(i, "GET", "/agent/"+ag+"/conversations", "", nil)
		var convs []struct{ ID string }
		if err := json.Unmarshal(o.body, &convs); err != nil || o.status != 200 {
			t.Fatalf("conversations of %s: %d %s", ag, o.status, o.body)
		}
		for _, cv := range convs {
			o := c.do(i, "GET", "/agent/"+ag+"/conversations/"+cv.ID+"/messages", "", nil)
			var msgs []struct {
				Role, Text string
				CreatedAt  time.Time
			}
			_ = json.Unmarshal(o.body, &msgs)
			for _, m := range msgs {
				if m.Role == "user" {
					started[m.Text] = m.CreatedAt
				}
			}
		}
	}
	for _, call := range once {
		if call.ok {
			continue
		}
		if at, ran := started[call.text]; ran && at.After(call.failedAt) {
			t.Errorf("%q started at %v, after its caller was told it failed (%d) at %v", call.text, at, call.status, call.failedAt)
		}
	}
}
