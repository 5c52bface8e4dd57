package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/internal/faultproxy"
	"github.com/veilhq/veil/runtime/cluster"
)

// The cluster tests run `veild serve --cluster` processes from the built
// binary. No port is ever picked by the test and handed to a child: every
// member binds port 0 itself on its own loopback address (127.0.0.11,
// .12, ...) and logs what it bound ("cluster member listening"), and the
// others reach it through proxies the test binds and keeps for the whole
// test (internal/faultproxy). So a restarted member is reached at the same
// addresses, and the proxies can cut links to make partitions:
//
//   - rp[i] is member i's remoting as every member dials it (its
//     --cluster-advertise-addr, its identity in placement); it tells the
//     dialing member by the source address of the connection;
//   - hp[j][i] is member i's health endpoint as member j polls it (j's
//     --cluster-seeds), one per link, so health can be cut one way.

var memberListeningRE = regexp.MustCompile(`msg="cluster member listening" .*listen=(\S+) health=(\S+)`)

// member is one veild process of the test cluster.
type member struct {
	i       int
	cmd     *exec.Cmd
	addr    string // HTTP API
	metrics string
	health  string // its own health endpoint (direct)
	stdout  *lockedBuffer
	logs    *lockedBuffer
	exited  chan struct{}
	code    int // exit code once exited
}

type testCluster struct {
	t      *testing.T
	dir    string
	dsn    string
	chains string
	key    string
	n      int
	hp     [][]*faultproxy.Proxy
	rp     []*faultproxy.Proxy
	// extra are more flags for every member's veild serve (set before
	// startAll).
	extra []string

	mu       sync.Mutex
	members  []*member
	dead     []bool // killed by the test: not restarted, not routed to
	stopping bool
	rejoins  int // restarts after exit 75
	// bins[i], when set, is the veild binary member i runs (the rolling
	// upgrade test mixes releases); veildBin otherwise.
	bins []string
	// timeline holds the members' heal milestones (healphases_test.go).
	timeline []timelineEntry
}

func memberIP(i int) string { return fmt.Sprintf("127.0.0.%d", 11+i) }

// newTestCluster prepares n member slots on a fresh database and devnet.
func newTestCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	dir := t.TempDir()
	c := &testCluster{t: t, dir: dir, dsn: freshDB(t), chains: filepath.Join(dir, "chains.json"), n: n,
		members: make([]*member, n), dead: make([]bool, n)}
	startDevnet(t, filepath.Join(dir, "devnet"), c.chains)
	var root [32]byte
	_, _ = rand.Read(root[:])
	t.Setenv("VEIL_ENCLAVE_ROOT", hex.EncodeToString(root[:]))
	listen := func() *faultproxy.Proxy {
		p, err := faultproxy.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	c.hp = make([][]*faultproxy.Proxy, n)
	c.rp = make([]*faultproxy.Proxy, n)
	for j := range n {
		c.rp[j] = listen()
		c.hp[j] = make([]*faultproxy.Proxy, n)
		for i := range n {
			c.hp[j][i] = listen()
		}
	}
	t.Cleanup(func() {
		c.mu.Lock()
		c.stopping = true
		ms := slices.Clone(c.members)
		c.mu.Unlock()
		for _, m := range ms {
			if m != nil {
				_ = m.cmd.Process.Kill()
				<-m.exited
			}
		}
	})
	return c
}

// startAll starts every member and waits until each sees all of them.
func (c *testCluster) startAll() {
	c.t.Helper()
	for i := range c.n {
		if _, err := c.start(i); err != nil {
			c.t.Fatal(err)
		}
	}
	c.key = keyRE.FindString(c.member(0).stdout.String())
	if c.key == "" {
		c.t.Fatalf("the first member printed no bootstrap key: %s", c.member(0).stdout)
	}
	for _, m := range c.live()[1:] {
		if keyRE.MatchString(m.stdout.String()) {
			c.t.Fatalf("member %d printed a second bootstrap key: the store is not shared", m.i)
		}
	}
	if _, err := c.waitHealed(nil, 120*time.Second); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testCluster) member(i int) *member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i]
}

