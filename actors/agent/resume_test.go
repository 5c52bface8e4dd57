package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/chains"
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
		v, err := env.Reads().Request(ctx, a.ID, &agent.Get{AccountID: moneytest.Account})
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

// An agent created without gas (a real network has no faucet) keeps its
// name registration pending, not failed; it is retried on the agent's
// requests at most every minute, and registers once the agent has funds.
func TestRegistrationWaitsForFunds(t *testing.T) {
	ctx := context.Background()
	clock := moneytest.NewClock(time.Now())
	env := moneytest.NewEnv(t, clock)
	env.Chain.FailRegistrations(fmt.Errorf("%w: ethereum: the node refused the transaction: Sender doesn't have enough funds to send tx", chains.ErrInsufficientFunds))
	a := env.CreateAgent("pauper")
	get := func() string { // as the API reads: from the snapshot when one serves
		t.Helper()
		v, err := env.Reads().Request(ctx, a.ID, &agent.Get{AccountID: moneytest.Account})
		if err != nil {
			t.Fatal(err)
		}
		return v.(*agent.Record).Registration["ethereum"]
	}
	if got := get(); got != agent.SetupPending {
		t.Fatalf("registration without funds: %q, want pending", got)
	}
	tries := len(env.Chain.Registrations())
	// Within the minute, requests do not hammer the chain.
	clock.Advance(30 * time.Second)
	for range 3 {
		get()
	}
	if n := len(env.Chain.Registrations()); n != tries {
		t.Fatalf("%d registration attempts within the minute, want %d", n, tries)
	}
	// Still no funds a minute later: tried again, still pending.
	clock.Advance(31 * time.Second)
	if got := get(); got != agent.SetupPending || len(env.Chain.Registrations()) != tries+1 {
		t.Fatalf("after a minute without funds: %q, %d attempts", got, len(env.Chain.Registrations()))
	}
	// Funded: the next retry registers and records it.
	env.Chain.FailRegistrations(nil)
	clock.Advance(time.Minute)
	if got := get(); got != agent.SetupDone+" 0xname" {
		t.Fatalf("after funding: %q", got)
	}
	clock.Advance(time.Hour)
	get()
	if n := len(env.Chain.Registrations()); n != tries+2 {
		t.Fatalf("%d registration attempts, want %d (none after it was done)", n, tries+2)
	}
}
