package httpapi

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// RateLimit is a token bucket: Burst requests at once, refilled at
// PerSecond. The zero value means no limit.
type RateLimit struct {
	PerSecond float64
	Burst     int
}

// DefaultRateLimit applies to a key whose account sets none.
var defaultRateLimit = RateLimit{PerSecond: 50, Burst: 100}

// limiter keeps one bucket per API key (by its hash). Buckets of keys idle
// long enough to be full again are dropped, so memory follows the keys in
// use, not every key ever seen.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	now     func() time.Time
	lastGC  time.Time
}

type bucket struct {
	limit  RateLimit
	tokens float64
	at     time.Time
}

func newLimiter(now func() time.Time) *limiter {
	return &limiter{buckets: map[string]*bucket{}, now: now}
}

// takeN spends n tokens of key's bucket at once, or none. It answers
// whether the request may go on, the tokens left, and when the bucket is
// full again and when n tokens are there.
func (l *limiter) takeN(key string, lim RateLimit, n int) (ok bool, remaining int, full, next time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.lastGC) > time.Minute {
		l.gc(now)
	}
	b := l.buckets[key]
	if b == nil || b.limit != lim {
		b = &bucket{limit: lim, tokens: float64(lim.Burst), at: now}
		l.buckets[key] = b
	}
	if dt := now.Sub(b.at).Seconds(); dt > 0 {
		b.tokens = math.Min(float64(lim.Burst), b.tokens+dt*lim.PerSecond)
	}
	b.at = now
	if need := float64(n); b.tokens >= need {
		b.tokens -= need
		ok = true
	} else {
		next = time.Duration((need - b.tokens) / lim.PerSecond * float64(time.Second))
	}
	full = time.Duration((float64(lim.Burst) - b.tokens) / lim.PerSecond * float64(time.Second))
	return ok, int(b.tokens), full, next
}

func (l *limiter) gc(now time.Time) {
	l.lastGC = now
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*b.limit.PerSecond >= float64(b.limit.Burst) {
			delete(l.buckets, k)
		}
	}
}

// keyLimit is the rate limit of the request's key (its account's, or the
// server's); ok is false when there is none.
func (s *Server) keyLimit(r *http.Request) (RateLimit, bool) {
	lim := s.rates
	if acc := accountFrom(r.Context()); acc.RateLimit != nil {
		lim = RateLimit{PerSecond: acc.RateLimit.PerSecond, Burst: acc.RateLimit.Burst}
	}
	if k := keyFrom(r.Context()); k.RateLimit != nil {
		// A key's own limit comes before its account's.
		lim = RateLimit{PerSecond: k.RateLimit.PerSecond, Burst: k.RateLimit.Burst}
	}
	return lim, lim.PerSecond > 0 && lim.Burst > 0
}

// rateLimit enforces the per-key bucket and sets X-RateLimit-Limit,
// -Remaining and -Reset (Unix seconds when the bucket is full again) on
// every response; a request over the limit is a 429 with Retry-After.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.spend(w, r, 1) {
			next.ServeHTTP(w, r)
		}
	})
}

// spend takes n tokens of the request's key (a request is one; an MCP
// batch one more for each call after its first). Over the limit it writes
// the 429 with Retry-After and answers false.
func (s *Server) spend(w http.ResponseWriter, r *http.Request, n int) bool {
	lim, on := s.keyLimit(r)
	if !on {
		return true
	}
	ok, remaining, full, wait := s.limits.takeN(keyHashFrom(r.Context()), lim, n)
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(lim.Burst))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.now().Add(full).Unix(), 10))
	if !ok {
		secs := int(math.Ceil(wait.Seconds()))
		if secs < 1 {
			secs = 1
		}
		h.Set("Retry-After", strconv.Itoa(secs))
		what := "rate limit exceeded for this API key"
		if n > 1 {
			what = "rate limit exceeded for this API key: the batch's " + strconv.Itoa(n) + " calls each count"
		}
		writeError(w, http.StatusTooManyRequests, what+": retry after "+strconv.Itoa(secs)+" s (limit "+strconv.Itoa(lim.Burst)+" requests, refilled at "+strconv.FormatFloat(lim.PerSecond, 'f', -1, 64)+"/s)")
		return false
	}
	return true
}
