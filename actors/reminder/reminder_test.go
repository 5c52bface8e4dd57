package reminder_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/reminder"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
)

var ctx = context.Background()

type fixture struct {
	*moneytest.Env
	alice, bob *agent.Record
	rem        *reminder.Reminder
}

func setup(t *testing.T, start time.Time) *fixture {
	t.Helper()
	env := moneytest.NewEnv(t, moneytest.NewClock(start))
	f := &fixture{Env: env}
	f.alice = env.CreateAgent("alice")
	f.bob = env.CreateAgent("bob")
	f.newReminder()
	return f
}

// newReminder replaces the reminder (a restarted node has a fresh one).
func (f *fixture) newReminder() {
	f.rem = reminder.New(reminder.Options{Store: f.Store, Agents: f.Host, Now: f.Clock.Now, Log: f.Log})
}

func (f *fixture) schedule(t *testing.T, interval string, end *time.Time) tools.Schedule {
	t.Helper()
	sc, err := state.NewSchedules(f.Store, f.alice.ID, f.Clock.Now).Create(ctx, tools.Schedule{
		Recipient: "bob", Amount: "1.5", Asset: "ETH", Chain: chains.Ethereum, Interval: interval, EndDate: end,
	})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func (f *fixture) get(t *testing.T, id string) tools.Schedule {
	t.Helper()
	sc, err := state.NewSchedules(f.Store, f.alice.ID, f.Clock.Now).Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func (f *fixture) runDue(t *testing.T) reminder.Report {
	t.Helper()
	rep, err := f.rem.RunDue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func (f *fixture) action(t *testing.T, id, action string) (*tools.Schedule, error) {
	t.Helper()
	v, err := f.Host.Request(ctx, f.alice.ID, &agent.ScheduleAction{AccountID: moneytest.Account, ScheduleID: id, Action: action})
	if err != nil {
		return nil, err
	}
	return v.(*tools.Schedule), nil
}

func date(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }

// TestSlots walks daily, weekly and monthly schedules through their slots
// on the fake clock: each slot pays once, with the slot's idempotency key,
// to bob's meta-address; monthly keeps the day (Jan 31 → Feb 29 in 2028, a
// leap year → Mar 31 → Apr 30), and a passivated agent is woken.
func TestSlots(t *testing.T) {
	start := date(2028, time.January, 31, 10)
	f := setup(t, start)
	daily := f.schedule(t, tools.Daily, nil)
	weekly := f.schedule(t, tools.Weekly, nil)
	monthly := f.schedule(t, tools.Monthly, nil)

	if rep := f.runDue(t); rep.Due != 0 || len(f.Chain.Sends()) != 0 {
		t.Fatalf("nothing is due at creation: %+v", rep)
	}
	wantMonthly := []time.Time{date(2028, time.February, 29, 10), date(2028, time.March, 31, 10), date(2028, time.April, 30, 10), date(2028, time.May, 31, 10)}
	if got := f.get(t, monthly.ID).NextRun; !got.Equal(wantMonthly[0]) {
		t.Fatalf("monthly first run %s, want %s", got, wantMonthly[0])
	}
	paid := map[string]int{}
	for day := 1; day <= 91; day++ {
		f.Clock.Set(start.Add(time.Duration(day) * 24 * time.Hour))
		if day%10 == 0 {
			f.Host.Passivate(f.alice.ID) // due slots must wake a passivated agent
		}
		rep := f.runDue(t)
		if rep.Errors > 0 || rep.Retry > 0 || rep.Failed > 0 {
			t.Fatalf("day %d: %+v", day, rep)
		}
		paid["daily"]++
		if day%7 == 0 {
			paid["weekly"]++
		}
		if want := paid["daily"] + paid["weekly"] + paid["monthly"]; rep.Paid < 1 || len(f.Chain.Sends()) < want {
			t.Fatalf("day %d: report %+v, %d sends, want %d", day, rep, len(f.Chain.Sends()), want)
		}
		paid["monthly"] = len(f.Chain.Sends()) - paid["daily"] - paid["weekly"]
	}
	if paid["monthly"] != 3 { // Feb 29, Mar 31, Apr 30 (May 31 is day 121)
		t.Fatalf("monthly paid %d times in 91 days, want 3", paid["monthly"])
	}
	if got := f.get(t, monthly.ID).NextRun; !got.Equal(wantMonthly[3]) {
		t.Fatalf("monthly next run %s, want %s", got, wantMonthly[3])
	}
	if got, want := f.get(t, daily.ID).NextRun, start.Add(92*24*time.Hour); !got.Equal(want) {
		t.Fatalf("daily next run %s, want %s", got, want)
	}
	if got, want := f.get(t, weekly.ID).NextRun, start.Add(13*7*24*time.Hour+7*24*time.Hour); !got.Equal(want) {
		t.Fatalf("weekly next run %s, want %s", got, want)
	}
	// Every payment: its own slot key, bob's meta-address, the amount.
	keys := map[string]bool{}
	for _, s := range f.Chain.Sends() {
		if keys[s.Key] {
			t.Fatalf("key %s paid twice", s.Key)
		}
		keys[s.Key] = true
		if s.Meta != f.bob.MetaAddresses["ethereum"] || s.Amount != "1.5" || s.Asset != "ETH" || s.From != f.alice.Addresses["ethereum"] {
			t.Fatalf("send %+v", s)
		}
	}
	for _, m := range wantMonthly[:3] {
		if !keys[agent.SlotKey(monthly.ID, m)] {
			t.Fatalf("no payment with the key of monthly slot %s", m)
		}
	}
	if n := moneytest.Count(f.Inbox(f.alice.ID), agent.NoteScheduleExecuted); n != len(f.Chain.Sends()) {
		t.Fatalf("%d schedule_executed notifications for %d payments", n, len(f.Chain.Sends()))
	}
}

// TestMonthlyNonLeap: Jan 31 2027 → Feb 28 → Mar 31.
func TestMonthlyNonLeap(t *testing.T) {
	start := date(2027, time.January, 31, 23)
	f := setup(t, start)
	sc := f.schedule(t, tools.Monthly, nil)
	for _, want := range []time.Time{date(2027, time.February, 28, 23), date(2027, time.March, 31, 23), date(2027, time.April, 30, 23)} {
		if got := f.get(t, sc.ID).NextRun; !got.Equal(want) {
			t.Fatalf("next run %s, want %s", got, want)
		}
		f.Clock.Set(want)
		if rep := f.runDue(t); rep.Paid != 1 {
			t.Fatalf("at %s: %+v", want, rep)
		}
	}
}

// TestPauseResumeCancel: a paused schedule pays nothing; resuming skips
// the slots of the pause; cancel is final.
func TestPauseResumeCancel(t *testing.T) {
	start := date(2027, time.June, 1, 12)
	f := setup(t, start)
	sc := f.schedule(t, tools.Daily, nil)
	if _, err := f.action(t, sc.ID, "resume"); !errors.Is(err, agent.ErrScheduleTransition) {
		t.Fatalf("resume of an active schedule: %v", err)
	}
	p, err := f.action(t, sc.ID, "pause")
	if err != nil || p.Status != "paused" {
		t.Fatalf("pause: %+v %v", p, err)
	}
	f.Clock.Set(start.Add(3*24*time.Hour + time.Hour))
	if rep := f.runDue(t); rep.Due != 0 || len(f.Chain.Sends()) != 0 {
		t.Fatalf("paused schedule ran: %+v", rep)
	}
	r, err := f.action(t, sc.ID, "resume")
	if err != nil || r.Status != "active" || !r.NextRun.Equal(start.Add(4*24*time.Hour)) {
		t.Fatalf("resume: %+v %v (want next run the first slot after now)", r, err)
	}
	f.Clock.Set(start.Add(4 * 24 * time.Hour))
	if rep := f.runDue(t); rep.Paid != 1 {
		t.Fatalf("after resume: %+v", rep)
	}
	c, err := f.action(t, sc.ID, "cancel")
	if err != nil || c.Status != "cancelled" {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	f.Clock.Set(start.Add(10 * 24 * time.Hour))
	if rep := f.runDue(t); rep.Due != 0 || len(f.Chain.Sends()) != 1 {
		t.Fatalf("cancelled schedule ran: %+v, %d sends", rep, len(f.Chain.Sends()))
	}
	for _, a := range []string{"resume", "pause", "cancel"} {
		if _, err := f.action(t, sc.ID, a); !errors.Is(err, agent.ErrScheduleTransition) {
			t.Fatalf("%s of a cancelled schedule: %v", a, err)
		}
	}
	if _, err := f.action(t, "00000000-0000-4000-8000-000000000000", "pause"); !errors.Is(err, agent.ErrScheduleNotFound) {
		t.Fatalf("unknown schedule: %v", err)
	}
	// Another account sees no agent.
	if _, err := f.Host.Request(ctx, f.alice.ID, &agent.ScheduleAction{AccountID: "other", ScheduleID: sc.ID, Action: "pause"}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("foreign account: %v", err)
	}
}

// TestEndDate: the schedule pays through its end date, then is cancelled.
func TestEndDate(t *testing.T) {
	start := date(2027, time.June, 1, 12)
	f := setup(t, start)
	end := date(2027, time.June, 3, 23)
	sc := f.schedule(t, tools.Daily, &end)
	for d := 1; d <= 5; d++ {
		f.Clock.Set(start.Add(time.Duration(d) * 24 * time.Hour))
		f.runDue(t)
	}
	if n := len(f.Chain.Sends()); n != 2 {
		t.Fatalf("%d payments, want 2 (June 2 and 3)", n)
	}
	if got := f.get(t, sc.ID); got.Status != "cancelled" {
		t.Fatalf("status %s after the end date", got.Status)
	}
}

// TestRestartAcrossMissedSlots: the node is down for three daily slots;
// after the restart one payment runs (not three) and the next run is the
// first slot after now.
func TestRestartAcrossMissedSlots(t *testing.T) {
	start := date(2027, time.March, 1, 8)
	f := setup(t, start)
	sc := f.schedule(t, tools.Daily, nil)
	f.Restart()
	f.newReminder()
	f.Clock.Set(start.Add(3*24*time.Hour + 12*time.Hour)) // slots Mar 2, 3, 4 missed
	rep := f.runDue(t)
	if rep.Paid != 1 || len(f.Chain.Sends()) != 1 {
		t.Fatalf("after downtime: %+v, %d sends; want one run", rep, len(f.Chain.Sends()))
	}
	if s := f.Chain.Sends()[0]; s.Key != agent.SlotKey(sc.ID, start.Add(24*time.Hour)) {
		t.Fatalf("paid key %s, want the first missed slot's", s.Key)
	}
	got := f.get(t, sc.ID)
	if want := start.Add(4 * 24 * time.Hour); !got.NextRun.Equal(want) || got.LastRun == nil || !got.LastRun.Equal(f.Clock.Now()) {
		t.Fatalf("after catch-up: next %s (want %s), last %v", got.NextRun, want, got.LastRun)
	}
	if rep := f.runDue(t); rep.Due != 0 {
		t.Fatalf("a second pass ran again: %+v", rep)
	}
}

// TestCrashAfterBroadcast: the node dies right after the payment was
// broadcast, before anything of it was stored. After the restart the slot
// runs again with the same idempotency key: the chain answers the first
// transaction, nothing is paid twice, one schedule_executed is raised.
func TestCrashAfterBroadcast(t *testing.T) {
	start := date(2027, time.March, 1, 8)
	f := setup(t, start)
	sc := f.schedule(t, tools.Daily, nil)
	crash := true
	f.Failures = func(name string) error {
		if name == agent.FailAfterScheduleSend && crash {
			return errors.New("crash")
		}
		return nil
	}
	f.Clock.Set(start.Add(24 * time.Hour))
	if rep := f.runDue(t); rep.Errors != 1 || rep.Paid != 0 {
		t.Fatalf("crashing run: %+v", rep)
	}
	if n := len(f.Chain.Sends()); n != 1 {
		t.Fatalf("%d sends after the crash, want 1 (broadcast)", n)
	}
	crash = false
	f.Restart()
	f.newReminder()
	rep := f.runDue(t)
	if rep.Paid != 1 || len(f.Chain.Sends()) != 1 {
		t.Fatalf("after restart: %+v, %d sends; want the same single payment", rep, len(f.Chain.Sends()))
	}
	if n := moneytest.Count(f.Inbox(f.alice.ID), agent.NoteScheduleExecuted); n != 1 {
		t.Fatalf("%d schedule_executed notifications, want 1", n)
	}
	if got := f.get(t, sc.ID); !got.NextRun.Equal(start.Add(2 * 24 * time.Hour)) {
		t.Fatalf("next run %s", got.NextRun)
	}
	// A duplicate wake-up of the old slot does nothing.
	v, err := f.Host.Request(ctx, f.alice.ID, &agent.RunSchedule{ScheduleID: sc.ID, Slot: start.Add(24 * time.Hour)})
	if err != nil || v.(*agent.RunReport).Outcome != agent.RunSkipped {
		t.Fatalf("stale slot: %+v %v", v, err)
	}
}

// TestRetryThenFail: a failing payment is retried after each backoff (the
// retry time survives a new reminder), then schedule_failed is raised once
// and the schedule moves on to its next slot, which pays.
func TestRetryThenFail(t *testing.T) {
	start := date(2027, time.March, 1, 8)
	f := setup(t, start)
	sc := f.schedule(t, tools.Daily, nil)
	f.Chain.FailSends(chains.ErrInsufficientFunds)
	slot := start.Add(24 * time.Hour)
	f.Clock.Set(slot)
	if rep := f.runDue(t); rep.Retry != 1 {
		t.Fatalf("first failure: %+v", rep)
	}
	// Before the backoff nothing is tried, also by a fresh reminder (the
	// retry time is stored with the slot).
	f.Clock.Advance(30 * time.Second)
	f.newReminder()
	if rep := f.runDue(t); rep.Retry != 1 || rep.Paid != 0 {
		t.Fatalf("during backoff: %+v", rep)
	}
	for i, wait := range agent.RetryBackoff {
		f.Clock.Set(slot)
		for _, w := range agent.RetryBackoff[:i+1] {
			f.Clock.Advance(w)
		}
		rep := f.runDue(t)
		if i < len(agent.RetryBackoff)-1 && rep.Retry != 1 {
			t.Fatalf("retry %d (after %s): %+v", i+1, wait, rep)
		}
		if i == len(agent.RetryBackoff)-1 && rep.Failed != 1 {
			t.Fatalf("last retry: %+v", rep)
		}
	}
	in := f.Inbox(f.alice.ID)
	if moneytest.Count(in, agent.NoteScheduleFailed) != 1 || moneytest.Count(in, agent.NoteScheduleExecuted) != 0 {
		t.Fatalf("inbox %+v", in)
	}
	got := f.get(t, sc.ID)
	if got.Status != "active" || !got.NextRun.After(slot) {
		t.Fatalf("after the failed slot: %+v", got)
	}
	// The next slot pays when the chain works again.
	f.Chain.FailSends(nil)
	f.Clock.Set(got.NextRun)
	if rep := f.runDue(t); rep.Paid != 1 {
		t.Fatalf("next slot: %+v", rep)
	}
}

// TestPermanentFailure: an unknown recipient is not retried.
func TestPermanentFailure(t *testing.T) {
	start := date(2027, time.March, 1, 8)
	f := setup(t, start)
	sc, err := state.NewSchedules(f.Store, f.alice.ID, f.Clock.Now).Create(ctx, tools.Schedule{
		Recipient: "nobody", Amount: "1", Asset: "ETH", Chain: chains.Ethereum, Interval: tools.Daily,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Clock.Set(sc.NextRun)
	if rep := f.runDue(t); rep.Failed != 1 {
		t.Fatalf("%+v", rep)
	}
	if n := moneytest.Count(f.Inbox(f.alice.ID), agent.NoteScheduleFailed); n != 1 {
		t.Fatalf("%d schedule_failed", n)
	}
}
