package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/host"
)

// TableEpochs holds one record per agent: the ownership epoch of its
// latest activation in the cluster. Its version is the fencing token.
const TableEpochs = "agent_epochs"

// epochRecord is what an activation writes when it takes the agent over.
type epochRecord struct {
	Member      string    `json:"member"`
	ActivatedAt time.Time `json:"activated_at"`
}

// FencedLoader wraps the agent loader so that every activation takes an
// ownership epoch from the store before it loads the agent: it writes the
// agent's TableEpochs record, and the record's new version is the
// activation's fencing token. Every write of that activation (build gets a
// store that adds the check to each batch) and the start of every request
// check that the token is still current, so once another member has
// activated the agent (a partition healed, a paused member woke up), the
// stale activation's writes are refused before they land and before the
// request goes on to sign anything; its requests fail with host.ErrStale
// and it is passivated. Each request's context carries the epoch as a
// persistence.Fence, so writes made for it through a persistence.Fencing
// store (the chain connectors' intents, the spending policy) are fenced too,
// in their own transactions. member names this member in the record (for
// people reading the table).
func FencedLoader(store persistence.Store, member func() string, build func(persistence.Store) host.Loader) host.Loader {
	return func(ctx context.Context, id string) (host.Agent, error) {
		epoch, err := takeEpoch(ctx, store, id, member())
		if err != nil {
			return nil, err
		}
		fs := &fencedStore{Store: store, id: id, epoch: epoch}
		inner, err := build(fs)(ctx, id)
		if err != nil {
			return nil, err
		}
		fa := &fencedAgent{inner: inner, store: fs}
		if p, ok := inner.(host.Passivator); ok {
			return &fencedPassivator{fencedAgent: fa, p: p}, nil
		}
		return fa, nil
	}
}

// takeEpoch bumps the agent's epoch record and returns its new version.
func takeEpoch(ctx context.Context, store persistence.Store, id, member string) (uint64, error) {
	raw, _ := json.Marshal(epochRecord{Member: member, ActivatedAt: time.Now().UTC()})
	for range 5 {
		expect := persistence.Absent()
		rec, err := store.Get(ctx, TableEpochs, id)
		switch {
		case errors.Is(err, persistence.ErrNotFound):
		case err != nil:
			return 0, fmt.Errorf("agent %s: read its ownership epoch: %w", id, err)
		default:
			expect = persistence.AtVersion(rec.Version)
		}
		vs, err := store.Apply(ctx, persistence.Put(TableEpochs, id, raw, expect))
		if errors.Is(err, persistence.ErrConflict) {
			continue // another activation raced us; read again
		}
		if err != nil {
			return 0, fmt.Errorf("agent %s: take its ownership epoch: %w", id, err)
		}
		return vs[0], nil
	}
	return 0, fmt.Errorf("agent %s: %w: its ownership epoch kept moving (two members activating it at once)", id, host.ErrStale)
}

// fencedStore adds the activation's epoch check to every batch it applies.
type fencedStore struct {
	persistence.Store
	id    string
	epoch uint64
}

func (s *fencedStore) fence() persistence.Op {
	return persistence.Check(TableEpochs, s.id, persistence.AtVersion(s.epoch))
}

// Apply runs ops only while the activation's epoch is current. A failed
// fence is host.ErrStale, never a persistence conflict: callers that
// turn conflicts into answers of their own (a replayed signature, a
// concurrent create) must not mistake it for theirs.
func (s *fencedStore) Apply(ctx context.Context, ops ...persistence.Op) ([]uint64, error) {
	vs, err := s.Store.Apply(ctx, append([]persistence.Op{s.fence()}, ops...)...)
	if err != nil {
		return nil, s.stale(err)
	}
	return vs[1:], nil
}

// verify checks the epoch alone, with a read (no commit): the epoch
// record only ever moves forward, so a read that finds it at this
// activation's version proves no later activation had taken the agent
// when the request started.
func (s *fencedStore) verify(ctx context.Context) error {
	rec, err := s.Store.Get(ctx, TableEpochs, s.id)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return fmt.Errorf("agent %s: %w: its ownership epoch record is gone", s.id, host.ErrStale)
	case err != nil:
		return fmt.Errorf("agent %s: read its ownership epoch: %w", s.id, err)
	case rec.Version != s.epoch:
		return fmt.Errorf("agent %s: %w: another member activated it (epoch %d is now %d)", s.id, host.ErrStale, s.epoch, rec.Version)
	}
	return nil
}

func (s *fencedStore) stale(err error) error {
	if errors.Is(err, persistence.ErrFenced) && !errors.Is(err, host.ErrStale) {
		return fmt.Errorf("agent %s: %w: %w", s.id, host.ErrStale, err)
	}
	var ce *persistence.ConflictError
	if errors.As(err, &ce) && ce.Table == TableEpochs && ce.Key == s.id {
		return fmt.Errorf("agent %s: %w: another member activated it (epoch %d is now %d)", s.id, host.ErrStale, s.epoch, ce.Actual)
	}
	return err
}

// fencedAgent checks the epoch before each request.
type fencedAgent struct {
	inner host.Agent
	store *fencedStore
}

// The request's context carries the activation's fence, so every write
// made for it through a persistence.Fencing store (the chain connectors'
// payment intents, the spending policy's count before a signature) is
// refused in its own transaction once another member has taken the agent:
// the check at the start is a read, the fence closes the gap after it.
func (a *fencedAgent) Receive(ctx context.Context, msg any) (any, error) {
	if err := a.store.verify(ctx); err != nil {
		return nil, err
	}
	ctx = persistence.WithFence(ctx, persistence.Fence{Table: TableEpochs, Key: a.store.id, Version: a.store.epoch})
	v, err := a.inner.Receive(ctx, msg)
	if err != nil {
		err = a.store.stale(err)
	}
	return v, err
}

type fencedPassivator struct {
	*fencedAgent
	p host.Passivator
}

func (a *fencedPassivator) Passivate() { a.p.Passivate() }
