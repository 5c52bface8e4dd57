package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
)

// TestInboxCap: the inbox cannot grow without bound; the oldest read
// notifications go first, unread ones only when nothing read is left.
func TestInboxCap(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	a := env.CreateAgent("alice")
	notify := func(n int) {
		for range n {
			if _, err := env.Host.Request(ctx, a.ID, &agent.Notify{Type: agent.NotePaymentReceived, Title: "t", Body: "b"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	notify(520)
	if _, err := env.Host.Request(ctx, a.ID, &agent.MarkNotificationsRead{AccountID: moneytest.Account}); err != nil {
		t.Fatal(err)
	}
	notify(30) // the 550th trims back to the cap
	in := env.Inbox(a.ID)
	if len(in.Notifications) != agent.InboxCap || in.UnreadCount != 30 {
		t.Fatalf("%d notifications, %d unread; want %d, 30", len(in.Notifications), in.UnreadCount, agent.InboxCap)
	}
	oldest := in.Notifications[len(in.Notifications)-1]
	if oldest.ID != 51 || !oldest.Read {
		t.Fatalf("oldest kept %+v, want read #51", oldest)
	}
	// Nothing read left to drop: the oldest unread go, the bound holds.
	if _, err := env.Host.Request(ctx, a.ID, &agent.DeleteNotifications{AccountID: moneytest.Account}); err != nil {
		t.Fatal(err)
	}
	notify(700)
	in = env.Inbox(a.ID)
	if n := len(in.Notifications); n > agent.InboxCap+50 || n < agent.InboxCap {
		t.Fatalf("%d notifications after 700 unread", n)
	}
	if in.Notifications[0].ID != 1250 {
		t.Fatalf("newest %+v", in.Notifications[0])
	}
}
