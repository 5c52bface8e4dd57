package cluster_test

import (
	"testing"
	"time"
)

// A member's Notify reaches every other member of its topology, once, and
// not itself: what wakes the notification streams of an agent on every
// member when its owner stores a notification (docs/cluster.md).
func TestNotifyWakesEveryOtherMember(t *testing.T) {
	nodes, _, _ := startCluster(t, 3)
	for k, from := range nodes {
		id := "agent-notified-by-" + from.name
		from.member.Notify(id)
		for j, n := range nodes {
			if j == k {
				continue
			}
			select {
			case got := <-n.notified:
				if got != id {
					t.Fatalf("%s got the wake-up %q, want %q (from %s)", n.name, got, id, from.name)
				}
			case <-time.After(60 * time.Second): // a deadline for a loaded machine, not a timing
				t.Fatalf("%s never got %s's wake-up for %s", n.name, from.name, id)
			}
		}
	}
	// Nobody got a second copy, and the sender never itself: every
	// wake-up above was consumed by the member it was for.
	for _, n := range nodes {
		select {
		case got := <-n.notified:
			t.Fatalf("%s got an extra wake-up %q", n.name, got)
		default:
		}
	}
}
