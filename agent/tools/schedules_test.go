package tools

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
)

func TestNextRun(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		anchor, t, interval, want string
	}{
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", Daily, "2027-02-01T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-03T09:59:59Z", Daily, "2027-02-03T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-03T10:00:00Z", Daily, "2027-02-04T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-01T00:00:00Z", Weekly, "2027-02-07T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-20T00:00:00Z", Weekly, "2027-02-21T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", Monthly, "2027-02-28T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-28T10:00:00Z", Monthly, "2027-03-31T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-04-01T00:00:00Z", Monthly, "2027-04-30T10:00:00Z"},
		{"2028-01-31T10:00:00Z", "2028-01-31T10:00:00Z", Monthly, "2028-02-29T10:00:00Z"},
		{"2027-12-15T00:00:00Z", "2027-12-15T00:00:00Z", Monthly, "2028-01-15T00:00:00Z"},
		{"2027-12-15T00:00:00Z", "2029-06-20T00:00:00Z", Monthly, "2029-07-15T00:00:00Z"},
		{"2027-01-31T10:00:00Z", "2026-01-01T00:00:00Z", Monthly, "2027-02-28T10:00:00Z"},
	}
	for _, c := range cases {
		got, err := NextRun(at(c.anchor), at(c.t), c.interval)
		if err != nil || !got.Equal(at(c.want)) {
			t.Errorf("NextRun(%s, %s, %s) = %s, %v; want %s", c.anchor, c.t, c.interval, got, err, c.want)
		}
	}
	// 2027-01-31 is a Sunday.
	more := []struct{ anchor, t, interval, want string }{
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", Hourly, "2027-01-31T11:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T12:30:00Z", Hourly, "2027-01-31T13:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "every-6-hours", "2027-01-31T16:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-01T03:00:00Z", "every-6-hours", "2027-02-01T04:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "friday", "2027-02-05T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-05T10:00:00Z", "friday", "2027-02-12T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-20T00:00:00Z", "friday", "2027-02-26T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "sunday", "2027-02-07T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "monday", "2027-02-01T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2026-12-01T00:00:00Z", "monday", "2027-02-01T10:00:00Z"},
	}
	for _, c := range more {
		got, err := NextRun(at(c.anchor), at(c.t), c.interval)
		if err != nil || !got.Equal(at(c.want)) {
			t.Errorf("NextRun(%s, %s, %s) = %s, %v; want %s", c.anchor, c.t, c.interval, got, err, c.want)
		}
	}
	for _, bad := range []string{"yearly", "every-25-hours", "every-0-hours", "Friday", "every friday", ""} {
		if _, err := NextRun(testNow, testNow, bad); !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("NextRun with %q: %v (only canonical forms are stored)", bad, err)
		}
	}
	norm := map[string]string{"Weekly": Weekly, "every friday": "friday", "Fridays": "friday", "fri": "friday", "every 6 hours": "every-6-hours",
		"6h": "every-6-hours", "every hour": Hourly, "every-12-hours": "every-12-hours", "every 24 hours": Daily, "each monday": "monday"}
	for in, want := range norm {
		if got, err := NormalizeInterval(in); err != nil || got != want {
			t.Errorf("NormalizeInterval(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"yearly", "every 30 hours", "biweekly", "every 2 weeks", "someday"} {
		if _, err := NormalizeInterval(bad); !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("NormalizeInterval(%q): %v", bad, err)
		}
	}
}

