package agent_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
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

// A chat given its request's audit record writes it in the commit that
// stores the answer: no commit more than without one (issue 38), the
// record noted with the tools run, and the reply says it was written.
func TestChatWritesItsAuditRecordWithTheAnswer(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	store := &applies{Store: env.Store}
	env.Configure = func(d *agent.Deps) {
		d.Store = store
		d.Models = func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) }
	}
	env.Restart()
	a := env.CreateAgent("auditee")
	for i, tc := range []struct {
		msg, detail string
		commits     int64
	}{
		{"hello", "", 1},
		{"show my agent info", "tools: get_agent_info (success)", 3},
	} {
		rec := &audit.Record{Time: time.Now(), AccountID: moneytest.Account, RequestID: fmt.Sprintf("req-%d", i), Method: "POST",
			Route: "/agent/{id}/chat", Path: "/agent/" + a.ID + "/chat", AgentID: a.ID, Action: "agent.chat", Status: 200, Outcome: audit.OutcomeOK}
		before := store.n.Load()
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: tc.msg, RequestID: rec.RequestID, Audit: rec})
		if err != nil {
			t.Fatalf("%q: %v", tc.msg, err)
		}
		if n := store.n.Load() - before; n != tc.commits {
			t.Errorf("%q: %d commits, want %d (the audit record rides with the answer)", tc.msg, n, tc.commits)
		}
		if !v.(*agent.ChatReply).Audited {
			t.Errorf("%q: reply does not say the record was written", tc.msg)
		}
		recs, _, err := audit.List(ctx, env.Store, moneytest.Account, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		var found []audit.Record
		for _, r := range recs {
			if r.RequestID == rec.RequestID {
				found = append(found, r)
			}
		}
		if len(found) != 1 {
			t.Fatalf("%q: %d audit records of the request, want 1", tc.msg, len(found))
		}
		if got := found[0]; got.Status != 200 || got.Outcome != audit.OutcomeOK || got.Detail != tc.detail || got.AgentID != a.ID {
			t.Errorf("%q: record %+v, want status 200, ok, detail %q", tc.msg, got, tc.detail)
		}
	}
	// A request the system runs twice (the same request, the same record
	// id): both runs answer, and the request has one record.
	twice, _, err := audit.Prepare(audit.Record{AccountID: moneytest.Account, RequestID: "twice", Action: "agent.chat", Status: 200, Outcome: audit.OutcomeOK})
	if err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		rec := twice
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: "hello", RequestID: "twice", Audit: &rec})
		if err != nil || !v.(*agent.ChatReply).Audited {
			t.Fatalf("run %d of one request: %v", run, err)
		}
	}
	recs, _, err := audit.List(ctx, env.Store, moneytest.Account, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.RequestID == "twice" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a request run twice has %d records, want 1", n)
	}
	// Without a record the reply says nothing was written.
	v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: "hello", RequestID: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if v.(*agent.ChatReply).Audited {
		t.Error("a chat without a record says it wrote one")
	}
}
