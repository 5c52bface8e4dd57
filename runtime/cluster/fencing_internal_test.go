package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"

	"github.com/veilhq/veil/runtime/host"
)

// The watchdog tick that sees a pause fences the member before it records
// the tick: Fenced reads the gap until then and the reason after, so a
// request taken off the wire while the process resumes is refused
// whichever goroutine runs first. (Recording the tick and fencing in two
// steps left a moment in which a request that had waited out the pause,
// and whose sender had already told its caller it failed, ran.)
func TestATickThatSeesAPauseFencesAtOnce(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem()
	h := host.NewHost(system, func(context.Context, string) (host.Agent, error) {
		return nil, errors.New("no agents here")
	}, host.HostConfig{}, log, nil)
	t.Cleanup(func() { _ = h.Stop(context.Background()); system.Shutdown() })
	m := &Member{cfg: Config{Log: log, Host: h}}
	m.fence.init()

	t0 := time.Now()
	m.tick(t0)
	for _, tc := range []struct {
		name   string
		at     time.Time
		paused bool
	}{
		{"a tick on time", t0.Add(tick), false},
		{"a tick just under the gap", t0.Add(tick + pauseGap - time.Millisecond), false},
		{"the first tick after a pause", t0.Add(tick + pauseGap - time.Millisecond + pauseGap + time.Second), true},
	} {
		m.tick(tc.at)
		m.mu.RLock()
		// At the tick's own time: the gap is no longer visible, only the
		// reason can fence.
		why := m.fencedLocked(tc.at)
		m.mu.RUnlock()
		if got := why != ""; got != tc.paused {
			t.Fatalf("%s: fenced %q, want fenced = %v", tc.name, why, tc.paused)
		}
	}
}

// A stall of the watchdog (a pause, or a process starved of CPU: from
// inside they look the same) is decided on evidence read after it, on a
// fake clock: the member refuses requests from the tick that sees the
// stall until a poll round that started after it shows every member of its
// topology still counting it and none blocking it, and is fenced (and
// passivates) only when the evidence says so: its lease ended on its own
// clock, or was taken over, or the others dropped it. Before, any stall
// over pauseGap fenced the member and passivated every agent; a member
// starved mid-swap under CI's load did.
func TestAStallIsDecidedOnEvidence(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem()
	h := host.NewHost(system, func(context.Context, string) (host.Agent, error) {
		return nil, errors.New("no agents here")
	}, host.HostConfig{}, log, nil)
	t.Cleanup(func() { _ = h.Stop(context.Background()); system.Shutdown() })
	self := system.ID
	node := func(id string, blocks bool, view ...string) healthNode {
		return healthNode{NodeModel: &automanaged.NodeModel{ID: id, ClusterName: "c", Address: "127.0.0.1", Port: 1}, Members: view, BlocksAsker: blocks}
	}
	intact := []healthNode{node(self, false, self, "b", "c"), node("b", false, self, "b", "c"), node("c", false, self, "b", "c")}

	type round struct {
		started time.Duration // after the stall's end (negative: before it)
		answers []healthNode
	}
	for _, tc := range []struct {
		name      string
		stall     time.Duration
		leaseLost bool // a renewal after the stall found another holder
		rounds    []round
		serving   bool // serves after the rounds
		fenced    bool // a fencing condition holds (it passivated its agents)
		rejoins   bool
	}{
		{name: "starved past the gap, place and lease intact", stall: 3 * time.Second,
			rounds: []round{{100 * time.Millisecond, intact}}, serving: true},
		{name: "starved, a round that started before the stall", stall: 3 * time.Second,
			rounds: []round{{-time.Second, intact}}},
		{name: "starved, one member of its topology did not answer", stall: 3 * time.Second,
			rounds: []round{{100 * time.Millisecond, []healthNode{intact[0], intact[2]}}}},
		{name: "starved, one member did not answer, then did", stall: 3 * time.Second,
			rounds: []round{{100 * time.Millisecond, []healthNode{intact[0], intact[2]}}, {time.Second, intact}}, serving: true},
		// b counts it, c left it out (c dropped it and has not blocked
		// it yet): the majority rule (judge) sees no drop, but c may have
		// failed the requests it sent during the stall.
		{name: "one member left it out", stall: 3 * time.Second,
			rounds: []round{{100 * time.Millisecond, []healthNode{intact[0], intact[1], node("c", false, "b", "c")}}}},
		{name: "paused past its lease's end", stall: 12 * time.Second,
			rounds: []round{{100 * time.Millisecond, intact}}, fenced: true},
		{name: "its lease taken over by a new process at its address", stall: 3 * time.Second, leaseLost: true,
			rounds: []round{{100 * time.Millisecond, []healthNode{intact[0], node("b", false, "new", "b", "c"), node("c", false, "new", "b", "c")}}}, fenced: true},
		{name: "taken over: the others dropped and blocked it", stall: 10 * time.Second,
			rounds: []round{{100 * time.Millisecond, []healthNode{intact[0], node("b", true, "b", "c"), node("c", true, "b", "c")}}}, fenced: true, rejoins: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1_800_000_000, 0)
			now := t0
			m := &Member{cfg: Config{Log: log, Host: h, Name: "c", Expected: 3, DroppedFor: 3 * time.Second, JoinFor: 30 * time.Second}, system: system, clock: func() time.Time { return now }}
			m.fence.init()
			m.ids = map[string]bool{self: true, "b": true, "c": true}
			// The lease was renewed at t0: it holds until t0+10s.
			m.SetLeaseUntil(t0.Add(10 * time.Second))
			m.SetLease(true)
			m.tick(now)
			if why := m.Fenced(); why != "" {
				t.Fatalf("before the stall: fenced %q", why)
			}

			now = t0.Add(tc.stall)
			m.tick(now)
			if m.Fenced() == "" {
				t.Fatal("serving at the tick that saw the stall")
			}
			if tc.stall < 10*time.Second && len(m.fence.reasons) > 0 {
				t.Fatalf("a stall alone fenced the member: %v", m.fence.reasons)
			}
			if tc.leaseLost {
				m.SetLease(false)
			}
			for _, r := range tc.rounds {
				m.judgeRound(now.Add(r.started), now.Add(r.started+50*time.Millisecond), r.answers)
			}
			now = now.Add(2 * time.Second)
			m.tick(now)
			m.mu.RLock()
			why, fenced, rejoins := m.fencedLocked(now), len(m.fence.reasons) > 0, m.fence.rejoining
			m.mu.RUnlock()
			if (why == "") != tc.serving || fenced != tc.fenced || rejoins != tc.rejoins {
				t.Fatalf("serving %v (%q), fenced %v %v, rejoins %v; want serving %v, fenced %v, rejoins %v",
					why == "", why, fenced, m.fence.reasons, rejoins, tc.serving, tc.fenced, tc.rejoins)
			}
		})
	}
}

