package scanner_test

import (
	"context"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/llm"
)

// hostOf reaches the env's current host (Restart replaces it).
type hostOf struct{ env *moneytest.Env }

func (h hostOf) Request(ctx context.Context, id string, msg any) (any, error) {
	return h.env.Host.Request(ctx, id, msg)
}

// TestInstantNotifyThenScan: alice pays bob.veil in a chat; bob is
// notified without any scan, from the confirmed transaction, and the scan
// that finds the payment afterwards records and notifies nothing more.
func TestInstantNotifyThenScan(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	env.Chain.AnnounceSends()
	inst := scanner.NewInstant(scanner.InstantOptions{Store: env.Store, Chains: agent.ChainMap{chains.Ethereum: env.Ref},
		Agents: hostOf{env}, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log})
	defer inst.Stop()
	env.Configure = func(d *agent.Deps) {
		d.Models = func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) }
		d.Sent = inst.Sent
	}
	env.Restart()
	alice, bob := env.CreateAgent("alice"), env.CreateAgent("bob")
	carol := env.CreateAgent("carol")

	v, err := env.Host.Request(ctx, alice.ID, &agent.Chat{AccountID: moneytest.Account, Message: "send 0.5 eth to bob.veil", IdempotencyKey: "pay-bob-1"})
	if err != nil {
		t.Fatal(err)
	}
	reply := v.(*agent.ChatReply)
	if len(reply.ToolCalls) != 1 || reply.ToolCalls[0].Status != "success" {
		t.Fatalf("chat: %+v", reply)
	}
	sends := env.Chain.Sends()
	if len(sends) != 1 {
		t.Fatalf("sends: %+v", sends)
	}
	waitFor(t, "bob's payment_received", func() bool {
		return moneytest.Count(env.Inbox(bob.ID), agent.NotePaymentReceived) == 1
	})
	ps, err := state.NewPayments(env.Store, bob.ID, nil).Received(ctx, chains.Ethereum)
	if err != nil || len(ps) != 1 || ps[0].Amount != "0.5" || ps[0].TxHash != sends[0].TxHash {
		t.Fatalf("bob's payments %+v %v", ps, err)
	}

	// The scan finds the same payment: delivered, not new, no second
	// notification.
	s := newScanner(env, nil)
	if rep := scan(t, s); rep.Matches != 1 || rep.New != 0 {
		t.Fatalf("scan after the instant notify: %+v", rep)
	}
	if n := moneytest.Count(env.Inbox(bob.ID), agent.NotePaymentReceived); n != 1 {
		t.Fatalf("bob has %d payment_received after the scan", n)
	}
	// A retried instant delivery is no new payment either.
	rep, err := inst.Deliver(ctx, chains.Ethereum, "bob.veil", sends[0].TxHash)
	if err != nil || rep == nil || rep.New != 0 {
		t.Fatalf("second delivery: %+v %v", rep, err)
	}
	// The payee's own key decides: the transaction pays carol nothing.
	if _, err := inst.Deliver(ctx, chains.Ethereum, "carol.veil", sends[0].TxHash); err == nil {
		t.Fatal("a transaction that does not pay carol was delivered to her")
	}
	if n := moneytest.Count(env.Inbox(carol.ID), agent.NotePaymentReceived); n != 0 {
		t.Fatalf("carol has %d payment_received", n)
	}
}
