package cluster

import (
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// notifyName is the well-known actor of every member that takes the
// others' notification wake-ups (Member.Notify).
const notifyName = "veil-notify"

// Notify tells every other member of this member's topology that the
// agent with this id has stored a notification, so that their
// notification streams of it read the store at once instead of at their
// next (rare) poll. It is fire and forget and never blocks: a wake-up
// lost to a member that is leaving, partitioned or restarting costs that
// member's streams one fallback poll, never a notification (the stream
// reads the store, the wake-up only says "look again").
//
// The message is protobuf's StringValue (the agent id), a well-known type
// every member has registered: no envelope of our own is needed for one
// string, and a member of an older version, which runs no veil-notify
// actor, drops it as a dead letter.
func (m *Member) Notify(agentID string) {
	if m.stopping.Load() {
		return
	}
	m.mu.RLock()
	members, self := m.members, m.self
	m.mu.RUnlock()
	for _, addr := range members {
		if addr == self {
			continue
		}
		m.system.Root.Send(actor.NewPID(addr, notifyName), &wrapperspb.StringValue{Value: agentID})
	}
}

// receiveNotify is the veil-notify actor: it hands another member's
// wake-up to Config.OnNotify.
func (m *Member) receiveNotify(ctx actor.Context) {
	v, ok := ctx.Message().(*wrapperspb.StringValue)
	if !ok || m.cfg.OnNotify == nil {
		return
	}
	if v.GetValue() != "" {
		m.cfg.OnNotify(v.GetValue())
	}
}
