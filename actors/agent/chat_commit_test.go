package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/agent/tools"
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

// countingEnv is an agent host on the builtin model whose agents' commits
// store counts.
func countingEnv(t *testing.T) (*moneytest.Env, *applies) {
	t.Helper()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	store := &applies{Store: env.Store}
	env.Configure = func(d *agent.Deps) {
		d.Store = store
		d.Models = func(p, key string) (llms.Model, error) { return llm.Config{}.Model(llm.Provider(p), key) }
	}
	env.Restart()
	return env, store
}

// A chat that runs no tool stores the user's message and the answer in
// one commit; so does one whose tools only read (tools.Tool.ReadOnly: the
// read's outcome goes with them, issue 38). One that runs a tool that does
// more stores the user's message before the tool runs, the tool's outcome,
// then the answer (issue 21). Every message is stored, in order, either
// way.
func TestChatCommits(t *testing.T) {
	ctx := context.Background()
	env, store := countingEnv(t)
	a := env.CreateAgent("talker")
	for _, tc := range []struct {
		msg     string
		commits int64
		roles   []string
	}{
		{"hello", 1, []string{"user", "agent"}},
		{"show my agent info", 1, []string{"user", "tool", "agent"}},
		{"what's my balance?", 1, []string{"user", "tool", "agent"}},
		// The user's message, the memory (the tool's own), its outcome, the
		// answer.
		{"remember that I prefer USDC", 4, []string{"user", "tool", "agent"}},
		// A read beside a write is not a response of reads: the user's
		// message first, as for the write alone.
		{"check my balance and remember that I like short answers", 4, []string{"user", "tool", "tool", "agent"}},
	} {
		before := store.n.Load()
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: tc.msg, RequestID: "r-" + tc.msg})
		if err != nil {
			t.Fatalf("%q: %v", tc.msg, err)
		}
		if n := store.n.Load() - before; n != tc.commits {
			t.Errorf("%q: %d commits, want %d (%+v)", tc.msg, n, tc.commits, v.(*agent.ChatReply).ToolCalls)
		}
		reply := v.(*agent.ChatReply)
		msgs, err := env.Host.Request(ctx, a.ID, &agent.ListMessages{AccountID: moneytest.Account, ConversationID: reply.ConversationID})
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range msgs.([]agent.Message) {
			roles = append(roles, m.Role)
		}
		if !slices.Equal(roles, tc.roles) {
			t.Errorf("%q: messages stored %v, want %v", tc.msg, roles, tc.roles)
		}
		if len(reply.ToolCalls) != len(tc.roles)-2 || (len(reply.ToolCalls) == 1 && reply.ToolCalls[0].Status != "success") {
			t.Errorf("%q: tool calls %+v", tc.msg, reply.ToolCalls)
		}
	}
}