// After a pause past the lease's end, the member serves again only once a
// renewal has moved the lease's end and a poll round confirmed its place.
func TestAPausePastTheLeaseServesAgainAfterARenewal(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	system := actor.NewActorSystem()
	h := host.NewHost(system, func(context.Context, string) (host.Agent, error) {
		return nil, errors.New("no agents here")
	}, host.HostConfig{}, log, nil)
	t.Cleanup(func() { _ = h.Stop(context.Background()); system.Shutdown() })
	self := system.ID
	t0 := time.Unix(1_800_000_000, 0)
	now := t0
	m := &Member{cfg: Config{Log: log, Host: h, Name: "c", Expected: 3}, system: system, clock: func() time.Time { return now }}
	m.fence.init()
	m.ids = map[string]bool{self: true, "b": true}
	m.SetLeaseUntil(t0.Add(10 * time.Second))
	m.SetLease(true)
	m.tick(now)

	for now.Before(t0.Add(9900 * time.Millisecond)) {
		now = now.Add(tick)
		m.tick(now)
	}
	if why := m.Fenced(); why != "" {
		t.Fatalf("ticking on time inside the lease: fenced %q", why)
	}
	// The lease's own goroutine has not run yet: the watchdog fences at
	// the lease's end on its own.
	now = t0.Add(10 * time.Second)
	m.tick(now)
	if m.fence.reasons["lease"] == "" {
		t.Fatalf("not fenced at the lease's end: %q", m.Fenced())
	}
	now = now.Add(5 * time.Second)
	m.tick(now) // a stall, too
	m.SetLease(false)
	node := func(id string) healthNode {
		return healthNode{NodeModel: &automanaged.NodeModel{ID: id, ClusterName: "c"}, Members: []string{self, "b"}}
	}
	m.judgeRound(now.Add(time.Millisecond), now.Add(2*time.Millisecond), []healthNode{node(self), node("b")})
	if m.Fenced() == "" {
		t.Fatal("serving without its lease")
	}
	// The lease's goroutine took the record again (still this process's).
	m.SetLeaseUntil(now.Add(10 * time.Second))
	m.SetLease(true)
	if why := m.Fenced(); why != "" {
		t.Fatalf("lease renewed and place confirmed: fenced %q", why)
	}
}

