package cluster_test

// These tests start real members in one process: each with its own actor
// system, gRPC remoting on loopback and automanaged health endpoint. They
// run without -race (Makefile NORACE_PKGS): protoactor's remote and cluster
// code has data races of its own that we cannot patch (DESIGN.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/veilhq/veil/actors/msg"
	"github.com/veilhq/veil/internal/faultproxy"
	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/host"
)

// Ping asks an agent which member hosts it and how often it was asked.
type Ping struct{ Hold bool }

// Pong is the answer.
type Pong struct {
	Member string
	Count  int
}

var errBoom = errors.New("boom")

// agentOn is a test agent that says where it lives; Hold blocks until the
// test releases it (to catch a request in flight).
type agentOn struct {
	member string
	n      int
	hold   chan struct{}
	held   chan<- string
}

func (a *agentOn) Receive(ctx context.Context, m any) (any, error) {
	p, ok := m.(*Ping)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", m)
	}
	if p.Hold {
		a.held <- a.member
		select {
		case <-a.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a.n++; a.n == 1000 {
		return nil, errBoom
	}
	return &Pong{Member: a.member, Count: a.n}, nil
}

type node struct {
	name   string
	system *actor.ActorSystem
	host   *host.Host
	member *cluster.Member
	hold   chan struct{}
	held   chan string
	// notified receives the agent ids of the other members' Notify.
	notified chan string
}

// slot is where the others reach member i, whatever process plays it:
// proxies the test binds (and keeps) in front of the addresses the member
// binds itself, so a member that restarts is reached at the same address
// and no port is ever picked, released and reused. Member i binds
// 127.0.0.(40+i), so that members started at once tell their listeners
// apart.
type slot struct {
	i              int
	health, remote *faultproxy.Proxy
}

func newSlots(t testing.TB, n int) ([]slot, []string) {
	t.Helper()
	slots := make([]slot, n)
	seeds := make([]string, n)
	for i := range slots {
		h, r := listenProxy(t), listenProxy(t)
		slots[i] = slot{i: i, health: h, remote: r}
		seeds[i] = h.Addr()
	}
	return slots, seeds
}

// listenProxy binds a fault proxy on loopback for the whole test.
func listenProxy(t testing.TB) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func (s slot) ip() string { return fmt.Sprintf("127.0.0.%d", 40+s.i) }

func quiet() *slog.Logger {
	if os.Getenv("CLUSTER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// codec is veild's wire format (actors/msg) with the test's messages.
func codec() cluster.Codec {
	c := msg.NewCodec()
	c.RegisterTypes(&Ping{}, &Pong{})
	c.RegisterSentinel("test.boom", errBoom)
	return msg.NewWire(c)
}

// startNode starts one member in slot s.
func startNode(t *testing.T, name string, s slot, seeds []string) *node {
	t.Helper()
	return startMember(t, name, s.ip(), s.remote, []*faultproxy.Proxy{s.health}, s.health.Addr(), seeds, nil)
}

// startMember starts one member binding ip, reached at remote (its
// remoting) and at healths (its health endpoint, one proxy per link);
// advertise is its own entry in seeds. rejoin is Config.Rejoin.
func startMember(t *testing.T, name, ip string, remote *faultproxy.Proxy, healths []*faultproxy.Proxy, advertise string, seeds []string, rejoin func(string)) *node {
	t.Helper()
	n := &node{name: name, hold: make(chan struct{}), held: make(chan string, 16), notified: make(chan string, 64)}
	log := quiet().With(slog.String("node", name)) // CLUSTER_TEST_LOG: whose line it is
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return log }))
	n.host = host.NewHost(n.system, func(ctx context.Context, id string) (host.Agent, error) {
		return &agentOn{member: name, hold: n.hold, held: n.held}, nil
	}, host.HostConfig{PassivateAfter: time.Hour}, log, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := cluster.Start(ctx, n.system, cluster.Config{
		Name: "test", Addr: ip + ":0", Advertise: remote.Addr(),
		Seeds: seeds, HealthAddr: ip + ":0", HealthAdvertise: advertise,
		RefreshEvery: 200 * time.Millisecond, Host: n.host, Codec: codec(), Log: log,
		Rejoin: rejoin,
		OnNotify: func(id string) {
			select {
			case n.notified <- id:
			default:
			}
		},
		OnListen: func(r, health string) {
			remote.SetTarget(r)
			for _, h := range healths {
				h.SetTarget(health)
			}
		},
	})
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	n.member = m
	t.Cleanup(n.kill)
	return n
}

// kill stops the member the hard way: no leave, remoting cut.
func (n *node) kill() {
	n.member.Stop() // idempotent; shuts the actor system down too
}

func startCluster(t *testing.T, size int) ([]*node, []slot, []string) {
	t.Helper()
	slots, seeds := newSlots(t, size)
	nodes := make([]*node, size)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = startNode(t, fmt.Sprintf("m%d", i), slots[i], seeds)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, n := range nodes {
		waitMembers(t, n, size)
	}
	return nodes, slots, seeds
}

// waitMembers waits until n sees want members and serves (the others
// count it too).
func waitMembers(t *testing.T, n *node, want int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for len(n.member.Members()) != want || n.member.Fenced() != "" {
		if time.Now().After(deadline) {
			t.Fatalf("%s sees members %v, want %d; fenced: %q", n.name, n.member.Members(), want, n.member.Fenced())
		}
		time.Sleep(20 * time.Millisecond) // polling a condition, not timing it
	}
}

func ping(t *testing.T, n *node, id string) *Pong {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := n.member.Request(ctx, id, &Ping{})
	if err != nil {
		t.Fatalf("ping %s via %s: %v (its view: owner %s of %v, fenced %q)", id, n.name, err, n.member.Owner(id), n.member.Members(), n.member.Fenced())
	}
	return v.(*Pong)
}

func nameOf(nodes []*node, addr string) string {
	for _, n := range nodes {
		if n.member.Self() == addr {
			return n.name
		}
	}
	return "?" + addr
}

func TestEveryMemberRoutesAnAgentToItsOneOwner(t *testing.T) {
	nodes, _, _ := startCluster(t, 3)
	hosts := map[string]int{}
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("agent-%d", i)
		want := nameOf(nodes, nodes[0].member.Owner(id))
		// Asked through every member, one activation answers: the count
		// goes up by one each time and the member never changes.
		for k, n := range nodes {
			p := ping(t, n, id)
			if p.Member != want || p.Count != k+1 {
				t.Fatalf("agent %s via %s: answered by %s count %d, want %s count %d", id, n.name, p.Member, p.Count, want, k+1)
			}
		}
		hosts[want]++
	}
	// Rendezvous spreads agents: no member is left out.
	for _, n := range nodes {
		if hosts[n.name] == 0 {
			t.Fatalf("no agent placed on %s: %v", n.name, hosts)
		}
	}
}

