package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

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
