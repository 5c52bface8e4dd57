//go:build !nodevnet

package httpapi_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/runtime/audit"
)

type scheduleJSON struct {
	ID, Recipient, Amount, Asset, Chain, Interval, Status string
	NextRun                                               time.Time
	LastRun                                               *time.Time
}

// TestSchedulesEndpoints: a schedule made in chat is listed, paused,
// resumed and cancelled over REST with DESIGN.md's transitions; when its
// slot falls due the reminder wakes the agent, which pays bob on the devnet
// (bob's scanner sees it) and raises schedule_executed.
func TestSchedulesEndpoints(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "pay bob 0.001 ETH weekly"})
	if r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "schedule_payment" || out.ToolCalls[0].Status != "success" {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	var list []scheduleJSON
	r = e.do("GET", "/agent/"+a.ID+"/schedules", e.key, nil)
	r.decode(t, &list)
	if r.status != 200 || len(list) != 1 || list[0].Status != "active" || list[0].Recipient != "bob" || list[0].Amount != "0.001" || list[0].Interval != "weekly" || list[0].LastRun != nil {
		t.Fatalf("list = %d %s", r.status, r.body)
	}
	sc := list[0]
	path := "/agent/" + a.ID + "/schedules/" + sc.ID + "/"
	step := func(action string, want int, status string) {
		t.Helper()
		r := e.do("POST", path+action, e.key, nil)
		if r.status != want {
			t.Fatalf("%s = %d %s", action, r.status, r.body)
		}
		if want == 200 {
			var got scheduleJSON
			r.decode(t, &got)
			if got.Status != status || got.ID != sc.ID {
				t.Fatalf("%s → %+v", action, got)
			}
		} else if msg, _ := r.errorBody(t); !strings.Contains(msg, status) {
			t.Fatalf("%s: %q", action, msg)
		}
	}
	step("resume", 409, "active, not paused")
	step("pause", 200, "paused")
	step("pause", 409, "already paused")
	step("resume", 200, "active")

	other := e.newKey("mallory")
	if r := e.do("POST", path+"pause", other, nil); r.status != 404 {
		t.Fatalf("foreign pause = %d", r.status)
	}
	if r := e.do("GET", "/agent/"+a.ID+"/schedules", other, nil); r.status != 404 {
		t.Fatalf("foreign list = %d", r.status)
	}
	if r := e.do("POST", "/agent/"+a.ID+"/schedules/00000000-0000-4000-8000-000000000000/pause", e.key, nil); r.status != 404 {
		t.Fatalf("unknown schedule = %d", r.status)
	}
	if r := e.do("POST", "/agent/"+a.ID+"/schedules/"+sc.ID+"/stop", e.key, nil); r.status != 404 {
		t.Fatalf("unknown action = %d", r.status)
	}

	// A week later the slot is due: the reminder wakes alice, who pays.
	e.startScanner(t)
	e.clock.Advance(7*24*time.Hour + time.Minute)
	rem := reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: e.clock.Now, Log: quietLog()})
	rep, err := rem.RunDue(context.Background())
	if err != nil || rep.Paid != 1 {
		t.Fatalf("run: %+v %v", rep, err)
	}
	waitFor(t, "bob receives the scheduled payment", func() bool {
		return countType(e.notes(t, b.ID), agent.NotePaymentReceived) == 1
	})
	in := e.notes(t, a.ID)
	if countType(in, agent.NoteScheduleExecuted) != 1 {
		t.Fatalf("alice's inbox %+v", in.Notifications)
	}
	r = e.do("GET", "/agent/"+a.ID+"/schedules", e.key, nil)
	r.decode(t, &list)
	if list[0].LastRun == nil || !list[0].NextRun.After(e.clock.Now()) {
		t.Fatalf("after the run: %s", r.body)
	}

	step("cancel", 200, "cancelled")
	step("resume", 409, "cancelled, which is final")
	step("cancel", 409, "cancelled, which is final")
}

// TestScheduleCrashAfterBroadcastOnDevnet: the agent dies right after the
// scheduled payment was broadcast by the real EVM connector. The slot runs
// again with the same idempotency key: the connector's ledger answers the
// first transaction, bob is paid once, alice is told once.
func TestScheduleCrashAfterBroadcastOnDevnet(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	b := e.create(t, newEVMOwner(t), "bob", "ethereum")
	if r, out := e.chat(t, a.ID, e.key, map[string]string{"message": "schedule 0.003 ETH to bob daily"}); r.status != 200 || len(out.ToolCalls) != 1 || out.ToolCalls[0].Status != "success" {
		t.Fatalf("chat = %d %s", r.status, r.body)
	}
	crash := func(name string) error {
		if name == agent.FailAfterScheduleSend {
			return errors.New("crash after broadcast")
		}
		return nil
	}
	e.fail.Store(&crash)
	e.clock.Advance(24*time.Hour + time.Minute)
	rep, err := reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: e.clock.Now, Log: quietLog()}).RunDue(context.Background())
	if err != nil || rep.Errors != 1 || rep.Paid != 0 {
		t.Fatalf("crashing run: %+v %v", rep, err)
	}
	e.fail.Store(nil)
	e.host.Passivate(a.ID) // the next run starts from the store
	rep, err = reminder.New(reminder.Options{Store: e.store, Agents: e.host, Now: e.clock.Now, Log: quietLog()}).RunDue(context.Background())
	if err != nil || rep.Paid != 1 {
		t.Fatalf("run after the crash: %+v %v", rep, err)
	}
	// Two scanner passes over the chain: one payment for bob.
	sc := scanner.New(scanner.Options{Store: e.store, Chain: e.ref, Agents: e.host, Keys: agent.EnclaveKeys(e.enclave), Log: quietLog()})
	for range 2 {
		if _, err := sc.ScanOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := countType(e.notes(t, b.ID), agent.NotePaymentReceived); n != 1 {
		t.Fatalf("bob was paid %d times", n)
	}
	if n := countType(e.notes(t, a.ID), agent.NoteScheduleExecuted); n != 1 {
		t.Fatalf("%d schedule_executed", n)
	}
	// The audit trail: one record of the slot's run (the crashed attempt
	// recorded nothing), and one of bob's payment found by the scanner.
	runs := e.moneyRecords(t, audit.ActionScheduleRun, a.ID)
	if len(runs) != 1 || runs[0].Outcome != audit.OutcomeOK || len(runs[0].PaymentIDs) != 2 {
		t.Fatalf("schedule.run audit records %+v, want one ok with the schedule and its tx", runs)
	}
	if got := e.moneyRecords(t, audit.ActionPaymentReceived, b.ID, runs[0].PaymentIDs[1]); len(got) != 1 || got[0].Source != audit.SourceChain {
		t.Fatalf("bob's payment.received audit records %+v, want 1", got)
	}
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
