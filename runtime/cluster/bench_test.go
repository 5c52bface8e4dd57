package cluster_test

// Benchmarks of cluster routing (docs/BENCHMARKS.md, "Cluster"). Like the
// tests, every member runs in this process with its own actor system, gRPC
// remoting on loopback and automanaged health endpoint; run without -race.
//
//	go test -run '^$' -bench 'Request' -benchtime 3s -count 3 ./runtime/cluster/
//	go test -run '^$' -bench Failover -benchtime 30x -timeout 30m ./runtime/cluster/

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/runtime/cluster"
	"github.com/veilhq/veil/runtime/host"
)

// echoAgent answers every Ping with a Pong and never fails: the benchmarks
// measure routing, not the agent.
type echoAgent struct {
	member string
	n      int
}

func (a *echoAgent) Receive(_ context.Context, m any) (any, error) {
	if _, ok := m.(*Ping); !ok {
		return nil, fmt.Errorf("unexpected %T", m)
	}
	a.n++
	return &Pong{Member: a.member, Count: a.n}, nil
}

type benchMember struct {
	name   string
	system *actor.ActorSystem
	host   *host.Host
	member *cluster.Member
}

// startBenchMember starts one member with production's defaults but for the
// given refresh period, in slot s (see the tests' slot).
// Unless keep, it is killed when tb's test ends.
func startBenchMember(tb testing.TB, name string, s slot, seeds []string, refresh time.Duration, keep bool) *benchMember {
	tb.Helper()
	n := &benchMember{name: name}
	n.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet() }))
	n.host = host.NewHost(n.system, func(ctx context.Context, id string) (host.Agent, error) {
		return &echoAgent{member: name}, nil
	}, host.HostConfig{PassivateAfter: time.Hour}, quiet(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	m, err := cluster.Start(ctx, n.system, cluster.Config{
		Name: "bench", Addr: s.ip() + ":0", Advertise: s.remote.Addr(),
		Seeds: seeds, HealthAddr: s.ip() + ":0", HealthAdvertise: s.health.Addr(),
		RefreshEvery: refresh, Host: n.host, Codec: codec(), Log: quiet(),
		OnListen: func(remote, health string) {
			s.remote.SetTarget(remote)
			s.health.SetTarget(health)
		},
	})
	if err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	n.member = m
	if !keep {
		tb.Cleanup(n.kill)
	}
	return n
}

// kill stops the member the hard way: no leave, remoting cut (as the
// tests' kill).
func (n *benchMember) kill() { n.member.Stop() }

func startBenchCluster(tb testing.TB, size int, refresh time.Duration, keep bool) ([]*benchMember, []slot, []string) {
	tb.Helper()
	slots, seeds := newSlots(tb, size)
	nodes := make([]*benchMember, size)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = startBenchMember(tb, fmt.Sprintf("m%d", i), slots[i], seeds, refresh, keep)
		}()
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	for _, n := range nodes {
		waitSees(tb, n, size)
	}
	return nodes, slots, seeds
}

func waitSees(tb testing.TB, n *benchMember, want int) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(n.member.Members()) != want || n.member.Fenced() != "" {
		if time.Now().After(deadline) {
			tb.Fatalf("%s sees members %v, want %d; fenced: %q", n.name, n.member.Members(), want, n.member.Fenced())
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not timing it
	}
}

// agentsOwnedBy returns k agent ids that placement puts on member addr.
func agentsOwnedBy(via *benchMember, addr, prefix string, k int) []string {
	var ids []string
	for i := 0; len(ids) < k; i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if via.member.Owner(id) == addr {
			ids = append(ids, id)
		}
	}
	return ids
}

var (
	pairOnce sync.Once
	pair     []*benchMember // stopped when the test binary exits
)