// judge, on the views of three members after the faults of issue 25.
// Each member's answer is its id, its view (the ids of its topology) and
// whether it has blocked the asking member's id.
func TestJudgeFindsTheMemberThatMustRejoin(t *testing.T) {
	node := func(id string, blocks bool, view ...string) healthNode {
		return healthNode{NodeModel: &automanaged.NodeModel{ID: id, ClusterName: "c", Address: "127.0.0.1", Port: 1}, Members: view, BlocksAsker: blocks}
	}
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		self    string
		mine    map[string]bool
		answers []healthNode
		why     bool // fenced as dropped
		blocked bool // restarts at once
	}{
		{"one topology", "c", set("a", "b", "c"),
			[]healthNode{node("a", false, "a", "b", "c"), node("b", false, "a", "b", "c"), node("c", false, "a", "b", "c")}, false, false},
		// b dropped c after one health poll timed out (and blocked its id
		// for good); a still counts c. One disagreement of two is a tie
		// the majority rule does not see.
		{"a tie: one member blocked this one", "c", set("a", "b", "c"),
			[]healthNode{node("a", false, "a", "b", "c"), node("b", true, "a", "b")}, true, true},
		{"a tie, seen from the member that blocked", "b", set("a", "b"),
			[]healthNode{node("a", false, "a", "b", "c"), node("c", false, "a", "b", "c")}, false, false},
		{"a tie, seen from the third", "a", set("a", "b", "c"),
			[]healthNode{node("b", false, "a", "b"), node("c", false, "a", "b", "c")}, false, false},
		// b and c blocked each other, a counts both: only the greater id
		// restarts.
		{"mutual block, greater id", "c", set("a", "c"),
			[]healthNode{node("a", false, "a", "b", "c"), node("b", true, "a", "b")}, true, true},
		{"mutual block, lesser id", "b", set("a", "b"),
			[]healthNode{node("a", false, "a", "b", "c"), node("c", true, "a", "c")}, false, false},
		// After a partition {a} | {b, c} healed: each side blocked the other.
		{"partition healed, the minority", "a", set("a"),
			[]healthNode{node("b", true, "b", "c"), node("c", true, "b", "c")}, true, true},
		{"partition healed, the majority", "b", set("b", "c"),
			[]healthNode{node("a", true, "a"), node("c", false, "b", "c")}, false, false},
		// The same round, with c's answer read before c dropped a and a's
		// answer held by the cut until the heal (a blocked b and c when it
		// dropped them during the cut). c's stale view counts a, a does
		// not count c: a is counted by no view but its own, and b (of the
		// majority) must not restart, whichever id is greater. This failed
		// TestARequestHeldInAPartitionDoesNotRunAfterIt in about 1 run in 5.
		{"partition healed, the majority, a stale view", "b", set("b", "c"),
			[]healthNode{node("a", true, "a"), node("c", false, "a", "b", "c")}, false, false},
		{"partition healed, the majority, a stale view, lesser id", "b", set("a", "b"),
			[]healthNode{node("c", true, "c"), node("a", false, "a", "b", "c")}, false, false},
		// A member paused past the heartbeat expiry blocked the others on
		// resume; they had dropped it: it is not counted, so its block
		// moves nobody.
		{"a resumed member's block", "a", set("a", "c"),
			[]healthNode{node("b", true, "b"), node("c", false, "a", "c")}, false, false},
		{"the resumed member itself", "b", set("a", "b", "c"),
			[]healthNode{node("a", true, "a", "c"), node("c", true, "a", "c")}, true, true},
		// Left out without a block (the others have not polled it yet, or
		// cannot reach it): fenced, and restarts only after DroppedFor.
		{"left out by most, not blocked", "c", set("a", "b", "c"),
			[]healthNode{node("a", false, "a", "b"), node("b", false, "a", "b")}, true, false},
	} {
		v := judge(tc.self, tc.mine, tc.answers, "c", 3)
		if (v.why != "") != tc.why || v.blocked != tc.blocked {
			t.Errorf("%s: %+v; want fenced %v, blocked %v", tc.name, v, tc.why, tc.blocked)
		}
	}
}