// start runs member i (again) and returns once it serves HTTP. A member
// that exits with status 75 (it restarts to rejoin the cluster) is started
// again, as its supervisor would.
func (c *testCluster) start(i int) (*member, error) {
	seeds := make([]string, c.n)
	for k := range c.n {
		seeds[k] = c.hp[i][k].Addr()
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--shutdown-grace", "5s", "--metrics-addr", "127.0.0.1:0",
		"--store", "postgres", "--postgres-dsn", c.dsn, "--chains-config", c.chains, "--rate-limit", "0",
		"--cluster", "--cluster-seeds", strings.Join(seeds, ","), "--cluster-size", fmt.Sprint(c.n),
		"--cluster-addr", memberIP(i) + ":0", "--cluster-advertise-addr", c.rp[i].Addr(),
		"--cluster-health-addr", memberIP(i) + ":0", "--cluster-health-advertise-addr", c.hp[i][i].Addr()}
	args = append(args, c.extra...)
	bin := veildBin
	c.mu.Lock()
	if i < len(c.bins) && c.bins[i] != "" {
		bin = c.bins[i]
	}
	c.mu.Unlock()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "VEIL_DATA="+filepath.Join(c.dir, fmt.Sprintf("m%d", i)))
	m := &member{i: i, cmd: cmd, stdout: &lockedBuffer{}, logs: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stdout = m.stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	// VEIL_CLUSTER_TEST_LOGS=DIR keeps every member process's log in DIR
	// (m<i>-<pid>.log), also of processes that exited to rejoin, whose
	// logs the test otherwise drops with them.
	var keep io.Writer = io.Discard
	if dir := os.Getenv("VEIL_CLUSTER_TEST_LOGS"); dir != "" {
		if f, err := os.Create(filepath.Join(dir, fmt.Sprintf("m%d-%d.log", i, cmd.Process.Pid))); err == nil {
			defer func() { go func() { <-m.exited; f.Close() }() }()
			keep = f
		}
	}
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		served := false
		for sc.Scan() {
			line := sc.Text()
			_, _ = m.logs.Write([]byte(line + "\n"))
			_, _ = io.WriteString(keep, line+"\n")
			c.noteLine(i, line)
			if sub := memberListeningRE.FindStringSubmatch(line); sub != nil {
				// Remoting first: the others learn of the member through
				// its health endpoint, and must then reach it.
				c.rp[i].SetTarget(sub[1])
				for j := range c.n {
					c.hp[j][i].SetTarget(sub[2])
				}
				m.health = sub[2]
			}
			if sub := metricsRE.FindStringSubmatch(line); sub != nil {
				m.metrics = sub[1]
			}
			if sub := servingRE.FindStringSubmatch(line); sub != nil && !served {
				m.addr = sub[1]
				served = true
				close(ready)
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			m.code = ee.ExitCode()
		}
		close(m.exited)
		c.mu.Lock()
		again := !c.stopping && !c.dead[i] && m.code == exitRejoin && c.members[i] == m
		if again {
			c.rejoins++
			c.timeline = append(c.timeline, timelineEntry{at: time.Now(), member: i, line: "exited to rejoin"})
		}
		c.mu.Unlock()
		if again {
			if _, err := c.start(i); err != nil {
				c.t.Errorf("restart member %d to rejoin: %v", i, err)
			}
		}
	}()
	select {
	case <-ready:
		// The bootstrap key and "Serving the API" reach stdout before the
		// serving log line, but through another pipe: wait for them.
		printed := func() bool { return strings.Contains(m.stdout.String(), "Serving the API on") }
		if bin != veildBin {
			// An earlier release (the upgrade test) prints only the
			// key, and only the first member of a fresh store does.
			printed = func() bool { return i != 0 || keyRE.MatchString(m.stdout.String()) }
		}
		for deadline := time.Now().Add(30 * time.Second); !printed() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond) // polling a condition, not timing it
		}
	case <-m.exited:
		return nil, fmt.Errorf("member %d exited (%d) before serving:\n%s", i, m.code, m.logs)
	case <-time.After(120 * time.Second):
		return nil, fmt.Errorf("member %d did not serve within 120s:\n%s", i, m.logs)
	}
	c.mu.Lock()
	c.members[i] = m
	c.mu.Unlock()
	return m, nil
}

// kill sends SIGKILL to member i and keeps it down until start.
func (c *testCluster) kill(i int) {
	c.mu.Lock()
	c.dead[i] = true
	m := c.members[i]
	c.mu.Unlock()
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
}

// revive starts a killed member again.
func (c *testCluster) revive(i int) *member {
	c.t.Helper()
	c.mu.Lock()
	c.dead[i] = false
	c.mu.Unlock()
	m, err := c.start(i)
	if err != nil {
		c.t.Fatal(err)
	}
	return m
}

// signal sends sig to member i's current process.
func (c *testCluster) signal(i int, sig syscall.Signal) {
	_ = c.member(i).cmd.Process.Signal(sig)
}