func TestErrorsKeepTheirKindAcrossMembers(t *testing.T) {
	nodes, _, _ := startCluster(t, 2)
	// An agent owned by member 1, asked through member 0.
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprintf("e-%d", i)
		if nodes[0].member.Owner(id) == nodes[1].member.Self() {
			break
		}
	}
	ctx := context.Background()
	for i := 1; i < 1000; i++ {
		if _, err := nodes[0].member.Request(ctx, id, &Ping{}); err != nil {
			t.Fatalf("ping %d: %v", i, err)
		}
	}
	_, err := nodes[0].member.Request(ctx, id, &Ping{})
	if !errors.Is(err, errBoom) || err.Error() != errBoom.Error() {
		t.Fatalf("1000th ping: %v, want the agent's errBoom across the wire", err)
	}
	// A message the codec does not know fails loudly, without reaching the agent.
	if _, err := nodes[0].member.Request(ctx, id, struct{}{}); !errors.Is(err, msg.ErrUnregistered) {
		t.Fatalf("unregistered message: %v, want msg.ErrUnregistered", err)
	}
}

func TestKilledMembersAgentsMoveAndInFlightRequestsFailRetriably(t *testing.T) {
	nodes, slots, seeds := startCluster(t, 3)
	victim := nodes[2]
	var ids []string
	for i := 0; len(ids) < 5; i++ {
		id := fmt.Sprintf("k-%d", i)
		if nodes[0].member.Owner(id) == victim.member.Self() {
			ids = append(ids, id)
			ping(t, nodes[0], id)
		}
	}
	// A request held inside the victim's agent when it dies.
	inflight := make(chan error, 1)
	go func() {
		_, err := nodes[0].member.Request(context.Background(), ids[0], &Ping{Hold: true})
		inflight <- err
	}()
	select {
	case <-victim.held:
	case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
		t.Fatal("the held request never reached the victim's agent within 60s")
	}
	changed := nodes[0].member.Changed()
	victim.kill()

	// The topology signal (what the payment scanners re-shard on) fires
	// with the victim gone from the member list.
	select {
	case <-changed:
		if ms := nodes[0].member.Members(); slices.Contains(ms, victim.member.Self()) {
			t.Fatalf("topology changed, still with the killed member: %v", ms)
		}
	case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
		t.Fatal("no topology change within 60s of a member's death")
	}
	select {
	case err := <-inflight:
		if !errors.Is(err, host.ErrMemberLost) {
			t.Fatalf("in-flight request when its member died: %v, want host.ErrMemberLost", err)
		}
	case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
		t.Fatal("in-flight request to a killed member did not fail within 60s")
	}
	for _, n := range nodes[:2] {
		waitMembers(t, n, 2)
	}
	for _, id := range ids {
		p := ping(t, nodes[1], id)
		if p.Member == victim.name {
			t.Fatalf("agent %s still answered by the dead member", id)
		}
	}

	// A member rejoining at the same address takes its agents back.
	back := startNode(t, "m2-again", slots[2], seeds)
	for _, n := range []*node{nodes[0], nodes[1], back} {
		waitMembers(t, n, 3)
	}
	for _, id := range ids {
		if p := ping(t, nodes[0], id); p.Member != "m2-again" {
			t.Fatalf("agent %s answered by %s after its member rejoined, want m2-again", id, p.Member)
		}
	}
	// ...and the survivors passivated their copies: one activation each.
	for _, n := range nodes[:2] {
		waitInactive(t, n)
	}
}