// A new process at a member's address that replaces the old one within
// one health poll round is one topology change with the same addresses:
// the old id left, the new one joined. protoactor terminates the remote
// endpoint of that address for the old id, dropping what its writer holds
// without a dead letter, so the requests in flight to that address fail
// at once (host.ErrMemberLost, retriable) instead of waiting out their
// deadlines; those to the other members stay in flight.
func TestRequestsInFlightToARestartedAddressFailAtOnce(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &Member{cfg: Config{Log: log}, inflight: map[string]map[*call]struct{}{}, changed: make(chan struct{})}
	m.fence.init()
	member := func(id string, port int32) *cluster.Member {
		return &cluster.Member{Id: id, Host: "127.0.0.1", Port: port}
	}
	a, b, b2 := member("a", 1), member("b", 2), member("b-again", 2)
	m.onTopology(&cluster.ClusterTopology{Members: []*cluster.Member{a, b}, Joined: []*cluster.Member{a, b}})
	toA, toB := &call{lost: make(chan struct{})}, &call{lost: make(chan struct{})}
	m.inflight[a.Address()] = map[*call]struct{}{toA: {}}
	m.inflight[b.Address()] = map[*call]struct{}{toB: {}}

	m.onTopology(&cluster.ClusterTopology{Members: []*cluster.Member{a, b2}, Left: []*cluster.Member{b}, Joined: []*cluster.Member{b2}})
	select {
	case <-toB.lost:
	default:
		t.Fatal("a request in flight to the restarted address is still waiting")
	}
	select {
	case <-toA.lost:
		t.Fatal("a request in flight to a member that stayed failed")
	default:
	}
	if got := m.Members(); !slices.Equal(got, []string{a.Address(), b.Address()}) {
		t.Fatalf("members %v", got)
	}
	if !m.ids["b-again"] || m.ids["b"] {
		t.Fatalf("ids %v: want the new process's id only", m.ids)
	}
}

// TestANewProcessAtAKnownAddressGetsAFreshEndpoint: an endpoint made while
// an earlier process held the address (an answer to a request it had
// forwarded) may still be connected to that process; the new one's first
// requests would be written to it and lost. So the endpoint is dropped
// when a new id joins at an address where another was seen, before the
// member list routes anything there.
func TestANewProcessAtAKnownAddressGetsAFreshEndpoint(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := &Member{cfg: Config{Log: log}, inflight: map[string]map[*call]struct{}{}, changed: make(chan struct{})}
	m.fence.init()
	type drop struct {
		addr    string
		routing bool // the member list already held addr when it was dropped
	}
	var drops []drop
	m.dropEndpoint = func(addr string) {
		drops = append(drops, drop{addr, slices.Contains(m.Members(), addr)})
	}
	member := func(id string, port int32) *cluster.Member {
		return &cluster.Member{Id: id, Host: "127.0.0.1", Port: port}
	}
	a, b, b2, b3, c := member("a", 1), member("b", 2), member("b-2", 2), member("b-3", 2), member("c", 3)
	top := func(members, left, joined []*cluster.Member) {
		m.onTopology(&cluster.ClusterTopology{Members: members, Left: left, Joined: joined})
	}
	steps := []struct {
		name        string
		members     []*cluster.Member
		left        []*cluster.Member
		joined      []*cluster.Member
		wantDropped []string
	}{
		{"first view", []*cluster.Member{a, b}, nil, []*cluster.Member{a, b}, nil},
		{"b's process leaves", []*cluster.Member{a}, []*cluster.Member{b}, nil, nil},
		{"a new process at b's address", []*cluster.Member{a, b2}, nil, []*cluster.Member{b2}, []string{b.Address()}},
		{"restarted within one change", []*cluster.Member{a, b3}, []*cluster.Member{b2}, []*cluster.Member{b3}, []string{b.Address()}},
		{"a new address", []*cluster.Member{a, b3, c}, nil, []*cluster.Member{c}, nil},
	}
	for _, s := range steps {
		drops = nil
		top(s.members, s.left, s.joined)
		var got []string
		for _, d := range drops {
			got = append(got, d.addr)
			if d.routing && s.name == "a new process at b's address" {
				t.Errorf("%s: endpoint of %s dropped after the member list routed to it", s.name, d.addr)
			}
		}
		if !slices.Equal(got, s.wantDropped) {
			t.Errorf("%s: dropped endpoints %v, want %v", s.name, got, s.wantDropped)
		}
	}
}
