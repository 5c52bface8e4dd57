package scanner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
)

// paused fails every delivery while down is set: a member whose pass stops
// part-way (paused, partitioned), leaving its new shard's lanes unmerged.
type paused struct {
	scanner.Agents
	down atomic.Bool
}

func (f *paused) Request(ctx context.Context, id string, msg any) (any, error) {
	if f.down.Load() {
		return nil, errors.New("member paused")
	}
	return f.Agents.Request(ctx, id, msg)
}

// maxShardRecordBytes bounds a shard record with three members, whatever
// the number of view changes: a few lanes of a few one-hold paths.
const maxShardRecordBytes = 4 << 10

// TestReshardRecordsStayBounded: 200 changes of view among three members
// (joins and leaves, members that lag behind, passes that stop part-way
// so shards are copied before they merge their lanes) keep every shard
// record under a bound that does not grow with the number of changes (it
// grew with every change, past the store's 16 MB limit in the cluster heal
// benchmark), and no payment is missed: once the members agree, every
// payment is recorded and notified exactly once.
func TestReshardRecordsStayBounded(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
	var agents []*agent.Record
	for i := range 6 {
		agents = append(agents, env.CreateAgent(fmt.Sprintf("agent-%d", i)))
	}
	names := []string{"a", "b", "c"}
	top := &cluster{views: map[string][]string{}}
	members := map[string]*scanner.Scanner{}
	pausers := map[string]*paused{}
	for _, m := range names {
		pausers[m] = &paused{Agents: env.Host}
		members[m] = scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: pausers[m], Keys: agent.EnclaveKeys(env.Enclave),
			Log: env.Log, PageSize: 2, Placement: top.placement(m), Watch: scanner.WatchAnnouncements})
	}
	views := [][]string{{"a", "b", "c"}, {"a", "b"}, {"b", "c"}, {"a", "c"}, {"a"}, {"b"}, {"c"}}
	rng := rand.New(rand.NewPCG(1, 2))
	paid := map[string]int{}
	biggest := 0
	pausedFor := map[string]int{}
	for step := range 200 {
		// Members joining and leaving alternately, some of them lagging
		// behind (they keep the view they had).
		v := views[step%len(views)]
		if step%2 == 1 {
			v = views[0]
		}
		var who []string
		for _, m := range names {
			if rng.IntN(4) != 0 {
				who = append(who, m)
			}
		}
		top.see(v, who...)
		a := agents[step%len(agents)]
		env.Chain.Announce(pay(t, a.MetaAddresses["ethereum"], "1", fmt.Sprintf("0x%d", step)))
		paid[a.ID]++
		for _, m := range names {
			// Members are paused (SIGSTOP, a partition) for a few
			// changes at a time: their passes make the new shard, then
			// stop at the first delivery, so other members copy shards
			// whose lanes never merged.
			if pausedFor[m] == 0 && rng.IntN(3) == 0 {
				pausedFor[m] = 1 + rng.IntN(6)
			}
			if pausedFor[m] > 0 {
				pausedFor[m]--
				pausers[m].down.Store(true)
			}
			// Its error is the pause's (or a conflict with a member
			// that wrote meanwhile): the next pass goes on.
			_, _ = members[m].ScanOnce(ctx)
			pausers[m].down.Store(false)
		}
		sizes, err := scanner.ShardRecordSizes(ctx, env.Store, "ethereum")
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range sizes {
			biggest = max(biggest, n)
			if n > maxShardRecordBytes {
				t.Fatalf("after %d view changes shard %s is %d bytes, want at most %d", step+1, k, n, maxShardRecordBytes)
			}
		}
	}
	t.Logf("biggest shard record over 200 view changes: %d bytes", biggest)
	// The members agree again: every payment is there, notified once.
	top.see(views[0], names...)
	for range 2 {
		for _, m := range names {
			if _, err := members[m].ScanOnce(ctx); err != nil {
				t.Fatalf("member %s: %v", m, err)
			}
		}
	}
	for _, a := range agents {
		if n := moneytest.Count(env.Inbox(a.ID), agent.NotePaymentReceived); n != paid[a.ID] {
			t.Fatalf("%s has %d payment_received, want %d", a.Name, n, paid[a.ID])
		}
		ps, err := state.NewPayments(env.Store, a.ID, nil).Received(ctx, chains.Ethereum)
		if err != nil || len(ps) != paid[a.ID] {
			t.Fatalf("%s has %d payments (%v), want %d", a.Name, len(ps), err, paid[a.ID])
		}
	}
}

// TestGrownShardRecordIsCompacted: a shard record grown by an older version
// (long paths, repeated many times) is read and written back small by its
// first save, even by a pass that stops part-way (its lanes not merged),
// and no payment is missed or notified twice.
func TestGrownShardRecordIsCompacted(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
	alice := env.CreateAgent("alice")
	for i := range 5 {
		env.Chain.Announce(pay(t, alice.MetaAddresses["ethereum"], "1", fmt.Sprintf("0x%d", i)))
	}
	top := &cluster{views: map[string][]string{}}
	top.see([]string{"a"}, "a")
	type hold struct {
		Members []string `json:"members"`
		Member  string   `json:"member"`
	}
	var paths [][]hold
	for i := range 2000 {
		var p []hold
		for j := range 41 {
			p = append(p, hold{Members: [][]string{{"a", "b"}, {"b", "a"}}[j%2], Member: []string{"a", "b"}[i%2]})
		}
		// The paths name a and b in {a, b}: every agent is in the lane.
		paths = append(paths, p)
	}
	type lane struct {
		Cursor string   `json:"cursor"`
		Paths  [][]hold `json:"paths"`
	}
	raw, err := json.Marshal(map[string]any{"members": []string{"a"}, "self": "a", "gen": 7, "lanes": []lane{{Paths: paths}, {Cursor: "1", Paths: paths}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 1<<20 {
		t.Fatalf("grown record of %d bytes", len(raw))
	}
	if err := scanner.PutRawShard(ctx, env.Store, "ethereum", scanner.ViewID([]string{"a"}), "a", raw); err != nil {
		t.Fatal(err)
	}
	deliveries := &failAfter{Agents: env.Host, left: 1}
	s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: deliveries, Keys: agent.EnclaveKeys(env.Enclave),
		Log: env.Log, PageSize: 4, Placement: top.placement("a"), Watch: scanner.WatchAnnouncements})
	// The first page is delivered and its cursor written; the second
	// page's delivery fails.
	if _, err := s.ScanOnce(ctx); err == nil {
		t.Fatal("the pass did not stop at the second page")
	}
	sizes, err := scanner.ShardRecordSizes(ctx, env.Store, "ethereum")
	if err != nil {
		t.Fatal(err)
	}
	if n := sizes[scanner.ViewID([]string{"a"})+"/a"]; n == 0 || n > maxShardRecordBytes {
		t.Fatalf("shard is %d bytes after its first save, want at most %d (was %d)", n, maxShardRecordBytes, len(raw))
	}
	deliveries.left = 100
	if _, err := s.ScanOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := moneytest.Count(env.Inbox(alice.ID), agent.NotePaymentReceived); n != 5 {
		t.Fatalf("%d notifications, want 5", n)
	}
}

// failAfter fails every delivery after the first left ones.
type failAfter struct {
	scanner.Agents
	left int
}

func (f *failAfter) Request(ctx context.Context, id string, msg any) (any, error) {
	if _, ok := msg.(*agent.DeliverPayments); ok {
		if f.left == 0 {
			return nil, errors.New("member paused")
		}
		f.left--
	}
	return f.Agents.Request(ctx, id, msg)
}
