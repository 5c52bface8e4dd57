package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
)

// applies counts the agents' store commits.
type applies struct {
	persistence.Store
	n atomic.Int64
}

func (s *applies) Apply(ctx context.Context, ops ...persistence.Op) ([]uint64, error) {
	s.n.Add(1)
	return s.Store.Apply(ctx, ops...)
}

// A chat that runs no tool stores the user's message and the answer in
// one commit; one that runs a tool stores the user's message before the
// tool runs, the tool's outcome, then the answer (issue 21). Every message
// is stored either way.
func TestChatCommits(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	store := &applies{Store: env.Store}
	env.Configure = func(d *agent.Deps) {
		d.Store = store
		d.Models = func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) }
	}
	env.Restart()
	a := env.CreateAgent("talker")
	for _, tc := range []struct {
		msg          string
		commits      int64
		wantMessages int
	}{
		{"hello", 1, 2},
		{"show my agent info", 3, 3},
	} {
		before := store.n.Load()
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: tc.msg, RequestID: "r-" + tc.msg})
		if err != nil {
			t.Fatalf("%q: %v", tc.msg, err)
		}
		if n := store.n.Load() - before; n != tc.commits {
			t.Errorf("%q: %d commits, want %d", tc.msg, n, tc.commits)
		}
		reply := v.(*agent.ChatReply)
		msgs, err := env.Host.Request(ctx, a.ID, &agent.ListMessages{AccountID: moneytest.Account, ConversationID: reply.ConversationID})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(msgs.([]agent.Message)); got != tc.wantMessages {
			t.Errorf("%q: %d messages stored, want %d", tc.msg, got, tc.wantMessages)
		}
	}
}
