package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/actors/agent"
)

// DefaultStreamPoll is how often a notification stream reads the store
// without being woken (docs/api.md). The stream is woken when a
// notification of its agent is stored, in this process or (relayed over
// the cluster, docs/cluster.md) on another member; the poll only catches a
// wake-up that was lost (a member leaving or cut off as it relayed it).
// It was 2 s while the poll was how a cluster member's streams saw the
// others' notifications.
const DefaultStreamPoll = 10 * time.Second

// Defaults of the notification stream (docs/api.md).
const (
	streamHeartbeat = 15 * time.Second
	streamWriteWait = 30 * time.Second
	streamPage      = 100
)

// notificationStream is GET /agent/:id/notifications/stream: Server-Sent
// Events, one "notification" event per notification and one
// "payment.confirmed" / "payment.failed" event per payment event stored
// after the stream began (or after Last-Event-ID / ?after=, to resume). The
// store is read when the Feed wakes the stream (a notification of the agent
// was stored by this process, or by another cluster member, which relays
// the wake-up) and every StreamPoll, in case a wake-up was lost.
func (s *Server) notificationStream(w http.ResponseWriter, r *http.Request) error {
	id, rec, err := s.ownAgent(r)
	if err != nil {
		return err
	}
	last := rec.LastNotificationID
	resume := r.Header.Get("Last-Event-ID")
	if q := r.URL.Query().Get("after"); q != "" {
		resume = q
	}
	if resume != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(resume), 10, 64)
		if err != nil || n < 0 {
			return Errorf(http.StatusBadRequest, "Last-Event-ID / after must be a notification id (a non-negative integer), got %q", truncate(resume, 40))
		}
		last = n
	}
	release, ok := s.openStream(w, r)
	if !ok {
		return nil
	}
	defer release()
	wake, stop := s.feed.Watch(id)
	defer stop()

	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	write := func(chunk string) error {
		// The server's write timeout is for ordinary replies; a stream
		// extends its deadline before each write.
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteWait))
		if _, err := fmt.Fprint(w, chunk); err != nil {
			return err
		}
		return rc.Flush()
	}
	// The retry hint and a first comment tell the client the stream is up.
	if err := write("retry: 3000\n: stream of agent " + id + "\n\n"); err != nil {
		return nil
	}
	poll := time.NewTicker(s.streamPoll)
	defer poll.Stop()
	beat := time.NewTicker(streamHeartbeat)
	defer beat.Stop()
	ctx := r.Context()
	for {
		frames, more, err := streamFrames(ctx, s, id, last)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			loggerFrom(ctx).Warn("notification stream: read failed; the client reconnects", "err", err)
			return nil // headers are sent: end the stream, the client resumes
		}
		for _, f := range frames {
			if err := write(fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", f.id, f.event, f.data)); err != nil {
				return nil
			}
			last = f.id
		}
		if more {
			continue // more waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil // shutting down: the client reconnects elsewhere
		case <-wake:
		case <-poll.C:
		case <-beat.C:
			if err := write(": keep-alive\n\n"); err != nil {
				return nil
			}
		}
	}
}

// frame is one event of the stream.
type frame struct {
	id    int64
	event string // "notification", or the payment event's type
	data  []byte
}

// streamFrames reads what follows last: the notifications and the payment
// events (docs/payments.md, "Events"), which share one id sequence, in id
// order. more: a page was full, so more may follow the frames; the frames
// then stop at the lower of the full pages' last ids, so that nothing of
// the other kind is skipped.
func streamFrames(ctx context.Context, s *Server, id string, last int64) ([]frame, bool, error) {
	notes, err := agent.NotificationsAfter(ctx, s.store, id, last, streamPage)
	if err != nil {
		return nil, false, err
	}
	events, err := agent.PaymentEventsAfter(ctx, s.store, id, last, streamPage)
	if err != nil {
		return nil, false, err
	}
	bound, more := int64(math.MaxInt64), false
	if len(notes) == streamPage {
		bound, more = notes[len(notes)-1].ID, true
	}
	if len(events) == streamPage {
		bound, more = min(bound, events[len(events)-1].ID), true
	}
	out := make([]frame, 0, len(notes)+len(events))
	for _, n := range notes {
		if n.ID <= bound {
			raw, err := json.Marshal(n)
			if err != nil {
				return nil, false, err
			}
			out = append(out, frame{n.ID, "notification", raw})
		}
	}
	for _, ev := range events {
		if ev.ID <= bound {
			raw, err := json.Marshal(ev)
			if err != nil {
				return nil, false, err
			}
			out = append(out, frame{ev.ID, ev.Type, raw})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, more, nil
}