// A chat given its request's audit record writes it in the commit that
// stores the answer: no commit more than without one (issue 38), the
// record noted with the tools run, and the reply says it was written.
func TestChatWritesItsAuditRecordWithTheAnswer(t *testing.T) {
	ctx := context.Background()
	env, store := countingEnv(t)
	a := env.CreateAgent("auditee")
	for i, tc := range []struct {
		msg, detail string
		commits     int64
	}{
		{"hello", "", 1},
		{"show my agent info", "tools: get_agent_info (success)", 1},
		{"remember that I prefer USDC", "tools: save_memory (success)", 4},
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

// A chat turn writes its messages and its conversation (which holds its
// state), not the agent's record (issue 38: one page less in the single
// committer per turn): only an activation's first append writes it, to
// reserve a block of message ids. Ids stay unique and increasing per agent
// (a conversation stored before included), and the record's counter stays
// at least every id stored, so that an earlier build, which numbers from
// it, collides with none (a rolling upgrade's rollback).
func TestChatTurnLeavesTheAgentRecordAndNumbersMessagesInTheConversation(t *testing.T) {
	ctx := context.Background()
	env, _ := countingEnv(t)
	a := env.CreateAgent("counter")

	// A conversation as an earlier version stored it: no counter of its
	// own, its message numbered 41 from the agent's counter, now 41.
	rec, err := env.Store.Get(ctx, agent.TableAgents, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(rec.Value, &fields); err != nil {
		t.Fatal(err)
	}
	fields["lastMessageId"] = 41
	raw, _ := json.Marshal(fields)
	legacy := uuid.NewString()
	now := time.Now().UTC()
	conv, _ := json.Marshal(map[string]any{"id": legacy, "title": "old", "createdAt": now, "updatedAt": now})
	old, _ := json.Marshal(map[string]any{"id": 41, "role": "user", "text": "old words", "createdAt": now})
	if _, err := env.Store.Apply(ctx,
		persistence.Put(agent.TableAgents, a.ID, raw, persistence.AtVersion(rec.Version)),
		persistence.Put(agent.TableConversations, a.ID+"/"+legacy, conv, persistence.Absent()),
		persistence.Put(agent.TableMessages, fmt.Sprintf("%s/%s/%016x", a.ID, legacy, 41), old, persistence.Absent()),
	); err != nil {
		t.Fatal(err)
	}
	env.Restart()
	rec, err = env.Store.Get(ctx, agent.TableAgents, a.ID)
	if err != nil {
		t.Fatal(err)
	}

	chat := func(convID, msg string) string {
		t.Helper()
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, ConversationID: convID, Message: msg, RequestID: uuid.NewString()})
		if err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		return v.(*agent.ChatReply).ConversationID
	}
	fresh := chat("", "hello")
	reserved, err := env.Store.Get(ctx, agent.TableAgents, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if reserved.Version != rec.Version+1 {
		t.Errorf("the activation's first chat: agent's record at version %d, want %d (one write, the block of ids)", reserved.Version, rec.Version+1)
	}
	chat(fresh, "show my agent info")
	chat(legacy, "hello again")
	chat(fresh, "hello")

	after, err := env.Store.Get(ctx, agent.TableAgents, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != reserved.Version {
		t.Errorf("chats rewrote the agent's record: version %d, was %d", after.Version, reserved.Version)
	}
	var counter struct {
		LastMessageID int64 `json:"lastMessageId"`
	}
	if err := json.Unmarshal(after.Value, &counter); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, tc := range []struct {
		conv  string
		texts []string
	}{
		{fresh, []string{"hello", "", "show my agent info", "", "", "hello", ""}},
		{legacy, []string{"old words", "hello again", ""}},
	} {
		stored, err := env.Store.List(ctx, agent.TableMessages, persistence.Query{Prefix: a.ID + "/" + tc.conv + "/"})
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != len(tc.texts) {
			t.Fatalf("conversation %s: %d messages, want %d", tc.conv, len(stored), len(tc.texts))
		}
		last := int64(0)
		for i, r := range stored {
			var m struct {
				ID   int64  `json:"id"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatal(err)
			}
			if m.ID <= last || r.Key != fmt.Sprintf("%s/%s/%016x", a.ID, tc.conv, m.ID) {
				t.Errorf("conversation %s: message %d has id %d under key %s after id %d", tc.conv, i, m.ID, r.Key, last)
			}
			if tc.texts[i] != "" && m.Text != tc.texts[i] {
				t.Errorf("conversation %s: message %d is %q, want %q", tc.conv, i, m.Text, tc.texts[i])
			}
			last = m.ID
			if seen[m.ID] || m.ID > counter.LastMessageID {
				t.Errorf("message id %d: taken twice, or above the record's counter %d", m.ID, counter.LastMessageID)
			}
			seen[m.ID] = true
		}
		if tc.conv == legacy && stored[1].Key <= stored[0].Key {
			t.Errorf("the legacy conversation's new message sorts before its old one")
		}
	}
}

// seer is a model that answers "ok" and keeps the text of every message it
// was shown.
type seer struct {
	mu   sync.Mutex
	seen []string
}

func (s *seer) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return "ok", nil
}

func (s *seer) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = s.seen[:0]
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				s.seen = append(s.seen, t.Text)
			}
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "ok"}}}, nil
}

func (s *seer) saw(text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.seen {
		if strings.Contains(t, text) {
			return true
		}
	}
	return false
}

// A conversation's state lives in its record (issue 38: no record of its
// own to write per turn). One stored before, whose state is in
// TableConvState, is still read from there, and its next turn moves the
// state into the conversation's record.
func TestConversationStateLivesInTheConversationRecord(t *testing.T) {
	ctx := context.Background()
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Now()))
	model := &seer{}
	env.Configure = func(d *agent.Deps) {
		d.Models = func(string, string) (llms.Model, error) { return model, nil }
	}
	env.Restart()
	a := env.CreateAgent("stateful")
	legacy := uuid.NewString()
	now := time.Now().UTC()
	conv, _ := json.Marshal(map[string]any{"id": legacy, "title": "old", "createdAt": now, "updatedAt": now})
	st, _ := json.Marshal(map[string]any{"people": []string{"zelda-the-marker"}})
	if _, err := env.Store.Apply(ctx,
		persistence.Put(agent.TableConversations, a.ID+"/"+legacy, conv, persistence.Absent()),
		persistence.Put(agent.TableConvState, a.ID+"/"+legacy, st, persistence.Absent()),
	); err != nil {
		t.Fatal(err)
	}
	chat := func(convID string) string {
		t.Helper()
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, ConversationID: convID, Message: "hello", RequestID: uuid.NewString()})
		if err != nil {
			t.Fatal(err)
		}
		return v.(*agent.ChatReply).ConversationID
	}
	chat(legacy)
	if !model.saw("zelda-the-marker") {
		t.Fatal("the state of a conversation stored before was not read from its old table")
	}
	rec, err := env.Store.Get(ctx, agent.TableConversations, a.ID+"/"+legacy)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rec.Value), "zelda-the-marker") {
		t.Errorf("the turn did not move the state into the conversation's record: %s", rec.Value)
	}
	// The old record is gone (an earlier build finds no stale state), and
	// the state is still there.
	if _, err := env.Store.Get(ctx, agent.TableConvState, a.ID+"/"+legacy); !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("the moved state's old record: %v, want it deleted", err)
	}
	env.Restart()
	chat(legacy)
	if !model.saw("zelda-the-marker") {
		t.Error("the state moved into the conversation's record was not read from it")
	}
	// A new conversation writes no record of its own state.
	fresh := chat("")
	chat(fresh)
	if recs, err := env.Store.List(ctx, agent.TableConvState, persistence.Query{Prefix: a.ID + "/"}); err != nil || len(recs) != 0 {
		t.Errorf("conversation state records %v (%v), want none", recs, err)
	}
}

// Every tool marked ReadOnly writes nothing when it runs (what lets the
// chat store nothing before it): each is called with the records it reads
// in place and must succeed without a commit.
func TestReadOnlyToolsWriteNothing(t *testing.T) {
	ctx := context.Background()
	env, store := countingEnv(t)
	a := env.CreateAgent("reader")
	// Something for the reads to find: an invoice and a memory.
	for _, msg := range []string{"create an invoice for 5 USDC for consulting", "remember that I prefer USDC"} {
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: msg, RequestID: "setup " + msg})
		if err != nil {
			t.Fatal(err)
		}
		if r := v.(*agent.ChatReply); len(r.ToolCalls) != 1 || r.ToolCalls[0].Status != "success" {
			t.Fatalf("%q: %+v", msg, r.ToolCalls)
		}
	}
	args := map[string]string{"resolve_name": `{"name":"reader"}`}
	ran := 0
	for _, tl := range tools.All() {
		if !tl.ReadOnly {
			continue
		}
		ran++
		before := store.n.Load()
		v, err := env.Host.Request(ctx, a.ID, &agent.CallTool{AccountID: moneytest.Account, Tool: tl.Name, Arguments: args[tl.Name]})
		if err != nil {
			t.Fatalf("%s: %v", tl.Name, err)
		}
		if res := v.(*agent.ToolCall); res.Status != "success" {
			t.Errorf("%s: %s %s", tl.Name, res.Status, res.Detail)
		}
		if n := store.n.Load() - before; n != 0 {
			t.Errorf("%s is ReadOnly and made %d commits", tl.Name, n)
		}
	}
	if ran == 0 {
		t.Fatal("no tool is ReadOnly")
	}
}

// TestNewConversationsSortByCreation: a new conversation's id is a
// version 7 UUID, so an agent's conversations (and their messages, keyed
// under them) are stored in the order they were created, at the end of
// the agent's key range: what lets one applier transaction's turns share
// bbolt leaves. A random (version 4) id fails it.
func TestNewConversationsSortByCreation(t *testing.T) {
	ctx := context.Background()
	env, _ := countingEnv(t)
	a := env.CreateAgent("ordered")
	var created []string
	for i := range 6 {
		if i == 3 {
			v, err := env.Host.Request(ctx, a.ID, &agent.CreateConversation{AccountID: moneytest.Account})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, v.(*agent.Conversation).ID)
			continue
		}
		v, err := env.Host.Request(ctx, a.ID, &agent.Chat{AccountID: moneytest.Account, Message: "hello", RequestID: uuid.NewString()})
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, v.(*agent.ChatReply).ConversationID)
	}
	for _, id := range created {
		if u, err := uuid.Parse(id); err != nil || u.Version() != 7 {
			t.Fatalf("conversation id %q: version %d (%v), want 7", id, u.Version(), err)
		}
	}
	recs, err := env.Store.List(ctx, agent.TableConversations, persistence.Query{Prefix: a.ID + "/"})
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, r := range recs {
		stored = append(stored, strings.TrimPrefix(r.Key, a.ID+"/"))
	}
	if !slices.Equal(stored, created) {
		t.Fatalf("conversations in key order %q, want the order they were created %q", stored, created)
	}
}
