package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Conversation is the spec's Conversation.
type Conversation struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`

	// state is what follow-ups refer to (convstate.go), kept in the
	// stored record (storedConversation), not shown by the API; nil for a
	// conversation whose record does not hold it (stored before issue 38,
	// or last written by an earlier build).
	state *convState
}

// Message is a stored message; ID is not returned by the messages endpoint.
type Message struct {
	ID        int64     `json:"-"`
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"createdAt"`
}

// storedMessage keeps the id in the store, which the API hides: its ID
// shadows Message's (hidden) one in JSON, the other fields are Message's.
type storedMessage struct {
	ID int64 `json:"id"`
	Message
}

// storedConversation is a Conversation as the store keeps it: with the
// conversation's state (convstate.go), which was a record of its own
// (TableConvState) and so another B+tree leaf for every chat turn to write
// in the single bbolt committer (issue 38). The turn writes this record
// anyway.
type storedConversation struct {
	Conversation
	State *convState `json:"state,omitempty"`
}

func (c *Conversation) stored() storedConversation {
	return storedConversation{Conversation: *c, State: c.state}
}

func (s *storedConversation) conversation() *Conversation {
	c := s.Conversation
	c.state = s.State
	return &c
}

func (a *Actor) convKey(convID string) string { return a.id + "/" + convID }

// msgPrefix is the prefix of one conversation's messages; ids are
// fixed-width hex so key order is id order is time order.
func (a *Actor) msgPrefix(convID string) string { return a.id + "/" + convID + "/" }

func msgKey(prefix string, id int64) string { return fmt.Sprintf("%s%016x", prefix, id) }

func (a *Actor) listConversations(ctx context.Context) ([]Conversation, error) {
	stored, err := jsonrec.List[storedConversation](ctx, a.deps.Store, TableConversations, persistence.Query{Prefix: a.id + "/"})
	if err != nil {
		return nil, err
	}
	out := make([]Conversation, len(stored))
	for i := range stored {
		out[i] = *stored[i].conversation()
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

func (a *Actor) createConversation(ctx context.Context) (*Conversation, error) {
	now := a.deps.now()
	c := &Conversation{ID: newConversationID(), Title: "", CreatedAt: now, UpdatedAt: now, state: &convState{}}
	raw, err := json.Marshal(c.stored())
	if err != nil {
		return nil, err
	}
	if _, err := a.deps.Store.Apply(ctx, persistence.Put(TableConversations, a.convKey(c.ID), raw, persistence.Absent())); err != nil {
		return nil, fmt.Errorf("agent %s: create conversation: %w", a.id, err)
	}
	return c, nil
}

func (a *Actor) getConversation(ctx context.Context, convID string) (*Conversation, uint64, error) {
	if _, err := uuid.Parse(convID); err != nil {
		return nil, 0, ErrConversationNotFound
	}
	s, version, err := jsonrec.Load[storedConversation](ctx, a.deps.Store, TableConversations, a.convKey(convID))
	if err != nil {
		return nil, 0, err
	}
	if s == nil {
		return nil, 0, ErrConversationNotFound
	}
	return s.conversation(), version, nil
}

func (a *Actor) listMessages(ctx context.Context, convID string) ([]Message, error) {
	if _, _, err := a.getConversation(ctx, convID); err != nil {
		return nil, err
	}
	stored, err := jsonrec.List[storedMessage](ctx, a.deps.Store, TableMessages, persistence.Query{Prefix: a.msgPrefix(convID)})
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(stored))
	for i, m := range stored {
		out[i] = m.Message
		out[i].ID = m.ID
	}
	return out, nil
}

func (a *Actor) deleteConversation(ctx context.Context, convID string) error {
	_, version, err := a.getConversation(ctx, convID)
	if err != nil {
		return err
	}
	_, err = a.deps.Store.Apply(ctx,
		persistence.Delete(TableConversations, a.convKey(convID), persistence.AtVersion(version)),
		persistence.DeletePrefix(TableMessages, a.msgPrefix(convID)),
		persistence.DeletePrefix(TableConvState, a.convKey(convID)),
	)
	if err != nil {
		return fmt.Errorf("agent %s: delete conversation: %w", a.id, err)
	}
	return nil
}

// AppendMessages stores messages at the end of a conversation and moves its
// updatedAt, atomically (with the agent's message counter when a new block
// of ids is reserved: messageids.go). The chat loop uses
// it; every message is durable before the reply that mentions it.
func (a *Actor) AppendMessages(ctx context.Context, conv *Conversation, convVersion uint64, msgs ...Message) error {
	_, err := a.appendMessages(ctx, conv, convVersion, msgs...)
	return err
}

// appendMessages is AppendMessages answering the conversation's new
// version, so that the next append needs no read.
func (a *Actor) appendMessages(ctx context.Context, conv *Conversation, convVersion uint64, msgs ...Message) (uint64, error) {
	return a.appendMessagesWith(ctx, conv, convVersion, nil, msgs...)
}

// appendMessagesWith is appendMessages committing extra ops (the
// conversation's state) in the same commit.
func (a *Actor) appendMessagesWith(ctx context.Context, conv *Conversation, convVersion uint64, extra []persistence.Op, msgs ...Message) (uint64, error) {
	now := a.deps.now()
	c := *conv
	first, next := a.reserveMessageIDs(len(msgs))
	ops := make([]persistence.Op, 0, len(msgs)+len(extra)+2)
	ops = append(ops, extra...)
	for i, m := range msgs {
		id := first + int64(i)
		if m.CreatedAt.IsZero() {
			m.CreatedAt = now
		}
		raw, err := json.Marshal(storedMessage{ID: id, Message: m})
		if err != nil {
			return 0, err
		}
		ops = append(ops, persistence.Put(TableMessages, msgKey(a.msgPrefix(c.ID), id), raw, persistence.Absent()))
	}
	c.UpdatedAt = now
	raw, err := json.Marshal(c.stored())
	if err != nil {
		return 0, err
	}
	expect := persistence.AtVersion(convVersion)
	if convVersion == 0 {
		expect = persistence.Absent()
	}
	ops = append(ops, persistence.Put(TableConversations, a.convKey(c.ID), raw, expect))
	n := len(ops)
	var vs []uint64
	if next != nil {
		vs, err = a.saveRecordVersions(ctx, next, ops...)
	} else if vs, err = a.deps.Store.Apply(ctx, ops...); err != nil {
		err = fmt.Errorf("agent %s: save: %w", a.id, err)
	}
	if err != nil {
		return 0, err
	}
	a.usedMessageIDs(first + int64(len(msgs)) - 1)
	*conv = c
	return vs[n-1], nil
}
