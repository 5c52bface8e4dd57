package main

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// throttled is a slog.Handler that passes a message at most once per
// window and counts what it dropped. protoactor's cluster provider logs the
// same error for an unreachable member every second, from several
// goroutines; without this a dead member floods the log.
type throttled struct {
	next   slog.Handler
	window time.Duration
	now    func() time.Time
	state  *throttleState
}

type throttleState struct {
	mu   sync.Mutex
	seen map[string]*seenMsg
}

type seenMsg struct {
	last    time.Time
	dropped int
}

func newThrottled(next slog.Handler, window time.Duration, now func() time.Time) *throttled {
	return &throttled{next: next, window: window, now: now, state: &throttleState{seen: map[string]*seenMsg{}}}
}

func (h *throttled) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *throttled) Handle(ctx context.Context, r slog.Record) error {
	now := h.now()
	h.state.mu.Lock()
	s := h.state.seen[r.Message]
	if s != nil && now.Sub(s.last) < h.window {
		s.dropped++
		h.state.mu.Unlock()
		return nil
	}
	dropped := 0
	if s == nil {
		if len(h.state.seen) > 1000 { // bounded: distinct messages are few
			h.state.seen = map[string]*seenMsg{}
		}
		s = &seenMsg{}
		h.state.seen[r.Message] = s
	} else {
		dropped = s.dropped
	}
	s.last, s.dropped = now, 0
	h.state.mu.Unlock()
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeats_suppressed", dropped))
	}
	return h.next.Handle(ctx, r)
}

func (h *throttled) WithAttrs(as []slog.Attr) slog.Handler {
	return &throttled{next: h.next.WithAttrs(as), window: h.window, now: h.now, state: h.state}
}

func (h *throttled) WithGroup(name string) slog.Handler {
	return &throttled{next: h.next.WithGroup(name), window: h.window, now: h.now, state: h.state}
}
