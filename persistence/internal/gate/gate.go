// Package gate is how both stores (bbolt and PostgreSQL) admit calls and
// close: Close stops admitting new calls and waits for the admitted ones,
// so that their batches commit normally before the store goes away.
package gate

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is what Enter reports once the gate is closed; it is
// persistence.ErrClosed.
var ErrClosed = errors.New("persistence: store closed")

// Gate admits calls until it is closed. The zero Gate is open.
type Gate struct {
	// mu guards closed and the registration of calls, so that Close never
	// starts waiting while a call is being admitted.
	mu     sync.RWMutex
	closed bool
	calls  sync.WaitGroup
}

// Enter admits a call, or returns ctx's error when ctx has ended and
// ErrClosed once the gate is closed. Every admitted call must call Leave.
func (g *Gate) Enter(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return ErrClosed
	}
	g.calls.Add(1)
	return nil
}

// Leave ends a call Enter admitted.
func (g *Gate) Leave() { g.calls.Done() }

// Close stops admitting calls and waits for the admitted ones to leave.
// It reports false when the gate was already closed (and waits for
// nothing).
func (g *Gate) Close() bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.closed = true
	g.mu.Unlock()
	g.calls.Wait()
	return true
}
