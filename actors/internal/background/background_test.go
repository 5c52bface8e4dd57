package background

import (
	"context"
	"testing"
	"time"
)

// TestStopCancelsThePass: a pass blocked on its context ends when Stop is
// called, and Stop returns only after it has.
func TestStopCancelsThePass(t *testing.T) {
	l := New()
	started := make(chan struct{})
	ended := make(chan struct{})
	l.Every(time.Hour, func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(ended)
	})
	<-started
	l.Stop()
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the pass ended")
	}
	l.Stop() // a second Stop is harmless
}

// TestEveryRepeats: the pass runs again after each period.
func TestEveryRepeats(t *testing.T) {
	l := New()
	passes := make(chan struct{})
	l.Every(time.Millisecond, func(ctx context.Context) {
		select {
		case passes <- struct{}{}:
		case <-ctx.Done():
		}
	})
	for range 3 {
		<-passes
	}
	l.Stop()
}
