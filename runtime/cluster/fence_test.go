package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/internal/faultproxy"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/host"
)

// counter is an agent that counts its requests in the store, with a
// version-conditional write, as the real agents do.
type counter struct {
	id      string
	store   persistence.Store
	version uint64
}

func (c *counter) Receive(ctx context.Context, _ any) (any, error) {
	expect := persistence.Absent()
	if c.version > 0 {
		expect = persistence.AtVersion(c.version)
	}
	vs, err := c.store.Apply(ctx, persistence.Put("counters", c.id, []byte("x"), expect))
	if err != nil {
		return nil, err
	}
	c.version = vs[0]
	return c.version, nil
}

func openBolt(t *testing.T) persistence.Store {
	t.Helper()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "s.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Two activations of one agent (two members that both think they own it):
// the later one takes the ownership epoch, and the earlier one can neither
// start a request nor write; its error is host.ErrStale, not a conflict
// that agent code could mistake for one of its own.
func TestStaleActivationIsFencedByItsEpoch(t *testing.T) {
	st := openBolt(t)
	ctx := context.Background()
	load := func(member string) host.Loader {
		return cluster.FencedLoader(st, func() string { return member }, func(s persistence.Store) host.Loader {
			return func(ctx context.Context, id string) (host.Agent, error) {
				rec, err := st.Get(ctx, "counters", id)
				c := &counter{id: id, store: s}
				if err == nil {
					c.version = rec.Version
				}
				return c, nil
			}
		})
	}
	old, err := load("a")(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Receive(ctx, nil); err != nil {
		t.Fatalf("the only activation: %v", err)
	}
	fresh, err := load("b")(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := fresh.Receive(ctx, nil); err != nil || v.(uint64) != 2 {
		t.Fatalf("the new owner: %v %v", v, err)
	}
	_, err = old.Receive(ctx, nil)
	if !errors.Is(err, host.ErrStale) || errors.Is(err, persistence.ErrConflict) {
		t.Fatalf("the stale activation: %v, want host.ErrStale and no persistence conflict", err)
	}
	rec, err := st.Get(ctx, "counters", "agent-1")
	if err != nil || rec.Version != 2 {
		t.Fatalf("counter at version %d (%v), want 2: the stale write must not land", rec.Version, err)
	}
}

// A member that sees fewer than a majority of the configured members
// refuses agent requests (retriably, unprocessed) and passivates its agents.
func TestMinorityMemberIsFencedAndPassivatesItsAgents(t *testing.T) {
	nodes, _, _ := startCluster(t, 3)
	lone := nodes[2]
	var ids []string
	for i := 0; len(ids) < 3; i++ {
		id := fmt.Sprintf("f-%d", i)
		if lone.member.Owner(id) == lone.member.Self() {
			ids = append(ids, id)
			ping(t, lone, id)
		}
	}
	if lone.host.Active() == 0 {
		t.Fatal("no agent active on the member before the test")
	}
	nodes[0].kill()
	nodes[1].kill()
	deadline := time.Now().Add(60 * time.Second)
	for lone.member.Fenced() == "" || lone.host.Active() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("alone of 3: fenced %q, %d agents active; want fenced and none", lone.member.Fenced(), lone.host.Active())
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing it
	}
	_, err := lone.member.Request(context.Background(), ids[0], &Ping{})
	if !errors.Is(err, host.ErrFenced) {
		t.Fatalf("request to a minority member: %v, want host.ErrFenced", err)
	}
	if lone.host.Active() != 0 {
		t.Fatal("a fenced member activated an agent")
	}
}

// payer is an agent whose request writes a payment intent through the
// chain connectors' store (persistence.Fencing over the shared store), as
// a chat that pays does; takeover runs in the middle of the request,
// after the request's start passed its epoch check.
type payer struct {
	chains   persistence.Store
	takeover func()
}

func (p *payer) Receive(ctx context.Context, m any) (any, error) {
	p.takeover()
	_, err := p.chains.Apply(ctx, persistence.Put("intents", m.(string), []byte("signed tx"), persistence.Absent()))
	return nil, err
}

// Signing-time fencing: a request of an activation that another member
// takes over while it runs writes its payment intent under the request's
// fence, and the store refuses it in the same transaction (the intent
// holds the signed transaction, which is broadcast only once written; the
// spending policy's count before a signature is refused the same way). The
// request fails with host.ErrStale; the current owner's intent lands.
func TestPaymentIntentOfAStaleActivationIsRefusedAtomically(t *testing.T) {
	st := openBolt(t)
	chains := persistence.Fencing(st)
	ctx := context.Background()
	var taken bool
	load := func(member string, takeover func()) host.Loader {
		return cluster.FencedLoader(st, func() string { return member }, func(persistence.Store) host.Loader {
			return func(context.Context, string) (host.Agent, error) {
				return &payer{chains: chains, takeover: takeover}, nil
			}
		})
	}
	var fresh host.Agent
	old, err := load("a", func() {
		if taken {
			return
		}
		taken = true
		// Member b activates the agent while a's request runs.
		var err error
		if fresh, err = load("b", func() {})(ctx, "agent-1"); err != nil {
			t.Error(err)
		}
	})(ctx, "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = old.Receive(ctx, "stale-payment")
	if !errors.Is(err, host.ErrStale) || !errors.Is(err, persistence.ErrFenced) {
		t.Fatalf("the stale activation's payment: %v, want host.ErrStale (fenced)", err)
	}
	if _, err := st.Get(ctx, "intents", "stale-payment"); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("the stale activation's intent was written: %v", err)
	}
	if _, err := fresh.Receive(ctx, "current-payment"); err != nil {
		t.Fatalf("the current owner's payment: %v", err)
	}
	if _, err := st.Get(ctx, "intents", "current-payment"); err != nil {
		t.Fatalf("the current owner's intent: %v", err)
	}
	// Outside an agent's request (no fence) the store is unchanged.
	if _, err := chains.Apply(ctx, persistence.Put("intents", "maintenance", []byte("x"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
}

// A member missing from one peer's topology only (issue 25): with three
// members, m1 drops m2 after its health polls of m2 time out (a loaded
// machine), and protoactor blocks m2's id in m1 for good, while m0 still
// counts m2. One disagreement of two is a tie the majority rule does not
// see, and m1 would never admit m2 again: m2 learns from m1's health answer
// that m1 (which the others count) blocked its id, and rejoins with a
// fresh identity at once (here: a new member in its place, as veild's
// supervisor restarts it). The cluster converges to one topology.
func TestAMemberBlockedByOnePeerRejoins(t *testing.T) {
	const n = 3
	rejoined := make(chan string, n)
	lc := startLinked(t, n, func(why string) { rejoined <- why })
	nodes, hp := lc.nodes, lc.hp
	start := lc.start

	// m1's polls of m2 hang until m1 drops m2; then they flow again.
	hp[1][2].CutAll()
	deadline := time.Now().Add(60 * time.Second)
	for len(nodes[1].member.Members()) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("m1 never dropped m2: %v", nodes[1].member.Members())
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing it
	}
	hp[1][2].Heal()

	var why string
	select {
	case why = <-rejoined:
	case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
		t.Fatalf("m2 never rejoined; m1 sees %v, m2 fenced: %q", nodes[1].member.Members(), nodes[2].member.Fenced())
	}
	t.Logf("m2 rejoins: %s", why)
	if nodes[2].member.Fenced() == "" {
		t.Error("m2 serves while a member the cluster counts has blocked it")
	}
	nodes[2].kill()
	nodes[2] = start(2, "m2-again")
	for _, nd := range nodes {
		waitMembers(t, nd, n)
	}
	// One placement everywhere: every member routes each agent to the
	// same owner, and the members that were never blocked did not restart.
	for i := range 20 {
		id := fmt.Sprintf("tie-%d", i)
		want := pingAgain(t, nodes[0], id).Member
		for _, nd := range nodes[1:] {
			if got := pingAgain(t, nd, id).Member; got != want {
				t.Fatalf("agent %s answered by %s via %s and by %s via m0", id, got, nd.name, want)
			}
		}
	}
	select {
	case why := <-rejoined:
		t.Fatalf("a second member rejoined: %s", why)
	default:
	}
}

// The majority side of a partition keeps serving while the cut member's
// health endpoint stays silent. Each poll round then waits out the HTTP
// client's timeout for it; the watchdog ran the rounds itself, so its
// ticker stood still for as long, took every round for a pause of the
// process and fenced the member: the majority side refused most requests
// for the whole partition (issue 25's partition test).
func TestMajorityServesWhileAMemberIsCutOff(t *testing.T) {
	nodes, slots, _ := startCluster(t, 3)
	slots[2].health.CutAll()
	slots[2].remote.CutAll()
	for _, n := range nodes[:2] {
		waitMembers(t, n, 2)
	}
	// Several poll rounds, each waiting for the silent member.
	for i := range 40 {
		for _, n := range nodes[:2] {
			ping(t, n, fmt.Sprintf("cut-%d", i))
		}
	}
}

// linked is a cluster whose links can be cut one by one: hp[j][i] is
// member i's health endpoint as member j polls it, rp[i] member i's
// remoting (cut by the dialing member's source address, 127.0.0.(50+j)).
type linked struct {
	nodes []*node
	hp    [][]*faultproxy.Proxy
	rp    []*faultproxy.Proxy
	start func(i int, name string) *node
}

func linkedIP(i int) string { return fmt.Sprintf("127.0.0.%d", 50+i) }

// startLinked starts n members on per-link proxies, each with rejoin as
// its Config.Rejoin, and waits until they all see each other.
func startLinked(t *testing.T, n int, rejoin func(string)) *linked {
	t.Helper()
	lc := &linked{nodes: make([]*node, n), hp: make([][]*faultproxy.Proxy, n), rp: make([]*faultproxy.Proxy, n)}
	for j := range n {
		lc.rp[j] = listenProxy(t)
		lc.hp[j] = make([]*faultproxy.Proxy, n)
		for i := range n {
			lc.hp[j][i] = listenProxy(t)
		}
	}
	lc.start = func(i int, name string) *node {
		seeds := make([]string, n)
		healths := make([]*faultproxy.Proxy, n)
		for k := range n {
			seeds[k] = lc.hp[i][k].Addr()
			healths[k] = lc.hp[k][i]
		}
		return startMember(t, name, linkedIP(i), lc.rp[i], healths, lc.hp[i][i].Addr(), seeds, rejoin)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); lc.nodes[i] = lc.start(i, fmt.Sprintf("m%d", i)) }()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, nd := range lc.nodes {
		waitMembers(t, nd, n)
	}
	return lc
}

// A request that one member forwarded just before a partition cut it
// off waits in the cut; the sender drops the owner and fails the request
// (its caller is told so). When the partition heals, the held bytes reach
// the owner, which has dropped the sender meanwhile: it must not run the
// request (issue 25's partition test caught a payment without a key
// started three seconds after its caller got a 503). The harness does not
// restart members (Config.Rejoin is nil), so the test also fails when a
// member of the majority fences itself to rejoin after the heal: the
// minority's health answer, held in the cut and read after the heal,
// blocks every member, and a poll round that mixed it with a view read
// before the other majority member dropped the minority counted that
// block as the majority's (judge's support) in about 1 run in 5.
func TestARequestHeldInAPartitionDoesNotRunAfterIt(t *testing.T) {
	rejoined := make(chan string, 3)
	lc := startLinked(t, 3, func(why string) { rejoined <- why })
	m0, m1 := lc.nodes[0], lc.nodes[1]
	var id string
	for i := 0; id == ""; i++ {
		if c := fmt.Sprintf("held-%d", i); m0.member.Owner(c) == lc.nodes[2].member.Self() {
			id = c
		}
	}
	// {m0} | {m1, m2}, both ways, remoting and health.
	for _, k := range []int{1, 2} {
		lc.hp[0][k].CutAll()
		lc.hp[k][0].CutAll()
		lc.rp[k].Cut(func(src net.IP) bool { return src.Equal(net.ParseIP(linkedIP(0))) })
	}
	lc.rp[0].Cut(func(src net.IP) bool { return !src.Equal(net.ParseIP(linkedIP(0))) })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := m0.member.Request(ctx, id, &Ping{}); err == nil {
		t.Fatal("a request across a fresh partition succeeded")
	} else {
		t.Logf("the caller was told: %v", err)
	}
	// The majority has dropped m0 too; then the partition heals.
	waitMembers(t, m1, 2)
	waitMembers(t, lc.nodes[2], 2)
	for _, k := range []int{0, 1, 2} {
		lc.rp[k].Heal()
		for _, j := range []int{0, 1, 2} {
			lc.hp[j][k].Heal()
		}
	}
	// The agent's first request on m2 is this one: had the held request
	// run, it would be the second.
	if p := ping(t, m1, id); p.Count != 1 {
		t.Fatalf("agent %s counted %d requests: the request held in the partition ran after its caller was told it failed", id, p.Count)
	}
	// The minority, blocked by both, restarts to rejoin (here it only
	// asks to: the harness does not restart members); the majority does not.
	select {
	case why := <-rejoined:
		t.Logf("a member rejoins: %s", why)
	case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
		t.Fatalf("m0 never rejoined; fenced: %q", m0.member.Fenced())
	}
	if m0.member.Fenced() == "" {
		t.Error("m0 serves while the majority has blocked its id")
	}
	for _, nd := range lc.nodes[1:] {
		if why := nd.member.Fenced(); why != "" {
			t.Errorf("%s of the majority is fenced after the heal: %s", nd.name, why)
		}
	}
}

// pingAgain is ping for the first requests after a member rejoined: one
// that fails is sent again, up to twice. CI saw one such request of twenty
// go unanswered for 20 s (at a load average of 1.5) right after m2 came
// back: when a member sees the new m2 replace the old one in one topology
// change, protoactor terminates the endpoint of that address and can drop
// a request in flight; such a request now fails at once with
// host.ErrMemberLost (onTopology). That a request may fail once there, as
// a caller's retriable error, is not what the test is about: the placement
// the answers show is.
func pingAgain(t *testing.T, n *node, id string) *Pong {
	t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		v, err := n.member.Request(ctx, id, &Ping{})
		cancel()
		if err == nil {
			return v.(*Pong)
		}
		if try == 3 {
			t.Fatalf("ping %s via %s, 3 tries: %v (its view: owner %s of %v, fenced %q)", id, n.name, err, n.member.Owner(id), n.member.Members(), n.member.Fenced())
		}
		t.Logf("ping %s via %s, try %d: %v (its view: owner %s of %v); sending it again", id, n.name, try, err, n.member.Owner(id), n.member.Members())
	}
}
