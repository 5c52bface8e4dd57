package agent

import "sync"

// Feed wakes the watchers of an agent's inbox (the notification stream)
// when this process stores a notification for it. It only says "look
// again": watchers read the store, which also holds what other cluster
// members wrote (they poll for those). A nil *Feed does nothing.
type Feed struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
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

// Publish wakes agentID's watchers; it never blocks.
func (f *Feed) Publish(agentID string) {
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