// live lists the members that run (not killed by the test, not exited).
func (c *testCluster) live() []*member {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*member
	for i, m := range c.members {
		if m == nil || c.dead[i] {
			continue
		}
		select {
		case <-m.exited:
		default:
			out = append(out, m)
		}
	}
	return out
}

// ownerOf is the member index that hosts the agent, as placement computes
// it over the live members' advertised addresses (stable across restarts).
func (c *testCluster) ownerOf(id string) int {
	var addrs []string
	for _, m := range c.live() {
		addrs = append(addrs, c.rp[m.i].Addr())
	}
	want := cluster.Place(addrs, id)
	for i := range c.n {
		if c.rp[i].Addr() == want {
			return i
		}
	}
	return -1
}

// partition cuts every link between the members of side and the others,
// both ways, for remoting and health; heal undoes it.
func (c *testCluster) partition(side ...int) {
	in := func(i int) bool { return slices.Contains(side, i) }
	for to := range c.n {
		for from := range c.n {
			if from != to && in(from) != in(to) {
				c.hp[from][to].CutAll()
			}
		}
		var cut []net.IP
		for from := range c.n {
			if in(from) != in(to) {
				cut = append(cut, net.ParseIP(memberIP(from)))
			}
		}
		c.rp[to].Cut(func(src net.IP) bool {
			return slices.ContainsFunc(cut, src.Equal)
		})
	}
}

func (c *testCluster) heal() {
	for to := range c.n {
		c.rp[to].Heal()
		for from := range c.n {
			c.hp[from][to].Heal()
		}
	}
}

// healthView is what a member's own health endpoint says: its id and the
// ids of its topology.
type healthView struct {
	ID      string   `json:"id"`
	Members []string `json:"veil_members"`
}

// waitHealed waits until all n members run, their health endpoints show
// one topology of all of them, and (for each of agents) every member
// answers its status with 200 by itself. It returns how long that took.
func (c *testCluster) waitHealed(agents []string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(within)
	client := &http.Client{Timeout: 10 * time.Second}
	st := &healState{}
	var why, last string
	for {
		why = c.healed(client, agents, st)
		if why == "" {
			return time.Since(start), nil
		}
		if why != last {
			// What the heal waits for, as it changes: where the time goes.
			c.t.Logf("healing, %v: %s", time.Since(start).Round(10*time.Millisecond), tail(why, 1))
			last = why
		}
		if time.Now().After(deadline) {
			var logs strings.Builder
			for _, m := range c.live() {
				fmt.Fprintf(&logs, "--- member %d:\n%s\n", m.i, tail(m.logs.String(), 40))
			}
			return 0, fmt.Errorf("the cluster did not heal within %v: %s\n%s", within, why, logs.String())
		}
		time.Sleep(100 * time.Millisecond) // polling a condition, not timing it
	}
}

// healState is what waitHealed has seen of one topology: the members
// (by index) that answered each agent with 200 since it formed.
type healState struct {
	topology string
	answered map[string]bool
}

// healed says what the heal still waits for ("" when healed): every member
// runs, all show one topology, and every member has answered every agent
// with 200 by itself since that topology formed. An answer counts once:
// asked again in every round, all at once, on a 2-core machine at load 60
// a round whose 30 answers all came within a client timeout was rare, and
// the check measured the machine's slowness more than the cluster's heal.
func (c *testCluster) healed(client *http.Client, agents []string, st *healState) string {
	live := c.live()
	if len(live) != c.n {
		return fmt.Sprintf("%d of %d members run", len(live), c.n)
	}
	var ids []string
	var views [][]string
	for _, m := range live {
		resp, err := client.Get("http://" + m.health + "/_health")
		if err != nil {
			return fmt.Sprintf("member %d health: %v", m.i, err)
		}
		var v healthView
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return fmt.Sprintf("member %d health: %d %v", m.i, resp.StatusCode, err)
		}
		ids = append(ids, v.ID)
		views = append(views, v.Members)
	}
	slices.Sort(ids)
	for k, v := range views {
		if !slices.Equal(v, ids) {
			return fmt.Sprintf("member %d sees %v, the members are %v", live[k].i, v, ids)
		}
	}
	if topology := strings.Join(ids, ","); topology != st.topology {
		st.topology, st.answered = topology, map[string]bool{}
	}
	// The agents not yet answered, asked at once: read one after the
	// other, the check itself took up to 10 s per request at load 40.
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		bad []string
	)
	slow := &http.Client{Timeout: 30 * time.Second}
	for _, m := range live {
		for _, id := range agents {
			pair := fmt.Sprintf("%d/%s", m.i, id)
			mu.Lock() // the goroutines below write st.answered
			done := st.answered[pair]
			mu.Unlock()
			if done {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, body := c.get(slow, m, "/agent/"+id+"/status")
				mu.Lock()
				defer mu.Unlock()
				if code == 200 {
					st.answered[pair] = true
				} else {
					bad = append(bad, fmt.Sprintf("member %d answers agent %s with %d %s", m.i, id, code, body))
				}
			}()
		}
	}
	wg.Wait()
	slices.Sort(bad)
	if len(bad) > 0 {
		return bad[0]
	}
	return ""
}