// waitInactive waits until n holds no agent that another member owns.
func waitInactive(t *testing.T, n *node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for n.host.Active() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still has %d active agents it does not own", n.name, n.host.Active())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestARequestOutlivesItsConnection: every connection to an owner that
// holds a request ends (as when protoactor ends an endpoint). The request
// was delivered: it is not failed, and its answer comes over the owner's
// own connection once the agent answers; the next request reaches the
// owner on a fresh connection.
func TestARequestOutlivesItsConnection(t *testing.T) {
	nodes, slots, owner, id := answeredOnce(t, "c")
	inflight := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, err := nodes[0].member.Request(ctx, id, &Ping{Hold: true})
		inflight <- err
	}()
	select {
	case <-owner.held:
	case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
		t.Fatal("the held request never reached its owner's agent within 60s")
	}
	slots[1].remote.Reset() // every connection to the owner's remoting ends
	// A request written into a connection as it ends is lost: its probe
	// finds the owner never took it, and it fails retriably; sent again
	// (as a client retries a 503), it reaches the owner on a fresh one.
	other := ownedBy(t, nodes[2], owner, "other")
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		v, err := nodes[2].member.Request(ctx, other, &Ping{})
		cancel()
		if err == nil {
			if p := v.(*Pong); p.Member != owner.name || p.Count != 1 {
				t.Fatalf("a new request answered %+v, want %s's first answer (a lost one never ran)", p, owner.name)
			}
			break
		}
		if !errors.Is(err, host.ErrMemberLost) || try == 3 {
			t.Fatalf("a new request after the connections ended, try %d: %v", try, err)
		}
		t.Logf("try %d: %v (retriable)", try, err)
	}
	close(owner.hold)
	if err := <-inflight; err != nil {
		t.Fatalf("the held request after its connection ended: %v, want its answer", err)
	}
}

// TestALostAnswerIsSentAgain: the owner answered, the answer was lost on
// its way back (answers.go); the requester's probe finds it done and the
// owner sends it again, so the request is answered instead of waiting out
// its deadline (ping's 20 s: a timeout without the probes).
func TestALostAnswerIsSentAgain(t *testing.T) {
	nodes, _, owner, id := answeredOnce(t, "a")
	cluster.LoseOnce(owner.member, "answer", id)
	if p := ping(t, nodes[0], id); p.Member != owner.name || p.Count != 2 {
		t.Fatalf("answer %+v, want %s's second answer", p, owner.name)
	}
}

// TestALostRequestFailsRetriably: a request lost on its way to its owner
// never runs; the requester's probe finds the owner never took it, and it
// fails at once, retriably, instead of waiting out its deadline.
func TestALostRequestFailsRetriably(t *testing.T) {
	nodes, _, owner, id := answeredOnce(t, "r")
	cluster.LoseOnce(owner.member, "request", id)
	failsNeverTaken(t, nodes[0], id)
	wantSecondAnswer(t, nodes[0], id)
}

