package scanner_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/google/uuid"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/llm"
)

// instantEnv is an env whose agents tell an Instant of the payments they
// send to other agents of the env by name.
func instantEnv(t *testing.T) (*moneytest.Env, *scanner.Instant) {
	t.Helper()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	env.Chain.AnnounceSends()
	return env, withInstant(t, env)
}

// withInstant makes env's agents tell a new Instant of their payments to
// other agents by name.
func withInstant(t *testing.T, env *moneytest.Env) *scanner.Instant {
	t.Helper()
	inst := scanner.NewInstant(scanner.InstantOptions{Store: env.Store, Chains: agent.ChainMap{env.Ref.Chain(): env.Ref},
		Agents: hostOf{env}, Keys: agent.EnclaveKeys(env.Enclave), Log: env.Log})
	t.Cleanup(inst.Stop)
	env.Configure = func(d *agent.Deps) {
		d.Models = func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) }
		d.Sent = inst.Sent
	}
	env.Restart()
	return inst
}

// notifiedOnce checks that the payee has the payment of tx, one
// payment_received, and that the scan that finds it afterwards delivers
// nothing new.
func notifiedOnce(t *testing.T, env *moneytest.Env, inst *scanner.Instant, payee string, tx string) {
	t.Helper()
	// The payer's request returned after Sent: the delivery it started is
	// the only one under way.
	inst.Drain()
	if n := moneytest.Count(env.Inbox(payee), agent.NotePaymentReceived); n != 1 {
		t.Fatalf("payee has %d payment_received before any scan, want 1", n)
	}
	ps, err := state.NewPayments(env.Store, payee, nil).Received(ctx, env.Ref.Chain())
	if err != nil || len(ps) != 1 || ps[0].TxHash != tx {
		t.Fatalf("payee's payments %+v %v, want the one of %s", ps, err, tx)
	}
	if rep := scan(t, newScanner(env, nil)); rep.Matches != 1 || rep.New != 0 {
		t.Fatalf("scan after the instant notify: %+v", rep)
	}
	if n := moneytest.Count(env.Inbox(payee), agent.NotePaymentReceived); n != 1 {
		t.Fatalf("payee has %d payment_received after the scan", n)
	}
}

// TestInstantNotifyOfAScheduledPayment: a schedule's run that pays
// bob.veil notifies bob at once, as a chat's payment does.
func TestInstantNotifyOfAScheduledPayment(t *testing.T) {
	env, inst := instantEnv(t)
	alice, bob := env.CreateAgent("alice"), env.CreateAgent("bob")
	sc, err := state.NewSchedules(env.Store, alice.ID, env.Clock.Now).Create(ctx, tools.Schedule{
		Recipient: "bob", Amount: "0.25", Asset: "ETH", Chain: chains.Ethereum, Interval: tools.Daily})
	if err != nil {
		t.Fatal(err)
	}
	env.Clock.Set(sc.NextRun)
	v, err := env.Host.Request(ctx, alice.ID, &agent.RunSchedule{ScheduleID: sc.ID, Slot: sc.NextRun})
	if err != nil {
		t.Fatal(err)
	}
	if rep := v.(*agent.RunReport); rep.Outcome != agent.RunPaid {
		t.Fatalf("run: %+v", rep)
	}
	sends := env.Chain.Sends()
	if len(sends) != 1 {
		t.Fatalf("sends: %+v", sends)
	}
	notifiedOnce(t, env, inst, bob.ID, sends[0].TxHash)
}

// TestInstantNotifyOfAnApprovedPayment: a chat's payment held for the
// owner's approval notifies nobody; once the owner approves it, it is sent
// and bob is notified at once.
func TestInstantNotifyOfAnApprovedPayment(t *testing.T) {
	env, inst := instantEnv(t)
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wallet := walletsig.EVMAddress(&key.PublicKey)
	v, err := env.Host.Request(ctx, uuid.NewString(), &agent.Create{AccountID: moneytest.Account, Name: "alice", Chain: string(chains.Ethereum),
		Chains: []chains.ID{chains.Ethereum}, OwnerWallet: wallet, OwnerScheme: "eip191"})
	if err != nil {
		t.Fatal(err)
	}
	alice := v.(*agent.Record)
	bob := env.CreateAgent("bob")
	pol := policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.1"}}}
	hash, err := policy.Hash(pol)
	if err != nil {
		t.Fatal(err)
	}
	pm := walletsig.PolicyMessage(hash, alice.ID, wallet, env.Clock.Now())
	if _, err := env.Host.Request(ctx, alice.ID, &agent.SetPolicy{AccountID: moneytest.Account, Policy: pol, Message: pm, Signature: walletsig.SignEVM(key, pm)}); err != nil {
		t.Fatal(err)
	}

	v, err = env.Host.Request(ctx, alice.ID, &agent.Chat{AccountID: moneytest.Account, Message: "send 0.5 eth to bob.veil", IdempotencyKey: "pay-bob-held"})
	if err != nil {
		t.Fatal(err)
	}
	if r := v.(*agent.ChatReply); len(r.ToolCalls) != 1 || !strings.Contains(r.ToolCalls[0].Detail, tools.StatusPendingApproval) {
		t.Fatalf("chat: %+v", r)
	}
	v, err = env.Host.Request(ctx, alice.ID, &agent.ListApprovals{AccountID: moneytest.Account, Status: policy.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	held := v.([]agent.ApprovalView)
	if len(held) != 1 || len(env.Chain.Sends()) != 0 {
		t.Fatalf("held: %+v; sends %+v", held, env.Chain.Sends())
	}
	inst.Drain()
	if n := moneytest.Count(env.Inbox(bob.ID), agent.NotePaymentReceived); n != 0 {
		t.Fatalf("bob has %d payment_received for a held payment", n)
	}

	am := walletsig.ApprovalMessage(held[0].ID, alice.ID, wallet, false, env.Clock.Now())
	v, err = env.Host.Request(ctx, alice.ID, &agent.DecideApproval{AccountID: moneytest.Account, ApprovalID: held[0].ID, Decision: "approve",
		Message: am, Signature: walletsig.SignEVM(key, am)})
	if err != nil {
		t.Fatal(err)
	}
	d := v.(*agent.ApprovalDecision)
	sends := env.Chain.Sends()
	if d.Status != policy.StatusApproved || len(sends) != 1 || d.TxHash != sends[0].TxHash {
		t.Fatalf("decision %+v; sends %+v", d, sends)
	}
	notifiedOnce(t, env, inst, bob.ID, d.TxHash)
}
