package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/persistence"
)

// A crash between storing a new agent and recording its name registration
// leaves the registration "pending"; the next activation registers (an
// idempotent call) and records it, once.
func TestPendingRegistrationIsResumedOnActivation(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	a := env.CreateAgent("resumer")
	if got := env.Chain.Registrations(); !slices.Equal(got, []string{"resumer"}) {
		t.Fatalf("registrations after create: %v", got)
	}
	// What the crash leaves behind: the agent stored, its registration pending.
	rec, err := env.Store.Get(ctx, agent.TableAgents, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var stored agent.Record
	_ = json.Unmarshal(rec.Value, &stored)
	stored.Registration["ethereum"] = agent.SetupPending
	raw, _ := json.Marshal(stored)
	if _, err := env.Store.Apply(ctx, persistence.Put(agent.TableAgents, a.ID, raw, persistence.AtVersion(rec.Version))); err != nil {
		t.Fatal(err)
	}
	env.Restart()

	for i := 0; i < 3; i++ {
		v, err := env.Host.Request(ctx, a.ID, &agent.Get{AccountID: moneytest.Account})
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(*agent.Record).Registration["ethereum"]; got != agent.SetupDone+" 0xname" {
			t.Fatalf("request %d: registration %q, want done", i, got)
		}
	}
	if got := env.Chain.Registrations(); !slices.Equal(got, []string{"resumer", "resumer"}) {
		t.Fatalf("registrations: %v, want create's and one resume", got)
	}
	// Recorded durably: another restart registers nothing more.
	env.Restart()
	if _, err := env.Host.Request(ctx, a.ID, &agent.Get{AccountID: moneytest.Account}); err != nil {
		t.Fatal(err)
	}
	if got := env.Chain.Registrations(); len(got) != 2 {
		t.Fatalf("registrations after a second restart: %v", got)
	}
}