func TestSchedulePayment(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "schedule_payment", "every month send 5 USDC to bob until 2027-12-31",
		`{"recipient":"bob.veil","amount":"5","asset":"USDC","interval":"Monthly","end_date":"2027-12-31"}`)
	if err != nil {
		t.Fatal(err)
	}
	s := res.(*Schedule)
	if s.Recipient != "bob" || s.Amount != "5" || s.Asset != "USDC" || s.Chain != chains.Base || s.Interval != Monthly || s.Status != "active" ||
		!s.NextRun.Equal(time.Date(2027, 2, 28, 10, 0, 0, 0, time.UTC)) || s.EndDate == nil || !s.EndDate.Equal(time.Date(2027, 12, 31, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("%+v", s)
	}
	if len(f.chain.moneyMoves()) != 0 {
		t.Error("scheduling paid")
	}
	again, _ := f.run(t, "schedule_payment", "every month send 5 USDC to bob until 2027-12-31",
		`{"recipient":"bob.veil","amount":"5","asset":"USDC","interval":"Monthly","end_date":"2027-12-31"}`)
	if again.(*Schedule).ID != s.ID || len(f.sch.all) != 1 {
		t.Error("retry created a second schedule")
	}
	meta := metas(t, "zed", chains.Stellar)[chains.Stellar]
	f.env.IdempotencyKey = "key-2"
	res, err = f.run(t, "schedule_payment", "daily 1 XLM to "+meta, `{"recipient":"`+meta+`","amount":"1","interval":"daily"}`)
	if err != nil || res.(*Schedule).Recipient != meta || res.(*Schedule).Chain != chains.Stellar {
		t.Errorf("%+v %v", res, err)
	}
	runErrCases(t, "schedule_payment", []errCase{
		{name: "interval", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"yearly"}`, want: `interval must be daily, weekly, monthly, hourly, every-N-hours`, is: ErrInvalidArgs},
		{name: "no interval", text: "send 5", args: `{"recipient":"bob","amount":"5"}`, want: `missing required argument "interval"`},
		{name: "end in past", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"daily","end_date":"2026-01-01"}`, want: "is not in the future"},
		{name: "end before first run", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"weekly","end_date":"2027-02-02"}`, want: "before the first payment (2027-02-07T10:00:00Z)"},
		{name: "end format", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"daily","end_date":"March"}`, want: `end_date must be an ISO date`},
		{name: "not restated", text: "pay bob every week", args: `{"recipient":"bob","amount":"5","interval":"weekly"}`, want: "does not state the amount 5", is: ErrNotConfirmed},
		{name: "unknown recipient", text: "send 5", args: `{"recipient":"zoe","amount":"5","interval":"weekly"}`, want: "zoe.veil", is: ErrUnknownRecipient},
		{name: "recipient not shared", text: "send 5", args: `{"recipient":"dave","amount":"5","interval":"weekly"}`, want: "share no chain"},
	})
}

func TestListAndManageSchedules(t *testing.T) {
	f := newFixture(t)
	f.sch.all = []Schedule{
		{ID: "cccc0000-0000-0000-0000-000000000000", Status: "cancelled", NextRun: testNow},
		{ID: "bbbb0000-0000-0000-0000-000000000000", Status: "active", NextRun: testNow.Add(48 * time.Hour)},
		{ID: "aaaa0000-0000-0000-0000-000000000000", Status: "paused", NextRun: testNow.Add(time.Hour)},
		{ID: "dddd0000-0000-0000-0000-000000000000", Status: "active", NextRun: testNow.Add(time.Hour)},
	}
	res, err := f.run(t, "list_schedules", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*ScheduleList)
	var order []string
	for _, s := range r.Schedules {
		order = append(order, s.ID[:4])
	}
	if r.Count != 4 || r.Active != 2 || r.Paused != 1 || r.Cancelled != 1 || strings.Join(order, ",") != "dddd,bbbb,aaaa,cccc" {
		t.Errorf("%+v %v", r, order)
	}
	res, err = f.run(t, "manage_schedule", "pause schedule BBBB", `{"schedule_id":" BBBB ","action":"Pause"}`)
	if err != nil || res.(*Schedule).Status != "paused" || f.sch.transitions[0] != "bbbb:pause" {
		t.Errorf("%+v %v %v", res, err, f.sch.transitions)
	}
	runErrCases(t, "manage_schedule", []errCase{
		{name: "short", args: `{"schedule_id":"bbb","action":"pause"}`, want: "too short: give at least 4 characters"},
		{name: "not hex", args: `{"schedule_id":"zzzz","action":"pause"}`, want: "not a schedule id"},
		{name: "action", args: `{"schedule_id":"bbbb","action":"delete"}`, want: `"action" must be one of pause, resume, cancel`},
		{name: "too long", args: `{"schedule_id":"` + strings.Repeat("a", 37) + `","action":"pause"}`, want: "the limit is 36"},
		{name: "store error", args: `{"schedule_id":"eeee","action":"pause"}`, want: "no schedule eeee"},
	})
}
