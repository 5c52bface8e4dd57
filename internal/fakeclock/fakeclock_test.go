package fakeclock

import (
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC)

// TestClock: each row starts a clock at t0, applies its steps in order
// and checks Now after each one.
func TestClock(t *testing.T) {
	type step struct {
		set     *time.Time // Set(*set) when not nil
		advance time.Duration
		want    time.Time
	}
	at := func(t time.Time) *time.Time { return &t }
	berlin := time.FixedZone("CET", 3600)
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"starts where New put it", []step{{want: t0}}},
		{"advance by exactly d", []step{{advance: time.Nanosecond, want: t0.Add(time.Nanosecond)}}},
		{"advances add up", []step{
			{advance: time.Hour, want: t0.Add(time.Hour)},
			{advance: 30 * time.Second, want: t0.Add(time.Hour + 30*time.Second)},
		}},
		{"advance backwards", []step{{advance: -24 * time.Hour, want: t0.Add(-24 * time.Hour)}}},
		{"set then now", []step{{set: at(t0.Add(48 * time.Hour)), want: t0.Add(48 * time.Hour)}}},
		{"set backwards, then advance from there", []step{
			{advance: time.Hour, want: t0.Add(time.Hour)},
			{set: at(t0.Add(-time.Minute)), want: t0.Add(-time.Minute)},
			{advance: time.Minute, want: t0},
		}},
		{"set keeps the location", []step{{set: at(t0.In(berlin)), want: t0.In(berlin)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(t0)
			for i, s := range tc.steps {
				if s.set != nil {
					c.Set(*s.set)
				}
				if s.advance != 0 {
					c.Advance(s.advance)
				}
				// == and not Equal: the clock hands back the very value
				// (location included), not just the same instant.
				if got := c.Now(); got != s.want {
					t.Fatalf("step %d: Now = %v, want %v", i, got, s.want)
				}
			}
		})
	}
}

// TestOffset: Now is real time plus the offset moved so far, so it lies
// between the real time read just before and just after, both shifted.
func TestOffset(t *testing.T) {
	for _, tc := range []struct {
		name     string
		advances []time.Duration
		want     time.Duration
	}{
		{"zero value is real time", nil, 0},
		{"one advance", []time.Duration{time.Hour}, time.Hour},
		{"advances add up", []time.Duration{time.Hour, 15 * time.Minute, time.Nanosecond}, time.Hour + 15*time.Minute + time.Nanosecond},
		{"backwards", []time.Duration{time.Hour, -2 * time.Hour}, -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Offset
			for _, d := range tc.advances {
				o.Advance(d)
			}
			before := time.Now().Add(tc.want)
			got := o.Now()
			after := time.Now().Add(tc.want)
			if got.Before(before) || got.After(after) {
				t.Fatalf("Now = %v, want within [%v, %v]", got, before, after)
			}
		})
	}
}

// TestConcurrentUse: the code under test reads the clock from its own
// goroutines while the test moves it; under -race this fails if either
// kind is not safe for that. Every advance counts once.
func TestConcurrentUse(t *testing.T) {
	const n = 50
	c, set := New(t0), New(t0)
	var o Offset
	var wg sync.WaitGroup
	for range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.Advance(time.Second)
			o.Advance(time.Hour)
			set.Set(t0.Add(time.Minute))
		}()
		go func() {
			defer wg.Done()
			_, _, _ = c.Now(), o.Now(), set.Now()
		}()
	}
	wg.Wait()
	if got, want := set.Now(), t0.Add(time.Minute); got != want {
		t.Fatalf("after concurrent sets Now = %v, want %v", got, want)
	}
	if got, want := c.Now(), t0.Add(n*time.Second); !got.Equal(want) {
		t.Fatalf("after %d concurrent advances Now = %v, want %v", n, got, want)
	}
	if got := o.Now(); got.Before(time.Now().Add(n*time.Hour - time.Minute)) {
		t.Fatalf("after %d concurrent advances of an hour Offset.Now = %v", n, got)
	}
}
