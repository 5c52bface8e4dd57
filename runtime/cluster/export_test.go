package cluster

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// LoseOnce makes m's router lose the next request (what "request": it
// never reaches the agent) or the next answer (what "answer": the agent
// answers, the answer never leaves) for agentID, as protoactor can when an
// endpoint ends (answers.go). Call it before the request is sent.
func LoseOnce(m *Member, what, agentID string) {
	var lost atomic.Bool
	lose := func(w, id string, _ any, _ *actor.PID) bool {
		return w == what && id == agentID && lost.CompareAndSwap(false, true)
	}
	m.lose.Store(&lose)
}

// DelayOnce makes m's router lose the next request for agentID, as
// LoseOnce does, and keep it: deliver hands it to the router again, from
// the same sender, as bytes a broken connection held can arrive late
// (edit, when set, changes the envelope first), and returns the router's
// reply to it (a refusal, or the agent's answer).
func DelayOnce(m *Member, agentID string) (deliver func(edit func(envelope any) any) any) {
	var held atomic.Bool
	var envelope any
	var from *actor.PID
	kept := make(chan struct{})
	answered := make(chan any, 1)
	lose := func(w, id string, env any, sender *actor.PID) bool {
		if id != agentID {
			return false
		}
		switch {
		case w == "request" && held.CompareAndSwap(false, true):
			envelope, from = env, sender
			close(kept)
			return true
		case w == "answer" && held.Load():
			select {
			case answered <- env: // the first answer after the hold
			default:
			}
		}
		return false
	}
	m.lose.Store(&lose)
	return func(edit func(any) any) any {
		<-kept
		env := envelope
		if edit != nil {
			env = edit(env)
		}
		m.system.Root.RequestWithCustomSender(actor.NewPID(m.system.Address(), routerName), env, from)
		return <-answered
	}
}
