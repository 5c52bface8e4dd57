package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/internal/fakeclock"
	"github.com/veilhq/veil/persistence"
)

// dueInvariant: the due index holds exactly one entry per active schedule,
// at its NextRun, and nothing else.
func dueInvariant(t *testing.T, s persistence.Store) {
	t.Helper()
	recs, err := s.List(ctx, TableSchedules, persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range recs {
		var sc tools.Schedule
		json.Unmarshal(r.Value, &sc)
		agentID, _, _ := strings.Cut(r.Key, "/")
		if sc.Status == ScheduleActive {
			want = append(want, DueKey(sc.NextRun, agentID, sc.ID))
		}
	}
	sort.Strings(want)
	got := keys(t, s, TableScheduleDue)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("due index\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func newSchedule(t *testing.T, sch *Schedules, id, interval string, end *time.Time) tools.Schedule {
	t.Helper()
	sc, err := sch.Create(ctx, tools.Schedule{ID: id, Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: interval, EndDate: end})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestScheduleTransitions(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	sch := NewSchedules(s, "agent-a", clk.Now)
	a := newSchedule(t, sch, "abcd0000-0000-4000-8000-000000000001", tools.Monthly, nil)
	b := newSchedule(t, sch, "abcd1111-0000-4000-8000-000000000002", tools.Weekly, nil)
	if a.Status != ScheduleActive || !a.NextRun.Equal(at(t, "2027-02-28T10:00:00Z")) || a.LastRun != nil || !b.NextRun.Equal(at(t, "2027-02-07T10:00:00Z")) {
		t.Fatalf("%+v %+v", a, b)
	}
	dueInvariant(t, s)

	steps := []struct {
		prefix, action, want string
		err                  error
	}{
		{"abcd", ActionPause, "", ErrAmbiguous},
		{"abc", ActionPause, "", ErrInvalid},
		{"ffff", ActionPause, "", ErrNotFound},
		{"abcd0", "delete", "", ErrInvalid},
		{"ABCD0", ActionResume, "", ErrInvalidTransition},
		{"abcd0", ActionPause, SchedulePaused, nil},
		{"abcd0", ActionPause, "", ErrInvalidTransition},
		{"abcd0", ActionResume, ScheduleActive, nil},
		{"abcd0", ActionPause, SchedulePaused, nil},
		{"abcd0", ActionCancel, ScheduleCancelled, nil},
		{"abcd0", ActionResume, "", ErrInvalidTransition},
		{"abcd0", ActionCancel, "", ErrInvalidTransition},
		{"abcd0", ActionPause, "", ErrInvalidTransition},
		{"abcd1111-0000-4000-8000-000000000002", ActionCancel, ScheduleCancelled, nil},
	}
	for _, st := range steps {
		got, err := sch.Transition(ctx, st.prefix, st.action)
		if st.err != nil {
			if !errors.Is(err, st.err) {
				t.Errorf("%s %s: %v; want %v", st.prefix, st.action, err, st.err)
			}
			continue
		}
		if err != nil || got.Status != st.want {
			t.Errorf("%s %s: %+v %v", st.prefix, st.action, got, err)
		}
		dueInvariant(t, s)
	}
	if _, err := sch.Transition(ctx, "abcd", ActionPause); err == nil || !strings.Contains(err.Error(), "abcd0000-0000-4000-8000-000000000001, abcd1111") {
		t.Errorf("ambiguity should list the ids: %v", err)
	}
	if due, _ := DueSchedules(ctx, s, at(t, "2100-01-01T00:00:00Z"), 0); len(due) != 0 {
		t.Errorf("cancelled schedules are due: %v", due)
	}
}

func TestScheduleSlotsWithFakeClock(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	sch := NewSchedules(s, "agent-a", clk.Now)
	m := newSchedule(t, sch, "", tools.Monthly, nil)
	// Each slot runs on time: Jan 31 → Feb 28 → Mar 31 → Apr 30.
	for _, slot := range []string{"2027-02-28T10:00:00Z", "2027-03-31T10:00:00Z", "2027-04-30T10:00:00Z"} {
		if !m.NextRun.Equal(at(t, slot)) {
			t.Fatalf("next run %s, want %s", m.NextRun, slot)
		}
		due, err := DueSchedules(ctx, s, at(t, slot), 0)
		if err != nil || len(due) != 1 || due[0].ScheduleID != m.ID || due[0].AgentID != "agent-a" || !due[0].NextRun.Equal(at(t, slot)) {
			t.Fatalf("due at %s: %+v %v", slot, due, err)
		}
		if due, _ := DueSchedules(ctx, s, at(t, slot).Add(-time.Nanosecond), 0); len(due) != 0 {
			t.Fatalf("due before its slot: %v", due)
		}
		clk.Set(at(t, slot).Add(time.Second))
		var err2 error
		if m, err2 = sch.Advance(ctx, m.ID, at(t, slot)); err2 != nil {
			t.Fatal(err2)
		}
		if !m.LastRun.Equal(clk.Now()) {
			t.Errorf("lastRun %v", m.LastRun)
		}
		// The same slot again (a duplicate wake-up) is stale.
		if _, err := sch.Advance(ctx, m.ID, at(t, slot)); !errors.Is(err, ErrStaleSlot) {
			t.Errorf("advance twice: %v", err)
		}
		dueInvariant(t, s)
	}
	// Leap year: a schedule made on 2028-01-31 pays on Feb 29.
	clk.Set(at(t, "2028-01-31T08:00:00Z"))
	leap := newSchedule(t, sch, "", tools.Monthly, nil)
	if !leap.NextRun.Equal(at(t, "2028-02-29T08:00:00Z")) {
		t.Errorf("leap %s", leap.NextRun)
	}

	// Downtime across three missed daily slots: one run, then the next
	// slot after now.
	clk.Set(at(t, "2027-06-01T09:00:00Z"))
	d := newSchedule(t, sch, "", tools.Daily, nil)
	clk.Set(at(t, "2027-06-05T12:00:00Z")) // slots Jun 2, 3, 4, 5 09:00 have passed
	due, _ := DueSchedules(ctx, s, clk.Now(), 0)
	found := false
	for _, x := range due {
		found = found || x.ScheduleID == d.ID
	}
	if !found {
		t.Fatal("missed schedule not due")
	}
	d, err := sch.Advance(ctx, d.ID, at(t, "2027-06-02T09:00:00Z"))
	if err != nil || !d.NextRun.Equal(at(t, "2027-06-06T09:00:00Z")) {
		t.Errorf("catch-up: %+v %v", d, err)
	}
	dueInvariant(t, s)

	// Pause across slots, resume: paused slots are skipped.
	clk.Set(at(t, "2027-06-05T13:00:00Z"))
	if _, err := sch.Transition(ctx, d.ID[:8], ActionPause); err != nil {
		t.Fatal(err)
	}
	clk.Set(at(t, "2027-06-09T10:00:00Z"))
	d, err = sch.Transition(ctx, d.ID[:8], ActionResume)
	if err != nil || d.Status != ScheduleActive || !d.NextRun.Equal(at(t, "2027-06-10T09:00:00Z")) {
		t.Errorf("resume: %+v %v", d, err)
	}
	if _, err := sch.Advance(ctx, d.ID, at(t, "2027-06-09T09:00:00Z")); !errors.Is(err, ErrStaleSlot) {
		t.Errorf("skipped slot ran: %v", err)
	}
	dueInvariant(t, s)

	// End date: the run after the last slot cancels the schedule.
	clk.Set(at(t, "2027-07-01T00:00:00Z"))
	end := at(t, "2027-07-15T23:59:59Z")
	w := newSchedule(t, sch, "", tools.Weekly, &end)
	if w.EndDate == nil || !w.EndDate.Equal(end) {
		t.Fatalf("%+v", w)
	}
	clk.Set(at(t, "2027-07-08T00:00:00Z"))
	w, _ = sch.Advance(ctx, w.ID, at(t, "2027-07-08T00:00:00Z"))
	if w.Status != ScheduleActive || !w.NextRun.Equal(at(t, "2027-07-15T00:00:00Z")) {
		t.Errorf("%+v", w)
	}
	clk.Set(at(t, "2027-07-15T00:00:00Z"))
	w, _ = sch.Advance(ctx, w.ID, at(t, "2027-07-15T00:00:00Z"))
	if w.Status != ScheduleCancelled {
		t.Errorf("past end: %+v", w)
	}
	if _, err := sch.Advance(ctx, w.ID, w.NextRun); !errors.Is(err, ErrStaleSlot) {
		t.Errorf("advance cancelled: %v", err)
	}
	// Ends while paused: resuming cancels it.
	clk.Set(at(t, "2027-08-01T00:00:00Z"))
	end2 := at(t, "2027-08-20T00:00:00Z")
	p := newSchedule(t, sch, "", tools.Weekly, &end2)
	sch.Transition(ctx, p.ID, ActionPause)
	clk.Set(at(t, "2027-08-25T00:00:00Z"))
	if p, err = sch.Transition(ctx, p.ID, ActionResume); err != nil || p.Status != ScheduleCancelled {
		t.Errorf("resume after end: %+v %v", p, err)
	}
	dueInvariant(t, s)
	if _, err := sch.Create(ctx, tools.Schedule{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Weekly, EndDate: &end2}); !errors.Is(err, ErrInvalid) {
		t.Errorf("end before first run: %v", err)
	}
	for _, bad := range []tools.Schedule{
		{Recipient: "", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Weekly},
		{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: "yearly"},
		{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: "Friday"},
		{Recipient: "bob", Amount: "x", Asset: "USDC", Chain: chains.Base, Interval: tools.Weekly},
		{Recipient: "bob", Amount: "5", Asset: "DOGE", Chain: chains.Base, Interval: tools.Weekly},
		{Recipient: "bob", Amount: "5", Asset: "USDC", Chain: "mars", Interval: tools.Weekly},
	} {
		if _, err := sch.Create(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%+v) = %v", bad, err)
		}
	}
}

// Weekday and hourly schedules with the fake clock: slots, a duplicate
// wake-up, downtime across missed slots (one run, then the next slot).
func TestScheduleWeekdayAndHourlySlotsWithFakeClock(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z")) // a Sunday
	sch := NewSchedules(s, "agent-w", clk.Now)
	fri := newSchedule(t, sch, "", "friday", nil)
	six := newSchedule(t, sch, "", "every-6-hours", nil)
	hr := newSchedule(t, sch, "", tools.Hourly, nil)
	steps := []struct {
		m     *tools.Schedule
		slots []string
	}{
		{&fri, []string{"2027-02-05T10:00:00Z", "2027-02-12T10:00:00Z", "2027-02-19T10:00:00Z"}},
		{&six, []string{"2027-01-31T16:00:00Z", "2027-01-31T22:00:00Z", "2027-02-01T04:00:00Z"}},
		{&hr, []string{"2027-01-31T11:00:00Z", "2027-01-31T12:00:00Z"}},
	}
	for _, st := range steps {
		for _, slot := range st.slots {
			if !st.m.NextRun.Equal(at(t, slot)) {
				t.Fatalf("%s: next run %s, want %s", st.m.Interval, st.m.NextRun, slot)
			}
			clk.Set(at(t, slot).Add(time.Second))
			next, err := sch.Advance(ctx, st.m.ID, at(t, slot))
			if err != nil {
				t.Fatal(err)
			}
			*st.m = next
			if _, err := sch.Advance(ctx, st.m.ID, at(t, slot)); !errors.Is(err, ErrStaleSlot) {
				t.Errorf("advance twice: %v", err)
			}
		}
		dueInvariant(t, s)
	}
	// Down from Feb 19 to Mar 10 (Wednesday): the friday schedule runs its
	// missed slot once, then next on Friday Mar 12.
	clk.Set(at(t, "2027-03-10T12:00:00Z"))
	next, err := sch.Advance(ctx, fri.ID, at(t, "2027-02-26T10:00:00Z"))
	if err != nil || !next.NextRun.Equal(at(t, "2027-03-12T10:00:00Z")) {
		t.Fatalf("catch-up: %+v %v", next, err)
	}
	dueInvariant(t, s)
}

func TestScheduleCreateIdempotentAndAtomic(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	sch := NewSchedules(s, "agent-a", clk.Now)
	id := "aaaa0000-0000-4000-8000-000000000001"
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if sc, err := sch.Create(ctx, tools.Schedule{ID: id, Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Daily}); err != nil || sc.ID != id {
				t.Error(sc, err)
			}
		}()
	}
	wg.Wait()
	if n := len(keys(t, s, TableSchedules)); n != 1 {
		t.Errorf("%d schedules", n)
	}
	if _, err := sch.Create(ctx, tools.Schedule{ID: id, Recipient: "carol", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Daily}); !errors.Is(err, ErrIDReused) {
		t.Errorf("reused id: %v", err)
	}
	dueInvariant(t, s)
	// A due entry that is in the way fails the whole create.
	id2 := "aaaa0000-0000-4000-8000-000000000002"
	next, _ := tools.NextRun(clk.Now(), clk.Now(), tools.Daily)
	s.Apply(ctx, persistence.Put(TableScheduleDue, DueKey(next, "agent-a", id2), []byte("x"), persistence.Absent()))
	if _, err := sch.Create(ctx, tools.Schedule{ID: id2, Recipient: "bob", Amount: "5", Asset: "USDC", Chain: chains.Base, Interval: tools.Daily}); !errors.Is(err, persistence.ErrConflict) {
		t.Errorf("blocked create: %v", err)
	}
	if _, err := sch.Get(ctx, id2); !errors.Is(err, ErrNotFound) {
		t.Errorf("schedule stored without its index entry: %v", err)
	}
}

