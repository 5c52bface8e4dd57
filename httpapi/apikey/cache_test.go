package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// reads counts the store's Gets by table.
type reads struct {
	persistence.Store
	keys, epoch atomic.Int64
}

func (r *reads) Get(ctx context.Context, table, key string) (persistence.Record, error) {
	switch table {
	case TableKeys:
		r.keys.Add(1)
	case TableEpoch:
		r.epoch.Add(1)
	}
	return r.Store.Get(ctx, table, key)
}

// Two caches on one store stand for two cluster members. A key one member
// revokes or rotates, or an account whose limit changes, is seen by the
// other on its next request (the epoch moved), while a key nothing changed
// is answered from memory with one read of the epoch. A write that does
// not move the epoch (an earlier version's) is seen within maxAge.
//
// Over a store that reads the epoch (PostgreSQL; here bbolt behind a
// wrapper that hides its watch) and over bbolt's watch (no read at all).
func TestCacheSeesEveryChangeAtOnce(t *testing.T) {
	t.Run("read", func(t *testing.T) { testCache(t, false) })
	t.Run("watch", func(t *testing.T) { testCache(t, true) })
}

func testCache(t *testing.T, watch bool) {
	ctx := context.Background()
	bolt, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	counted := &reads{Store: bolt}
	var st persistence.Store = counted
	if watch {
		st = bolt
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	boot, err := Bootstrap(ctx, st, now)
	if err != nil {
		t.Fatal(err)
	}
	acc, _, err := Lookup(ctx, st, boot)
	if err != nil {
		t.Fatal(err)
	}
	mono := time.Now()
	a, b := NewCache(), NewCache()
	a.now = func() time.Time { return mono }
	b.now = a.now
	secret, made, err := Issue(ctx, st, acc, Options{Name: "m", Scope: ScopeChat}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Cache{a, b} {
		if _, k, err := c.Lookup(ctx, st, secret); err != nil || k.ID != made.ID || k.Scope != ScopeChat {
			t.Fatalf("first lookup: %+v %v", k, err)
		}
	}
	// Unchanged: from memory, one read of the epoch, none of the key.
	keys, epochs := counted.keys.Load(), counted.epoch.Load()
	for i := 0; i < 10; i++ {
		if _, _, err := b.Lookup(ctx, st, secret); err != nil {
			t.Fatal(err)
		}
	}
	if !watch {
		if n := counted.keys.Load() - keys; n != 0 {
			t.Errorf("%d key reads for 10 cached lookups, want 0", n)
		}
		if n := counted.epoch.Load() - epochs; n != 10 {
			t.Errorf("%d epoch reads for 10 lookups, want 10", n)
		}
	}
	// A limit set on the account: the other member sees it at once.
	if _, err := SetRateLimit(ctx, st, acc.ID, &Limit{PerSecond: 5, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := b.Lookup(ctx, st, secret); err != nil || got.RateLimit == nil || got.RateLimit.PerSecond != 5 {
		t.Fatalf("after SetRateLimit: %+v %v", got.RateLimit, err)
	}
	// Rotated on a: the old key is refused by b at once, the new one works.
	fresh, _, _, err := Rotate(ctx, st, acc.ID, made.ID, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lookup(ctx, st, secret); !errors.Is(err, ErrRevoked) {
		t.Fatalf("rotated key on the other member: %v", err)
	}
	if _, k, err := b.Lookup(ctx, st, fresh); err != nil || k.Scope != ScopeChat {
		t.Fatalf("new key: %+v %v", k, err)
	}
	// Revoked through a: refused by b on its next request.
	if _, _, err := a.Lookup(ctx, st, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := Revoke(ctx, st, acc.ID, IDOf(Hash(fresh)), now); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Cache{"a": a, "b": b} {
		if _, _, err := c.Lookup(ctx, st, fresh); !errors.Is(err, ErrRevoked) {
			t.Fatalf("member %s after revoke: %v", name, err)
		}
	}
	// Unknown and malformed keys are never remembered as good.
	other, _ := Generate(false)
	if _, _, err := b.Lookup(ctx, st, other); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, _, err := b.Lookup(ctx, st, "veil_live_short"); !errors.Is(err, ErrMalformed) {
		t.Fatalf("malformed key: %v", err)
	}
	// A revocation written without the epoch (a member of an earlier
	// version): seen once the entry is maxAge old.
	third, k3, err := Issue(ctx, st, acc, Options{Scope: ScopeRead}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lookup(ctx, st, third); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, TableKeys, Hash(third))
	if err != nil {
		t.Fatal(err)
	}
	k3.RevokedAt = &now
	raw, err := json.Marshal(k3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(ctx, persistence.Put(TableKeys, Hash(third), raw, persistence.AtVersion(rec.Version))); err != nil {
		t.Fatal(err)
	}
	mono = mono.Add(cacheMaxAge)
	if _, _, err := b.Lookup(ctx, st, third); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked without the epoch, after maxAge: %v", err)
	}
}
