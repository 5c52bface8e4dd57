package httpapi_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/internal/fakeclock"
)

func TestRateLimitPerKey(t *testing.T) {
	clock := fakeclock.New(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)) // the API's clock: time moves only when told
	e := newEnv(t, envOptions{rates: httpapi.RateLimit{PerSecond: 1, Burst: 3}, now: clock.Now})
	other := e.newKey("other")
	for i := 0; i < 3; i++ {
		r := e.do("GET", "/agents", e.key, nil)
		if r.status != 200 {
			t.Fatalf("request %d = %d", i, r.status)
		}
		if r.header.Get("X-RateLimit-Limit") != "3" || r.header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
			t.Fatalf("request %d headers: limit %q remaining %q", i, r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
		}
		if reset, err := strconv.ParseInt(r.header.Get("X-RateLimit-Reset"), 10, 64); err != nil || reset < clock.Now().Unix() {
			t.Fatalf("reset %q", r.header.Get("X-RateLimit-Reset"))
		}
	}
	r := e.do("GET", "/agents", e.key, nil)
	if r.status != 429 || r.header.Get("Retry-After") != "1" || r.header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("over the limit: %d retry-after %q", r.status, r.header.Get("Retry-After"))
	}
	r.errorBody(t)
	// Another key has its own bucket.
	if r := e.do("GET", "/agents", other, nil); r.status != 200 {
		t.Fatalf("other key = %d", r.status)
	}
	// A refused request changed nothing: after a second, one more fits.
	clock.Advance(time.Second)
	if r := e.do("GET", "/agents", e.key, nil); r.status != 200 {
		t.Fatalf("after refill = %d", r.status)
	}
	if r := e.do("GET", "/agents", e.key, nil); r.status != 429 {
		t.Fatalf("second after one refill = %d", r.status)
	}
	// Health is not keyed and not limited.
	if r := e.do("GET", "/health", "", nil); r.status != 200 || r.header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("health = %d", r.status)
	}
}
