// Package background runs the periodic passes of the actor packages (the
// reminder, the webhook deliverer, the scanner) in a goroutine that Stop cancels and
// waits for, so that a pass in flight ends with its context and no pass
// starts after Stop returns.
package background

import (
	"context"
	"sync"
	"time"
)

// Loop is one package's background goroutine. Build it with New.
type Loop struct {
	stop chan struct{}
	once sync.Once
	done sync.WaitGroup
}

// New returns a loop that runs nothing yet.
func New() *Loop { return &Loop{stop: make(chan struct{})} }

// Go runs run in the loop's goroutine with a context that Stop cancels,
// for a loop with its own timing (the scanner's, woken early by Kick).
func (l *Loop) Go(run func(ctx context.Context)) {
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-l.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		run(ctx)
	}()
}

// Every runs pass at once and then every period, each time with a context
// that Stop cancels, until Stop.
func (l *Loop) Every(period time.Duration, pass func(ctx context.Context)) {
	l.Go(func(ctx context.Context) {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			pass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// Stop cancels the running pass and waits until the loop has ended.
// Calling it more than once, or before Every, is harmless.
func (l *Loop) Stop() {
	l.once.Do(func() { close(l.stop) })
	l.done.Wait()
}
