package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/postgres"
	"github.com/veilhq/veil/runtime/cluster"
)

var memberAddrRE = regexp.MustCompile(`msg="cluster member started" .*address=(\S+)`)
var topologyRE = regexp.MustCompile(`msg="cluster topology changed" .*members=(\d+) `)

// member is one veild of the test cluster, with its log followed.
type member struct {
	*proc
	i      int
	remote string // its remoting address, what placement hashes
	logs   *lockedBuffer
	dead   bool
}

type testCluster struct {
	t       *testing.T
	dir     string
	dsn     string
	chains  string
	seeds   []string
	remotes []string
	key     string
	mu      sync.Mutex
	members []*member
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs member i (again, after a kill) on its data directory.
func (c *testCluster) start(i int) *member {
	c.t.Helper()
	p := start(c.t, filepath.Join(c.dir, fmt.Sprintf("m%d", i)),
		"--store", "postgres", "--postgres-dsn", c.dsn, "--chains-config", c.chains,
		"--cluster", "--cluster-seeds", strings.Join(c.seeds, ","), "--cluster-health-addr", c.seeds[i], "--cluster-addr", c.remotes[i],
		"--rate-limit", "0")
	m := &member{proc: p, i: i, logs: &lockedBuffer{}}
	_, _ = m.logs.Write(p.stderr.all.Bytes())
	go func() {
		for line := range p.stderr.lines {
			_, _ = m.logs.Write([]byte(line + "\n"))
		}
	}()
	sub := memberAddrRE.FindStringSubmatch(m.logs.String())
	if sub == nil {
		c.t.Fatalf("member %d did not log its cluster address:\n%s", i, m.logs)
	}
	m.remote = sub[1]
	c.mu.Lock()
	for len(c.members) <= i {
		c.members = append(c.members, nil)
	}
	c.members[i] = m
	c.mu.Unlock()
	return m
}

// waitTopology waits until every live member has logged a topology of n.
func (c *testCluster) waitTopology(n int) {
	c.t.Helper()
	want := fmt.Sprint(n)
	deadline := time.Now().Add(60 * time.Second)
	for _, m := range c.live() {
		for {
			all := topologyRE.FindAllStringSubmatch(m.logs.String(), -1)
			if len(all) > 0 && all[len(all)-1][1] == want {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("member %d never saw %d members:\n%s", m.i, n, m.logs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (c *testCluster) live() []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*member
	for _, m := range c.members {
		if m != nil && !m.dead {
			out = append(out, m)
		}
	}
	return out
}

// ownerOf is the member that hosts the agent, as placement computes it.
func (c *testCluster) ownerOf(id string) *member {
	live := c.live()
	addrs := make([]string, len(live))
	for i, m := range live {
		addrs[i] = m.remote
	}
	want := cluster.Place(addrs, id)
	for _, m := range live {
		if m.remote == want {
			return m
		}
	}
	return nil
}

// outcome of one client call, for the failover report.
type outcome struct {
	retriable int // 503s and refused connections seen before the answer
	status    int
	body      []byte
}

// do sends a request through member via, moving to the next live member
// on a refused connection or a 503, with the same Idempotency-Key, as a
// client behind a load balancer does. Any other 5xx fails the test.
func (c *testCluster) do(via int, method, path, idem string, body any) outcome {
	c.t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	var o outcome
	deadline := time.Now().Add(90 * time.Second)
	for attempt := 0; ; attempt++ {
		members := c.live()
		m := members[(via+attempt)%len(members)]
		req, _ := http.NewRequest(method, "http://"+m.addr+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+c.key)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err == nil {
			o.status = resp.StatusCode
			o.body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		cancel()
		switch {
		case err != nil || o.status == http.StatusServiceUnavailable:
			o.retriable++
		case o.status >= 500:
			c.t.Errorf("%s %s via member %d: %d %s (only retriable errors are allowed during failover)", method, path, m.i, o.status, o.body)
			return o
		default:
			return o
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%s %s: no answer within 90s (%d retriable failures)", method, path, o.retriable)
			o.status = 0
			return o
		}
		time.Sleep(100 * time.Millisecond) // client back-off between retries
	}
}

func (c *testCluster) createAgent(via int, name string) string {
	c.t.Helper()
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage(name, "all", wallet, time.Now())
	o := c.do(via, "POST", "/agent/create", "", map[string]string{
		"name": name, "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
	})
	if o.status != 201 {
		c.t.Fatalf("create %s = %d %s", name, o.status, o.body)
	}
	var ag struct{ ID string }
	_ = json.Unmarshal(o.body, &ag)
	return ag.ID
}

type chatOut struct {
	Response       string
	ConversationID string
	ToolCalls      []struct{ Name, Status, Detail string }
}

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
	dsn := freshDB(t)
	dir := t.TempDir()
	c := &testCluster{t: t, dir: dir, dsn: dsn, chains: filepath.Join(dir, "chains.json")}
	startDevnet(t, filepath.Join(dir, "devnet"), c.chains)
	var root [32]byte
	_, _ = rand.Read(root[:])
	t.Setenv("VEIL_ENCLAVE_ROOT", hex.EncodeToString(root[:]))
	c.seeds = []string{freePort(t), freePort(t), freePort(t)}
	// Fixed remoting addresses: a member that rejoins at its address owns
	// the same agents again.
	c.remotes = []string{freePort(t), freePort(t), freePort(t)}

	m0 := c.start(0)
	c.key = keyRE.FindString(m0.stdout.String())
	if c.key == "" {
		t.Fatalf("the first member printed no bootstrap key: %s", m0.stdout)
	}
	c.start(1)
	c.start(2)
	c.waitTopology(3)
	for _, m := range c.live()[1:] {
		if keyRE.MatchString(m.stdout.String()) {
			t.Fatalf("member %d printed a second bootstrap key: the store is not shared", m.i)
		}
	}

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

	// The victim: the member that hosts the payee and some payers would be
	// ideal, but placement decides; kill member 2 whatever it hosts, and
	// make sure it hosts at least one agent under load.
	victim := c.members[2]
	var victimAgents []string
	for _, id := range all {
		if c.ownerOf(id) == victim {
			victimAgents = append(victimAgents, id)
		}
	}
	if len(victimAgents) == 0 {
		t.Fatalf("member 2 hosts none of %d agents; placement is not spreading", len(all))
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
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	acksMu.Lock()
	killedAt = time.Now()
	acksMu.Unlock()
	c.mu.Lock()
	victim.dead = true
	c.mu.Unlock()
	_ = victim.cmd.Wait()
	// Failover: how long until an agent of the dead member answers again.
	for {
		o := c.do(0, "GET", "/agent/"+victimAgents[0]+"/status", "", nil)
		if o.status == 200 {
			failover = time.Since(killedAt)
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
	c.waitTopology(2)
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
			for _, m := range c.members {
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
	// requests for them activate them there.
	back := c.start(2)
	c.waitTopology(3)
	for _, id := range victimAgents {
		if c.ownerOf(id) != back {
			t.Fatalf("agent %s is not placed on the rejoined member", id)
		}
	}
	for i, id := range all {
		if o := c.do(i, "GET", "/agent/"+id+"/status", "", nil); o.status != 200 {
			t.Fatalf("status of %s after rejoin = %d %s", id, o.status, o.body)
		}
	}
	fams := scrape(t, back.metrics)
	f := fams["veil_runtime_activations_total"]
	if f == nil || len(f.Metric) == 0 || f.Metric[0].GetCounter().GetValue() == 0 {
		t.Fatalf("the rejoined member activated no agent")
	}
	for _, m := range c.live() {
		m.stop(t, syscall.SIGTERM)
	}
}

// rewindSchedule makes every active schedule due now, as if its interval
// had passed, in the cluster's shared store.
func rewindSchedule(t *testing.T, dsn string) {
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
	if n != 1 {
		t.Fatalf("rewound %d schedules, want 1", n)
	}
}
