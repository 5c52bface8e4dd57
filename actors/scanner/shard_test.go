package scanner_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
)

// place is a rendezvous placement like the cluster's: a member change
// moves only the agents of the members that came or went.
func place(members []string, id string) string {
	var best string
	var top uint64
	for _, m := range members {
		h := fnv.New64a()
		_, _ = h.Write([]byte(m + "\x00" + id))
		if s := h.Sum64(); best == "" || s > top {
			best, top = m, s
		}
	}
	return best
}

// cluster is the test's topology: each member's own view of the member
// list (members may disagree for a while, as in a real cluster).
type cluster struct {
	mu    sync.Mutex
	views map[string][]string
	// changed is closed and replaced by every see, as the cluster
	// member's (runtime/cluster.Member.Changed).
	changed chan struct{}
}

func (c *cluster) see(members []string, who ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range who {
		c.views[w] = slices.Clone(members)
	}
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

// topology is Options.Topology over see.
func (c *cluster) topology() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

func (c *cluster) placement(self string) func() scanner.View {
	return func() scanner.View {
		c.mu.Lock()
		ms := slices.Clone(c.views[self])
		c.mu.Unlock()
		return scanner.View{Members: ms, Self: self, Place: place}
	}
}

// counting counts the deliveries of each (agent, tx) pair.
type counting struct {
	scanner.Agents
	mu sync.Mutex
	n  map[string]int
}

func (c *counting) Request(ctx context.Context, id string, msg any) (any, error) {
	if d, ok := msg.(*agent.DeliverPayments); ok {
		c.mu.Lock()
		for _, p := range d.Payments {
			c.n[id+"/"+p.TxHash]++
		}
		c.mu.Unlock()
	}
	return c.Agents.Request(ctx, id, msg)
}

func (c *counting) count(id, tx string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id+"/"+tx]
}

