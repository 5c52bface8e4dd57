package agent_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/persistence"
)

// counting counts the requests that reach the actors.
type counting struct {
	next func() agent.Requester
	n    atomic.Int64
}

func (c *counting) Request(ctx context.Context, id string, msg any) (any, error) {
	c.n.Add(1)
	return c.next().Request(ctx, id, msg)
}

// waitFor polls cond until it holds, with a deadline generous for a loaded
// machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReadsAreServedFromTheSnapshot(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	a := env.CreateAgent("reader")
	actors := &counting{next: func() agent.Requester { return env.Host }}
	reads := env.Snapshots.Reads(actors)
	get := func(account string) (*agent.Record, error) {
		t.Helper()
		v, err := reads.Request(ctx, a.ID, &agent.Get{AccountID: account})
		if err != nil {
			return nil, err
		}
		return v.(*agent.Record), nil
	}

	for _, tc := range []struct {
		name    string
		account string
		wantErr error
	}{
		{"owner", moneytest.Account, nil},
		{"another account", "acct-2", agent.ErrNotFound},
		{"no account", "", agent.ErrNotFound},
	} {
		rec, err := get(tc.account)
		switch {
		case !errors.Is(err, tc.wantErr):
			t.Errorf("%s: Get error %v, want %v", tc.name, err, tc.wantErr)
		case err == nil && rec.ID != a.ID:
			t.Errorf("%s: Get answered agent %s", tc.name, rec.ID)
		}
	}
	st, err := reads.Request(ctx, a.ID, &agent.GetStatus{AccountID: moneytest.Account})
	if err != nil || st.(*agent.Status).Address != a.Addresses["ethereum"] {
		t.Fatalf("GetStatus = %+v, %v", st, err)
	}
	if n := actors.n.Load(); n != 0 {
		t.Fatalf("%d reads reached the actor; the create's snapshot should serve them", n)
	}

	// Read your writes: a write answers after its snapshot is published.
	if _, err := env.Host.Request(ctx, a.ID, &agent.Notify{Type: "test", Title: "t", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if rec, err := get(moneytest.Account); err != nil || rec.LastNotificationID != 1 {
		t.Fatalf("after a write: %+v, %v; want the written record", rec, err)
	}

	// Passivation drops the snapshot: the next read activates the agent
	// through the actor, which publishes again.
	env.Host.Passivate(a.ID)
	waitFor(t, "the passivated agent's snapshot to go", func() bool { return env.Snapshots.Len() == 0 })
	if rec, err := get(moneytest.Account); err != nil || rec.LastNotificationID != 1 {
		t.Fatalf("after passivation: %+v, %v", rec, err)
	}
	if n := actors.n.Load(); n != 1 {
		t.Fatalf("%d reads reached the actor after passivation, want 1", n)
	}
	if env.Snapshots.Len() != 1 {
		t.Fatal("the new activation published no snapshot")
	}

	// Stopping the host (shutdown) drops every snapshot.
	env.Restart()
	if n := env.Snapshots.Len(); n != 0 {
		t.Fatalf("%d snapshots left after the host stopped", n)
	}
}

// An activation drops what an earlier incarnation of the agent published
// before it loads, so a failed load leaves no snapshot to serve.
func TestFailedActivationLeavesNoSnapshot(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	a := env.CreateAgent("broken")
	if env.Snapshots.Len() != 1 {
		t.Fatal("the create published no snapshot")
	}
	rec, err := env.Store.Get(ctx, agent.TableAgents, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.Apply(ctx, persistence.Put(agent.TableAgents, a.ID, []byte("{not json"), persistence.AtVersion(rec.Version))); err != nil {
		t.Fatal(err)
	}
	load := agent.Loader(agent.Deps{Store: env.Store, Snapshots: env.Snapshots})
	if _, err := load(ctx, a.ID); err == nil {
		t.Fatal("loading a corrupt record succeeded")
	}
	if n := env.Snapshots.Len(); n != 0 {
		t.Fatalf("%d snapshots after a failed activation", n)
	}
}