// get is one GET through member m, no retry.
func (c *testCluster) get(client *http.Client, m *member, path string) (int, string) {
	req, _ := http.NewRequest("GET", "http://"+m.addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// outcome of one client call.
type outcome struct {
	retriable int // 503s, refused connections and timeouts seen before the answer
	status    int
	body      []byte
	failedAt  time.Time // when the last retriable failure was seen
}

// do sends a request through member via, moving to the next live member
// on a refused connection, a timeout or a 503, with the same
// Idempotency-Key, as a client behind a load balancer does. Any other 5xx
// fails the test.
func (c *testCluster) do(via int, method, path, idem string, body any) outcome {
	return c.call(via, method, path, idem, body, true)
}

// once is do without retries: the first answer or failure is the outcome.
func (c *testCluster) once(via int, method, path string, body any) outcome {
	return c.call(via, method, path, "", body, false)
}

func (c *testCluster) call(via int, method, path, idem string, body any, retry bool) outcome {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	var o outcome
	deadline := time.Now().Add(180 * time.Second)
	for attempt := 0; ; attempt++ {
		members := c.live()
		if len(members) == 0 {
			time.Sleep(100 * time.Millisecond) // every member restarting
			continue
		}
		m := members[(via+attempt)%len(members)]
		req, _ := http.NewRequest(method, "http://"+m.addr+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+c.key)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		o.status = 0
		if err == nil {
			o.status = resp.StatusCode
			o.body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if o.status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				c.t.Errorf("%s %s via member %d: 503 without Retry-After: %s", method, path, m.i, o.body)
			}
		}
		cancel()
		switch {
		case err != nil || o.status == http.StatusServiceUnavailable:
			o.retriable++
			o.failedAt = time.Now()
		case o.status >= 500:
			c.t.Errorf("%s %s via member %d: %d %s (only retriable errors are allowed in failures)", method, path, m.i, o.status, o.body)
			return o
		default:
			return o
		}
		if !retry {
			return o
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%s %s: no answer within 180s (%d retriable failures)", method, path, o.retriable)
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

// stopAll stops the live members with SIGTERM, all at once, and checks
// they exit cleanly: 0, or exitRejoin for a member that found itself
// dropped as the others left (a drain too). One after the other, each
// member's drain (its --shutdown-grace, its lease holds, a pass in flight)
// came on top of the previous one's, and at load 60 on 2 cores a member
// had not stopped 60 s after its SIGTERM.
func (c *testCluster) stopAll() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	live := c.live()
	for _, m := range live {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(180 * time.Second)
	for _, m := range live {
		select {
		case <-m.exited:
			if m.code != 0 && m.code != exitRejoin {
				c.t.Errorf("member %d exited %d on SIGTERM:\n%s", m.i, m.code, tail(m.logs.String(), 30))
			}
		case <-deadline:
			c.t.Errorf("member %d did not stop within 180s of SIGTERM", m.i)
		}
	}
}

// startLoadedCluster starts three members with nPayees payees and nPayers
// payers (named <prefix>-payee-N, <prefix>-payer-N, spread over the
// members) under payment load of workers clients; on failure it logs each
// live member's last lines. all is every agent's id.
func startLoadedCluster(t *testing.T, prefix string, nPayees, nPayers, workers int) (c *testCluster, payees []payee, payers, all []string, ld *clusterLoad) {
	t.Helper()
	c = newTestCluster(t, 3)
	c.startAll()
	for i := range nPayees {
		name := fmt.Sprintf("%s-payee-%d", prefix, i)
		payees = append(payees, payee{id: c.createAgent(i%3, name), name: name})
		all = append(all, payees[i].id)
	}
	for i := range nPayers {
		payers = append(payers, c.createAgent(i%3, fmt.Sprintf("%s-payer-%d", prefix, i)))
	}
	all = append(all, payers...)
	ld = startLoad(c, payers, payees, workers)
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range c.live() {
				t.Logf("--- member %d:\n%s", m.i, tail(m.logs.String(), 60))
			}
		}
	})
	return c, payees, payers, all, ld
}