func (c *counting) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// TestShardedScanningOverTopologyChanges: members scan only for the agents
// they own, members join and leave between batches of payments (one view
// lagging behind the others for a while), and every payment ends up
// recorded and notified exactly once; while the members agree on the view
// each payment is even delivered exactly once. The shards of views nobody
// holds any more are collected.
func TestShardedScanningOverTopologyChanges(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
	var agents []*agent.Record
	for i := range 9 {
		agents = append(agents, env.CreateAgent(fmt.Sprintf("agent-%d", i)))
	}
	top := &cluster{views: map[string][]string{}}
	deliveries := &counting{Agents: env.Host, n: map[string]int{}}
	members := map[string]*scanner.Scanner{}
	for _, m := range []string{"a", "b", "c"} {
		members[m] = scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: deliveries, Keys: agent.EnclaveKeys(env.Enclave),
			Log: env.Log, PageSize: 4, Placement: top.placement(m), Watch: scanner.WatchAnnouncements})
	}
	paid := map[string][]string{} // agent id → its payments' txs
	batch := func(n int) []string {
		var txs []string
		env.Chain.Announce(pay(t, stranger(t), "9", fmt.Sprintf("0xs%d", n)))
		for i, a := range agents {
			tx := fmt.Sprintf("0x%d%d", n, i)
			env.Chain.Announce(pay(t, a.MetaAddresses["ethereum"], "1", tx))
			paid[a.ID] = append(paid[a.ID], tx)
			txs = append(txs, tx)
		}
		return txs
	}
	run := func(who ...string) {
		t.Helper()
		for _, m := range who {
			if _, err := members[m].ScanOnce(ctx); err != nil {
				t.Fatalf("member %s: %v", m, err)
			}
		}
	}
	exactlyOnce := func(step string) {
		t.Helper()
		for _, a := range agents {
			want := len(paid[a.ID])
			if n := moneytest.Count(env.Inbox(a.ID), agent.NotePaymentReceived); n != want {
				t.Fatalf("%s: %s has %d payment_received, want %d", step, a.Name, n, want)
			}
			ps, err := state.NewPayments(env.Store, a.ID, nil).Received(ctx, chains.Ethereum)
			if err != nil || len(ps) != want {
				t.Fatalf("%s: %s has %d payments (%v), want %d", step, a.Name, len(ps), err, want)
			}
		}
	}
	// deliveredOnce: the step delivered each of txs once and, when
	// nothingElse, nothing else either.
	before := 0
	deliveredOnce := func(step string, txs []string, nothingElse bool) {
		t.Helper()
		if n := deliveries.total() - before; nothingElse && n != len(txs) {
			t.Fatalf("%s: %d deliveries, want %d", step, n, len(txs))
		}
		for i, a := range agents {
			if n := deliveries.count(a.ID, txs[i]); n != 1 {
				t.Fatalf("%s: %s got %s delivered %d times, want once", step, a.Name, txs[i], n)
			}
		}
	}

	// One member owns everything.
	top.see([]string{"a"}, "a")
	before = deliveries.total()
	txs := batch(1)
	run("a")
	exactlyOnce("one member")
	deliveredOnce("one member", txs, true)

	// b joins; both see it before the next batch.
	top.see([]string{"a", "b"}, "a", "b")
	before = deliveries.total()
	txs = batch(2)
	run("a", "b")
	exactlyOnce("b joined")
	deliveredOnce("b joined", txs, true)

	// c joins; b and c see it, a still scans with the old view. b scans
	// first (its new shard moves on while c has not started), then c,
	// then a, which still delivers to agents that are c's now.
	top.see([]string{"a", "b", "c"}, "b", "c")
	batch(3)
	run("b", "c", "a")
	exactlyOnce("c joined, a behind")

	// a catches up with the view. Its new shard starts from a's and b's
	// shards of the old view, b's being a batch behind: a delivers that
	// batch again to its agents (recorded once).
	top.see([]string{"a", "b", "c"}, "a")
	before = deliveries.total()
	txs = batch(4)
	run("c", "a", "b")
	exactlyOnce("three members")
	deliveredOnce("three members", txs, true)

	// A batch that b and c scan but a does not: a dies before its pass
	// and leaves. b and c take its agents over from where a stopped.
	before = deliveries.total()
	txs = batch(5)
	run("b", "c")
	top.see([]string{"b", "c"}, "b", "c")
	run("c", "b")
	exactlyOnce("a left")
	deliveredOnce("a left", txs, true)

	// Nothing is left of the older views.
	run("b", "c")
	sh, err := members["b"].Shards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sh) != 2 {
		t.Fatalf("shards after the topology settled: %v, want b's and c's", sh)
	}
	for k, lanes := range sh {
		if len(lanes) != 1 {
			t.Fatalf("shard %s has lanes %v, want one", k, lanes)
		}
	}
	// Back to one member: it takes everything over, still exactly once.
	top.see([]string{"c"}, "c")
	before = deliveries.total()
	txs = batch(6)
	run("c")
	exactlyOnce("c alone")
	deliveredOnce("c alone", txs, true)
}

// TestShardResumesAfterLostRecords: with every cursor lost, a shard starts
// from genesis; everything comes again and nothing is notified twice.
func TestShardResumesAfterLostRecords(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	alice := env.CreateAgent("alice")
	env.Chain.Announce(pay(t, alice.MetaAddresses["ethereum"], "1", "0x1"))
	top := &cluster{views: map[string][]string{}}
	top.see([]string{"a", "b"}, "a", "b")
	var ss []*scanner.Scanner
	for _, m := range []string{"a", "b"} {
		ss = append(ss, scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: env.Host, Keys: agent.EnclaveKeys(env.Enclave),
			Log: env.Log, PageSize: 4, Placement: top.placement(m)}))
	}
	for range 2 {
		for _, s := range ss {
			if _, err := s.ScanOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := moneytest.Count(env.Inbox(alice.ID), agent.NotePaymentReceived); n != 1 {
			t.Fatalf("%d notifications", n)
		}
		if err := scanner.ForgetCursors(ctx, env.Store, "ethereum"); err != nil {
			t.Fatal(err)
		}
	}
}
