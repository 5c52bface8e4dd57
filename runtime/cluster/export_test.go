package cluster

import "sync/atomic"

// LoseOnce makes m's router lose the next request (what "request": it
// never reaches the agent) or the next answer (what "answer": the agent
// answers, the answer never leaves) for agentID, as protoactor can when an
// endpoint ends (answers.go). Call it before the request is sent.
func LoseOnce(m *Member, what, agentID string) {
	var lost atomic.Bool
	lose := func(w, id string) bool {
		return w == what && id == agentID && lost.CompareAndSwap(false, true)
	}
	m.lose.Store(&lose)
}
