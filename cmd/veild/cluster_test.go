package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/postgres"
)

// A three-member cluster on one PostgreSQL and one set of devnets: state is
// the same through every member; under a steady load of chats and payments
// one member is killed with SIGKILL; its agents come back on the others,
// every acknowledged write is there, no payment is made twice, the
// scheduled slot due in the failover runs once, clients see only retriable
// errors; the member rejoins and takes agents back.
func TestClusterOfThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a devnet and three veild members for a few minutes")
	}
	c := newTestCluster(t, 3)
	c.startAll()
	dsn := c.dsn

	// Agents created through different members; the payee receives.
	payee := c.createAgent(0, "c-payee")
	var payers []string
	for i := 0; i < 6; i++ {
		payers = append(payers, c.createAgent(i%3, fmt.Sprintf("c-payer-%d", i)))
	}
	all := append([]string{payee}, payers...)
	// One consistent state: every member answers the same for every agent.
	for _, id := range all {
		var first []byte
		for i := range 3 {
			o := c.do(i, "GET", "/agent/"+id, "", nil)
			if o.status != 200 {
				t.Fatalf("GET agent %s via %d = %d %s", id, i, o.status, o.body)
			}
			if first == nil {
				first = o.body
			} else if !bytes.Equal(first, o.body) {
				t.Fatalf("agent %s differs between members:\n%s\n%s", id, first, o.body)
			}
		}
	}
	// A chat through one member shows in the conversation through another.
	o := c.do(1, "POST", "/agent/"+payers[0]+"/chat", "hello-0", map[string]string{"message": "hello"})
	var cr chatOut
	_ = json.Unmarshal(o.body, &cr)
	if o.status != 200 || cr.ConversationID == "" {
		t.Fatalf("chat = %d %s", o.status, o.body)
	}
	if o = c.do(2, "GET", "/agent/"+payers[0]+"/conversations/"+cr.ConversationID+"/messages", "", nil); o.status != 200 || !strings.Contains(string(o.body), `"hello"`) {
		t.Fatalf("messages via another member = %d %s", o.status, o.body)
	}

	// The victim is the member that hosts the first payer (placement is
	// deterministic given the members' addresses), so it surely hosts an
	// agent under load.
	victim := c.ownerOf(payers[0])
	var victimAgents []string
	for _, id := range all {
		if c.ownerOf(id) == victim {
			victimAgents = append(victimAgents, id)
		}
	}

	// A schedule whose first slot the test makes due during the failover.
	o = c.do(0, "POST", "/agent/"+payers[1]+"/chat", "sched-1", map[string]string{"message": "send 0.001777 SOL to c-payee daily"})
	_ = json.Unmarshal(o.body, &cr)
	if o.status != 200 || len(cr.ToolCalls) != 1 || cr.ToolCalls[0].Name != "schedule_payment" || cr.ToolCalls[0].Status != "success" {
		t.Fatalf("schedule chat = %d %s", o.status, o.body)
	}

	// The load: workers pay the payee with unique amounts and chat, with
	// Idempotency-Keys, through rotating members.
	type ack struct{ amount, agent, conv, text string }
	var (
		acksMu    sync.Mutex
		acks      []ack
		retriable int
		failover  time.Duration
	)
	var killedAt time.Time
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	var seq int64
	var seqMu sync.Mutex
	next := func() int64 { seqMu.Lock(); defer seqMu.Unlock(); seq++; return seq }
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stopLoad:
					return
				default:
				}
				n := next()
				ag := payers[int(n)%len(payers)]
				var a ack
				var msg string
				if n%2 == 0 {
					// Ends in 1, so that the chain's formatting keeps it as is.
					a.amount = fmt.Sprintf("0.00%04d1", n)
					msg = fmt.Sprintf("send %s ETH to c-payee on ethereum", a.amount)
				} else {
					a.text = fmt.Sprintf("note number %d", n)
					msg = a.text
				}
				o := c.do(int(n), "POST", "/agent/"+ag+"/chat", fmt.Sprintf("load-%d", n), map[string]string{"message": msg})
				if o.status != 200 {
					t.Errorf("chat %q = %d %s", msg, o.status, o.body)
					return
				}
				var r chatOut
				_ = json.Unmarshal(o.body, &r)
				if a.amount != "" && (len(r.ToolCalls) != 1 || r.ToolCalls[0].Status != "success") {
					t.Errorf("payment %q: %s", msg, o.body)
					return
				}
				a.agent, a.conv = ag, r.ConversationID
				acksMu.Lock()
				acks = append(acks, a)
				retriable += o.retriable
				acksMu.Unlock()
			}
		}()
	}
	// Let the load run, make the schedule due, then kill the victim.
	waitAcks := func(n int) {
		deadline := time.Now().Add(120 * time.Second)
		for {
			acksMu.Lock()
			got := len(acks)
			acksMu.Unlock()
			if got >= n || t.Failed() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("load stalled at %d acknowledged chats", got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitAcks(12)
	rewindSchedule(t, dsn)
	acksMu.Lock()
	killedAt = time.Now()
	acksMu.Unlock()
	c.kill(victim)
	// Failover: how long until an agent of the dead member answers again.
	for {
		o := c.do(0, "GET", "/agent/"+victimAgents[0]+"/status", "", nil)
		if o.status == 200 {
			acksMu.Lock()
			failover = time.Since(killedAt)
			acksMu.Unlock()
			break
		}
		if t.Failed() {
			return
		}
	}
	waitAcks(40)
	close(stopLoad)
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("%d chats acknowledged; %d retriable failures seen by clients; first answer from a moved agent %v after the kill", len(acks), retriable, failover)

	// Every acknowledged write is there, through any member.
	for i, a := range acks {
		if a.text == "" {
			continue
		}
		o := c.do(i, "GET", "/agent/"+a.agent+"/conversations/"+a.conv+"/messages", "", nil)
		if o.status != 200 || !strings.Contains(string(o.body), a.text) {
			t.Fatalf("acknowledged message %q missing from %s/%s: %d %s", a.text, a.agent, a.conv, o.status, o.body)
		}
	}
	// Every acknowledged payment reached the payee once, and nothing
	// reached it twice: amounts are unique per payment.
	paid := map[string]int{}
	for _, a := range acks {
		if a.amount != "" {
			paid[a.amount] = 0
		}
	}
	scheduled := 0
	deadline := time.Now().Add(90 * time.Second)
	for {
		o := c.do(0, "GET", "/agent/"+payee+"/notifications", "", nil)
		var inbox struct {
			Notifications []struct{ Type, Body string }
		}
		_ = json.Unmarshal(o.body, &inbox)
		counts := map[string]int{}
		scheduled = 0
		for _, n := range inbox.Notifications {
			if n.Type != "payment_received" {
				continue
			}
			if strings.HasPrefix(n.Body, "0.001777 SOL ") {
				scheduled++
				continue
			}
			for amount := range paid {
				if strings.HasPrefix(n.Body, amount+" ETH ") {
					counts[amount]++
				}
			}
		}
		for amount, n := range counts {
			if n > 1 {
				t.Fatalf("payment of %s ETH reached the payee %d times", amount, n)
			}
		}
		if scheduled > 1 {
			t.Fatalf("the scheduled slot ran %d times", scheduled)
		}
		missing := 0
		for amount := range paid {
			if counts[amount] == 0 {
				missing++
			}
		}
		if missing == 0 && scheduled == 1 {
			break
		}
		if time.Now().After(deadline) {
			for _, m := range c.live() {
				for _, line := range strings.Split(m.logs.String(), "\n") {
					if strings.Contains(line, "schedule") || strings.Contains(line, "reminder") || strings.Contains(line, "lease") {
						t.Logf("member %d: %s", m.i, line)
					}
				}
			}
			sch := c.do(0, "GET", "/agent/"+payers[1]+"/schedules", "", nil)
			t.Logf("schedules: %s", sch.body)
			pn := c.do(0, "GET", "/agent/"+payers[1]+"/notifications", "", nil)
			t.Logf("payer notes: %s", pn.body)
			for _, n := range inbox.Notifications {
				if strings.Contains(n.Body, "SOL") {
					t.Logf("payee note: %s", n.Body)
				}
			}
			t.Fatalf("%d of %d acknowledged payments never reached the payee; scheduled slot ran %d times (want 1)", missing, len(paid), scheduled)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// The victim rejoins at its address and takes its agents back:
	// requests for them activate them there, and every member answers for
	// every agent.
	back := c.revive(victim)
	for _, id := range victimAgents {
		if c.ownerOf(id) != victim {
			t.Fatalf("agent %s is not placed on the rejoined member", id)
		}
	}
	if _, err := c.waitHealed(all, 120*time.Second); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, back.metrics)
	f := fams["veil_runtime_activations_total"]
	if f == nil || len(f.Metric) == 0 || f.Metric[0].GetCounter().GetValue() == 0 {
		t.Fatalf("the rejoined member activated no agent")
	}
	c.stopAll()
}

// rewindSchedule makes the one active schedule due now, as if its
// interval had passed, in the cluster's shared store.
func rewindSchedule(t *testing.T, dsn string) {
	t.Helper()
	if n := rewindClusterSchedules(t, dsn); n != 1 {
		t.Fatalf("rewound %d schedules, want 1", n)
	}
}

// rewindClusterSchedules makes every active schedule due now and says how many
// it rewound.
func rewindClusterSchedules(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.List(ctx, state.TableSchedules, persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	n := 0
	for _, r := range recs {
		var sc tools.Schedule
		if err := json.Unmarshal(r.Value, &sc); err != nil {
			t.Fatal(err)
		}
		if sc.Status != state.ScheduleActive || !sc.NextRun.After(now) {
			continue
		}
		agentID, _, _ := strings.Cut(r.Key, "/")
		old := sc.NextRun
		sc.NextRun = now
		raw, _ := json.Marshal(sc)
		if _, err := st.Apply(ctx,
			persistence.Delete(state.TableScheduleDue, state.DueKey(old, agentID, sc.ID), persistence.AtVersion(1)),
			persistence.Put(state.TableScheduleDue, state.DueKey(now, agentID, sc.ID), []byte(r.Key), persistence.Absent()),
			persistence.Put(state.TableSchedules, r.Key, raw, persistence.AtVersion(r.Version)),
		); err != nil {
			t.Fatalf("rewind %s: %v", r.Key, err)
		}
		n++
	}
	return n
}