// benchRequest measures Request through member 0 to agents owned by member
// owner (0: a local call, 1: forwarded to the other member). Parallel
// callers each use their own agent, since an agent handles one message at a
// time.
// parallel is the number of callers per GOMAXPROCS for b.RunParallel (0:
// one caller).
func benchRequest(b *testing.B, owner int, parallel int) {
	pairOnce.Do(func() {
		// One pair for every round of every Request benchmark: starting
		// members takes seconds, and the framework runs several rounds.
		pair, _, _ = startBenchCluster(b, 2, time.Second, true)
	})
	if pair == nil {
		b.Fatal("the two members did not start")
	}
	nodes := pair
	via := nodes[0]
	ids := agentsOwnedBy(via, nodes[owner].member.Self(), "bench", 256)
	ctx := context.Background()
	for _, id := range ids { // activate them all before timing
		if _, err := via.member.Request(ctx, id, &Ping{}); err != nil {
			b.Fatal(err)
		}
	}
	want := nodes[owner].name
	b.ReportAllocs()
	b.ResetTimer()
	if parallel == 0 {
		for i := 0; i < b.N; i++ {
			v, err := via.member.Request(ctx, ids[0], &Ping{})
			if err != nil {
				b.Fatal(err)
			}
			if p := v.(*Pong); p.Member != want {
				b.Fatalf("answered by %s, want %s", p.Member, want)
			}
		}
		return
	}
	var next atomic.Int64
	b.SetParallelism(parallel)
	b.RunParallel(func(pb *testing.PB) {
		id := ids[int(next.Add(1)-1)%len(ids)]
		for pb.Next() {
			if _, err := via.member.Request(ctx, id, &Ping{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRequestLocal: the agent is owned by the calling member, so
// Request is the routing decision plus host.Host.Request.
func BenchmarkRequestLocal(b *testing.B) { benchRequest(b, 0, 0) }

// BenchmarkRequestRemote: the agent is owned by the other member: encode,
// gRPC over loopback, the router actor, the host, and back.
func BenchmarkRequestRemote(b *testing.B) { benchRequest(b, 1, 0) }

// The Parallel variants run GOMAXPROCS callers (2 on the benchmark
// machine), the Parallel64 ones 32 per GOMAXPROCS (64 there, like
// veil-load's default clients), each on its own agent.
func BenchmarkRequestLocalParallel(b *testing.B)    { benchRequest(b, 0, 1) }
func BenchmarkRequestRemoteParallel(b *testing.B)   { benchRequest(b, 1, 1) }
func BenchmarkRequestLocalParallel64(b *testing.B)  { benchRequest(b, 0, 32) }
func BenchmarkRequestRemoteParallel64(b *testing.B) { benchRequest(b, 1, 32) }

// BenchmarkFailover kills one of three members (rotating) per iteration
// and measures the time from the kill until an agent the victim owned
// answers through a survivor, as a client retrying at once would see it;
// the victim then rejoins at its address and the cluster settles before
// the next sample. It reports the p50, p99 and max over b.N samples in ms
// (ns/op is the mean), and the p50 of when the asking survivor's topology
// dropped the victim; use -benchtime 30x.
//
// In one process the members do not poll independently: protoactor's
// automanaged provider holds a package-level mutex across its poll and its
// sleep, so the members' polls take turns and each member polls once per
// 3 × RefreshEvery. "refresh=1s" is production's setting as configured
// (each member polling every 3 s here); "poll=1s" sets RefreshEvery to
// 1s/3 so that each member polls once a second, as separate processes
// with the default do.
func BenchmarkFailover(b *testing.B) {
	b.Run("refresh=1s", func(b *testing.B) { benchFailover(b, time.Second) })
	b.Run("poll=1s", func(b *testing.B) { benchFailover(b, time.Second/3) })
}

func benchFailover(b *testing.B, refresh time.Duration) {
	nodes, slots, seeds := startBenchCluster(b, 3, refresh, false)
	var samples, detect []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		vi := i % len(nodes)
		victim, via := nodes[vi], nodes[(vi+1)%len(nodes)]
		ctx := context.Background()
		// A fresh agent owned by the victim, active there.
		id := agentsOwnedBy(via, victim.member.Self(), fmt.Sprintf("fo%d", i), 1)[0]
		v, err := via.member.Request(ctx, id, &Ping{})
		if err != nil || v.(*Pong).Member != victim.name {
			b.Fatalf("before the kill: %v %v", v, err)
		}
		// Start the kill at a random phase of the survivors' polling.
		time.Sleep(rand.N(3 * refresh))
		b.StartTimer()

		t0 := time.Now()
		victim.kill()
		// When the survivor's topology drops the victim, apart from
		// when the agent answers.
		leftc := make(chan time.Duration, 1)
		go func() {
			for len(via.member.Members()) != len(nodes)-1 && time.Since(t0) < time.Minute {
				time.Sleep(time.Millisecond)
			}
			leftc <- time.Since(t0)
		}()
		var answered time.Duration
		for answered == 0 {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			v, err := via.member.Request(rctx, id, &Ping{})
			cancel()
			if err == nil {
				if p := v.(*Pong); p.Member == victim.name {
					b.Fatalf("agent %s answered by the killed member", id)
				}
				answered = time.Since(t0)
			}
			if err != nil {
				time.Sleep(time.Millisecond) // a client retrying at once
			}
			if time.Since(t0) > time.Minute {
				b.Fatalf("agent %s not answered a minute after its member was killed: %v", id, err)
			}
		}
		b.StopTimer()
		samples = append(samples, answered)
		detect = append(detect, <-leftc)

		// The victim rejoins at its address; wait until all agree.
		nodes[vi] = startBenchMember(b, victim.name, slots[vi], seeds, refresh, false)
		for _, n := range nodes {
			waitSees(b, n, len(nodes))
		}
		b.StartTimer()
	}
	b.StopTimer()
	pct := func(s []time.Duration, p float64) float64 {
		s = slices.Clone(s)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(float64(len(s))*p))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(samples, 0.50), "p50-ms")
	b.ReportMetric(pct(samples, 0.99), "p99-ms")
	b.ReportMetric(pct(samples, 1), "max-ms")
	b.ReportMetric(pct(detect, 0.50), "left-p50-ms")
	b.ReportMetric(float64(len(samples)), "samples")
}
