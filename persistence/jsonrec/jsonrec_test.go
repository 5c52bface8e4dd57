package jsonrec

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/veilhq/veil/persistence"
)

func TestLoadSaveVersions(t *testing.T) {
	st, ctx := open(t)
	type rec struct{ N int }
	if v, ver, err := Load[rec](ctx, st, "t", "k"); v != nil || ver != 0 || err != nil {
		t.Fatalf("missing = %v %d %v", v, ver, err)
	}
	v1, err := Save(ctx, st, "t", "k", rec{1}, 0)
	if err != nil || v1 != 1 {
		t.Fatalf("create = %d %v", v1, err)
	}
	if _, err := Save(ctx, st, "t", "k", rec{9}, 0); !errors.Is(err, persistence.ErrConflict) {
		t.Fatalf("second create = %v", err)
	}
	if _, err := Save(ctx, st, "t", "k", rec{2}, v1); err != nil {
		t.Fatal(err)
	}
	if _, err := Save(ctx, st, "t", "k", rec{3}, v1); !errors.Is(err, persistence.ErrConflict) {
		t.Fatalf("stale write = %v", err)
	}
	if v, ver, err := Load[rec](ctx, st, "t", "k"); err != nil || v.N != 2 || ver != 2 {
		t.Fatalf("load = %+v %d %v", v, ver, err)
	}
	if _, err := st.Apply(ctx, persistence.Put("t", "bad", []byte("{"), persistence.Any())); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load[rec](ctx, st, "t", "bad"); err == nil {
		t.Fatal("garbage decoded")
	}
}

func TestList(t *testing.T) {
	st, ctx := open(t)
	type rec struct{ N int }
	if got, err := List[rec](ctx, st, "t", persistence.Query{}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("empty table = %#v %v; want an empty, non-nil list", got, err)
	}
	for i, k := range []string{"a/2", "a/1", "b/1"} {
		if _, err := Save(ctx, st, "t", k, rec{i}, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := List[rec](ctx, st, "t", persistence.Query{Prefix: "a/"})
	if err != nil || len(got) != 2 || got[0].N != 1 || got[1].N != 0 {
		t.Fatalf("prefix a/ = %+v %v; want [{1} {0}] in key order", got, err)
	}
	if _, err := st.Apply(ctx, persistence.Put("t", "a/3", []byte("{"), persistence.Any())); err != nil {
		t.Fatal(err)
	}
	if _, err := List[rec](ctx, st, "t", persistence.Query{Prefix: "a/"}); err == nil {
		t.Fatal("garbage decoded")
	}
}

// open returns a fresh bbolt store, closed when the test ends.
func open(t *testing.T) (persistence.Store, context.Context) {
	t.Helper()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "r.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, context.Background()
}
