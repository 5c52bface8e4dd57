// Package gate is how both stores (bbolt and PostgreSQL) admit calls and
// close: Close stops admitting new calls and waits for the admitted ones,
// so that their batches commit normally before the store goes away.
package gate

import "sync"

// Gate admits calls until it is closed. The zero Gate is open.
type Gate struct {
	// mu guards closed and the registration of calls, so that Close never
	// starts waiting while a call is being admitted.
	mu     sync.RWMutex
	closed bool
	calls  sync.WaitGroup
}

// Enter admits a call and reports true, or reports false once the gate is
// closed. Every admitted call must call Leave.
func (g *Gate) Enter() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return false
	}
	g.calls.Add(1)
	return true
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
