package apikey

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/veilhq/veil/persistence"
)

// Revocation must take effect at once on every cluster member, so a key
// cannot simply be remembered. Reading the key and its account on every
// request costs two store reads and two JSON decodes; the Cache costs one
// small read: the version of the epoch record, which every write that
// changes an existing key or account (Revoke, Rotate, SetRateLimit) bumps
// in its own commit. While the epoch a member reads is the one its cache
// was filled at, no key it remembers has changed, on any member (they
// share the store). A new epoch empties the cache. Expiry is checked
// against the clock on every request, cached or not.
//
// maxAge bounds what a write that does not bump the epoch could leave
// stale: a member of an earlier version revoking a key during a rolling
// upgrade, or a store restored from a backup. Those take effect within
// maxAge; everything made by this version takes effect at once.

// Epoch record: its version counts the changes to existing keys and
// accounts.
const (
	TableEpoch = "apikeys_epoch"
	epochKey   = "epoch"
)

const (
	cacheMaxAge     = time.Second
	cacheMaxEntries = 4096
)

// bumpEpoch is the operation every change of an existing key or account
// carries.
func bumpEpoch() persistence.Op {
	return persistence.Put(TableEpoch, epochKey, []byte("1"), persistence.Any())
}

// Cache answers Lookup from memory while the epoch is unchanged. The zero
// value is not usable: NewCache.
type Cache struct {
	now func() time.Time // monotonic clock for maxAge (tests set it)

	mu    sync.RWMutex
	epoch uint64 // the epoch version the entries were read at
	m     map[string]cached

	// watch answers the epoch from memory on a store that supports it
	// (persistence.Watcher: bbolt, one process's file), so that a
	// lookup reads nothing.
	watch atomic.Pointer[epochWatch]
}

type epochWatch struct {
	st      persistence.Store
	version func() uint64
}

type cached struct {
	acc  Account
	key  Key
	read time.Time
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{now: time.Now, m: make(map[string]cached)}
}

// Lookup is the package's Lookup, answered from the cache when the
// epoch has not moved since the key was read.
func (c *Cache) Lookup(ctx context.Context, st persistence.Store, key string) (Account, Key, error) {
	if err := Validate(key); err != nil {
		return Account{}, Key{}, err
	}
	epoch, err := c.readEpoch(ctx, st)
	if err != nil {
		return Account{}, Key{}, err
	}
	h := Hash(key)
	now := c.now()
	c.mu.RLock()
	e, ok := c.m[h]
	ok = ok && c.epoch == epoch && now.Sub(e.read) < cacheMaxAge
	c.mu.RUnlock()
	if ok {
		return check(e.acc, e.key)
	}
	acc, k, err := read(ctx, st, h)
	if err != nil {
		return Account{}, Key{}, err
	}
	c.mu.Lock()
	if epoch > c.epoch || len(c.m) >= cacheMaxEntries {
		clear(c.m)
		c.epoch = max(c.epoch, epoch)
	}
	if epoch == c.epoch { // a newer epoch read meanwhile: what we read may be older than it
		c.m[h] = cached{acc: acc, key: k, read: now}
	}
	c.mu.Unlock()
	return check(acc, k)
}

// readEpoch is the epoch's version (0 before any change), from the
// store's watch when it has one. It is read before the key, so an entry
// is never newer than the epoch it is filed under.
func (c *Cache) readEpoch(ctx context.Context, st persistence.Store) (uint64, error) {
	if w, ok := st.(persistence.Watcher); ok {
		if cur := c.watch.Load(); cur != nil && cur.st == st {
			return cur.version(), nil
		}
		fn, err := w.Watch(ctx, TableEpoch, epochKey)
		if err != nil {
			return 0, fmt.Errorf("apikey: watch epoch: %w", err)
		}
		c.watch.Store(&epochWatch{st: st, version: fn})
		return fn(), nil
	}
	return readEpoch(ctx, st)
}

func readEpoch(ctx context.Context, st persistence.Store) (uint64, error) {
	rec, err := st.Get(ctx, TableEpoch, epochKey)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("apikey: read epoch: %w", err)
	}
	return rec.Version, nil
}