// TestScheduleConcurrentTransitions races pauses, resumes, cancels and
// slot advances on a few schedules; the due index must match the
// schedules exactly afterwards, and every reply must be a legal state.
func TestScheduleConcurrentTransitions(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	var ids []string
	for a := range 2 {
		sch := NewSchedules(s, fmt.Sprint("agent-", a), clk.Now)
		for range 3 {
			ids = append(ids, fmt.Sprint(a)+"/"+newSchedule(t, sch, "", tools.Daily, nil).ID)
		}
	}
	var wg sync.WaitGroup
	actions := []string{ActionPause, ActionResume, ActionPause, ActionResume, "advance", ActionCancel}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				agent, id, _ := strings.Cut(ids[(w+i)%len(ids)], "/")
				sch := NewSchedules(s, "agent-"+agent, clk.Now)
				act := actions[(w*7+i)%len(actions)]
				if act == ActionCancel && i < 25 {
					act = ActionPause
				}
				var err error
				if act == "advance" {
					var sc tools.Schedule
					if sc, err = sch.Get(ctx, id); err == nil {
						_, err = sch.Advance(ctx, id, sc.NextRun)
					}
					if errors.Is(err, ErrStaleSlot) {
						err = nil
					}
				} else {
					_, err = sch.Transition(ctx, id, act)
					if errors.Is(err, ErrInvalidTransition) {
						err = nil
					}
				}
				if err != nil {
					t.Error(act, err)
				}
			}
		}()
	}
	wg.Wait()
	dueInvariant(t, s)
	due, err := DueSchedules(ctx, s, at(t, "2100-01-01T00:00:00Z"), 0)
	if err != nil {
		t.Fatal(err)
	}
	active := 0
	for _, r := range keys(t, s, TableSchedules) {
		agent, id, _ := strings.Cut(r, "/")
		sc, _ := NewSchedules(s, agent, nil).Get(ctx, id)
		if sc.Status == ScheduleActive {
			active++
		}
	}
	if len(due) != active {
		t.Errorf("%d due, %d active", len(due), active)
	}
}

func TestDueSchedulesPaging(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	var want []string
	for i := range 300 {
		clk.Set(at(t, "2027-01-31T10:00:00Z").Add(time.Duration(i) * time.Second))
		sch := NewSchedules(s, fmt.Sprint("agent-", i%7), clk.Now)
		sc := newSchedule(t, sch, "", tools.Daily, nil)
		want = append(want, sc.ID)
	}
	due, err := DueSchedules(ctx, s, at(t, "2027-02-01T10:00:00Z").Add(299*time.Second), 0)
	if err != nil || len(due) != 300 {
		t.Fatalf("%d due, %v", len(due), err)
	}
	for i, d := range due {
		if d.ScheduleID != want[i] || d.AgentID != fmt.Sprint("agent-", i%7) {
			t.Fatalf("due[%d] = %+v", i, d)
		}
	}
	if due, _ := DueSchedules(ctx, s, at(t, "2027-02-01T10:00:00Z").Add(9*time.Second), 0); len(due) != 10 {
		t.Errorf("until: %d", len(due))
	}
	if due, _ := DueSchedules(ctx, s, at(t, "2100-01-01T00:00:00Z"), 270); len(due) != 270 {
		t.Errorf("limit: %d", len(due))
	}
}
