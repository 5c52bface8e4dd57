package httpapi

import (
	"net/http"
	"strconv"
	"sync"
)

// DefaultMaxStreamsPerKey bounds the long-lived streams (the notification
// stream) one API key holds open at once (docs/api.md, "Limits"). A
// dashboard needs one per agent it shows; each stream holds a connection,
// a goroutine and a store poll.
const DefaultMaxStreamsPerKey = 16

// streamRetryAfter is the Retry-After of a stream refused over the cap:
// a slot frees when one of the key's streams ends.
const streamRetryAfter = 10

// streamSlots counts the open streams of each key.
type streamSlots struct {
	max  int // <= 0: no cap
	mu   sync.Mutex
	open map[string]int
}

// acquire takes a slot of key; release gives it back. ok is false at the
// cap.
func (c *streamSlots) acquire(key string) (release func(), ok bool) {
	if c.max <= 0 {
		return func() {}, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key] >= c.max {
		return nil, false
	}
	c.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.open[key]--; c.open[key] <= 0 {
				delete(c.open, key)
			}
		})
	}, true
}

// openStream takes a stream slot of the request's key or writes the 429.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	release, ok = s.streams.acquire(keyHashFrom(r.Context()))
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(streamRetryAfter))
		writeError(w, http.StatusTooManyRequests, "this API key already holds "+strconv.Itoa(s.streams.max)+
			" open streams, the most it may: close one (or raise --max-streams-per-key) and retry after "+strconv.Itoa(streamRetryAfter)+" s")
	}
	return release, ok
}
