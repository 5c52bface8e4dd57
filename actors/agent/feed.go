package agent

import "sync"

// Feed wakes the watchers of an agent's inbox (the notification stream)
// when this process stores a notification for it. It only says "look
// again": watchers read the store, which also holds what other cluster
// members wrote. In a cluster the relay tells the other members, whose
// feeds Wake their own watchers (docs/cluster.md, "Notification
// streams"); the streams also poll, rarely, for a wake-up that was lost.
// A nil *Feed does nothing.
type Feed struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
	relay    func(agentID string)
}

// SetRelay makes every Publish also call relay (after waking the local
// watchers), which must not block: a cluster member sends the wake-up to
// the others.
func (f *Feed) SetRelay(relay func(agentID string)) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.relay = relay
	f.mu.Unlock()
}

// NewFeed returns an empty feed.
func NewFeed() *Feed { return &Feed{watchers: map[string]map[chan struct{}]struct{}{}} }

// Watch returns a channel that receives (at most one pending) wake-up per
// new notification of agentID, and the function that stops watching.
func (f *Feed) Watch(agentID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	if f == nil {
		return ch, func() {}
	}
	f.mu.Lock()
	if f.watchers[agentID] == nil {
		f.watchers[agentID] = map[chan struct{}]struct{}{}
	}
	f.watchers[agentID][ch] = struct{}{}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.watchers[agentID], ch)
		if len(f.watchers[agentID]) == 0 {
			delete(f.watchers, agentID)
		}
		f.mu.Unlock()
	}
}

// Publish wakes agentID's watchers and tells the relay; it never blocks.
func (f *Feed) Publish(agentID string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	relay := f.relay
	f.mu.Unlock()
	f.Wake(agentID)
	if relay != nil {
		relay(agentID)
	}
}

// Wake wakes agentID's watchers in this process only: what a relayed
// wake-up from another member does.
func (f *Feed) Wake(agentID string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.watchers[agentID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