// failsNeverTaken sends a request to agent id from n, which must fail
// retriably with host.ErrMemberLost because its owner never took it.
func failsNeverTaken(t *testing.T, n *node, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := n.member.Request(ctx, id, &Ping{})
	if !errors.Is(err, host.ErrMemberLost) || !strings.Contains(err.Error(), "never took") {
		t.Fatalf("lost request: %v, want host.ErrMemberLost saying the owner never took it", err)
	}
}

// wantSecondAnswer pings agent id from n: the agent answered once before
// (answeredOnce), and the request that failed must not have run, so this
// is its second answer.
func wantSecondAnswer(t *testing.T, n *node, id string) {
	t.Helper()
	if p := ping(t, n, id); p.Count != 2 {
		t.Fatalf("answer %+v after a request that failed, want count 2 (the failed one ran)", p)
	}
}

// TestARequestArrivingAfterItsProbeDoesNotRun: a request held up on its
// way (bytes of a connection that broke, delivered late) reaches its
// owner after the requester's probe found it unknown and the caller was
// told it failed. The owner that said "unknown" refuses it: it must not
// run after its caller heard that it failed, which for a payment without
// an Idempotency-Key would pay twice once the client tries again.
func TestARequestArrivingAfterItsProbeDoesNotRun(t *testing.T) {
	nodes, _, owner, id := answeredOnce(t, "d")
	deliver := cluster.DelayOnce(owner.member, id)
	failsNeverTaken(t, nodes[0], id)
	if code, _ := codec().ReplyCode(deliver(nil)); code != "cluster.fenced" {
		t.Fatalf("the late request was answered with code %q, want a refusal (cluster.fenced)", code)
	}
	wantSecondAnswer(t, nodes[0], id)
}

// TestARequestFromAReplacedProcessDoesNotRun: bytes a dead process's
// connection held reach the owner after a new process at the same address
// was admitted. The address is in the owner's topology, but the sending
// process is not: its requests were failed to its callers when it went,
// so the owner refuses them (the envelope names its sender's member id).
// Here the requester's own request is delivered as if an earlier process
// at its address had sent it: it is refused, and the requester, which
// reads the refusal as "not taken", sends it again, so it runs once.
func TestARequestFromAReplacedProcessDoesNotRun(t *testing.T) {
	nodes, _, owner, id := answeredOnce(t, "s")
	deliver := cluster.DelayOnce(owner.member, id)
	type result struct {
		v   any
		err error
	}
	answered := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		v, err := nodes[0].member.Request(ctx, id, &Ping{})
		answered <- result{v, err}
	}()
	reply := deliver(func(env any) any {
		req := proto.Clone(env.(*msg.AgentRequest)).(*msg.AgentRequest)
		if req.GetSenderMember() == "" {
			t.Error("a forwarded request does not name its sender's member id")
		}
		req.SenderMember = "an-earlier-process"
		return req
	})
	if code, _ := codec().ReplyCode(reply); code != "cluster.fenced" {
		t.Fatalf("a request from a process no longer in the topology was answered with code %q, want a refusal (cluster.fenced)", code)
	}
	r := <-answered
	if p, ok := r.v.(*Pong); r.err != nil || !ok || p.Count != 2 {
		t.Fatalf("answer %+v, %v; want the agent's second (the refused one never ran; the requester's resend did)", r.v, r.err)
	}
}

// answeredOnce starts a cluster of three with an agent (its id from
// prefix) that nodes[1], its owner, holds and has answered once for
// nodes[0]: a request from nodes[0] to it is forwarded, and its answer
// counts from 2.
func answeredOnce(t *testing.T, prefix string) (nodes []*node, slots []slot, owner *node, id string) {
	t.Helper()
	nodes, slots, _ = startCluster(t, 3)
	owner = nodes[1]
	id = ownedBy(t, nodes[0], owner, prefix)
	ping(t, nodes[0], id)
	return nodes, slots, owner, id
}

// ownedBy is an agent id that from's view places on owner.
func ownedBy(t *testing.T, from, owner *node, prefix string) string {
	t.Helper()
	for i := 0; ; i++ {
		if id := fmt.Sprintf("%s-%d", prefix, i); from.member.Owner(id) == owner.member.Self() {
			return id
		}
	}
}
