package persistence

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Watched versions (issue 38). A bbolt file is one process's: every write
// to it goes through this process's committer, which therefore knows a
// record's new version the moment it commits. A caller that must see a
// record's latest version on every request (the API-key epoch, so that a
// revocation takes effect at once) asks a watch instead of opening a read
// transaction: bbolt's read transactions all take one mutex (DB.beginTx),
// the most contended lock under chat load, a third of it from the API-key
// reads (docs/BENCHMARKS.md). PostgreSQL has no watches: cluster members
// share it, so only a read sees another member's write.

// Watcher is implemented by stores that can answer a record's version
// from memory.
type Watcher interface {
	// Watch returns a function that answers the record's current version
	// (0: absent) without touching the database: at any moment, what a
	// Get would answer, including every write whose Apply has returned.
	Watch(ctx context.Context, table, key string) (func() uint64, error)
}

type watches struct {
	mu     sync.Mutex // serializes registration against the committer's updates
	tables atomic.Pointer[map[string]map[string]*atomic.Uint64]
	// any is set before the first registration reads its record: a commit
	// that finds it unset landed before that read, which then sees it.
	any atomic.Bool
}

// Watch implements Watcher.
func (s *Bolt) Watch(ctx context.Context, table, key string) (func() uint64, error) {
	if err := ValidateGet(table, key); err != nil {
		return nil, err
	}
	w := &s.watches
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := w.tables.Load()
	if cur != nil {
		if v := (*cur)[table][key]; v != nil {
			return v.Load, nil
		}
	}
	// Read under mu: a commit that lands meanwhile updates the watch only
	// after this registration, and one that landed before is in the read.
	w.any.Store(true)
	rec, err := s.Get(ctx, table, key)
	var version uint64
	switch {
	case err == nil:
		version = rec.Version
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	v := new(atomic.Uint64)
	v.Store(version)
	next := map[string]map[string]*atomic.Uint64{}
	if cur != nil {
		for t, keys := range *cur {
			next[t] = keys
		}
	}
	keys := map[string]*atomic.Uint64{key: v}
	for k, x := range next[table] {
		keys[k] = x
	}
	next[table] = keys
	w.tables.Store(&next)
	return v.Load, nil
}

// noteWatched updates the watches a committed group changed. The
// committer calls it before it answers the group's callers, so that a
// write whose Apply has returned is seen by every watch.
func (s *Bolt) noteWatched(group []*request) {
	w := &s.watches
	if !w.any.Load() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	cur := w.tables.Load()
	if cur == nil {
		return
	}
	for _, r := range group {
		if r.Err != nil {
			continue
		}
		for i, op := range r.Batch.ops {
			keys := (*cur)[op.Table]
			if keys == nil {
				continue
			}
			if op.Kind == OpDeletePrefix {
				for k, v := range keys {
					if len(k) >= len(op.Key) && k[:len(op.Key)] == op.Key {
						v.Store(0)
					}
				}
				continue
			}
			if v := keys[op.Key]; v != nil {
				v.Store(r.Versions[i])
			}
		}
	}
}
