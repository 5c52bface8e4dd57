package jsonrec

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/veilhq/veil/persistence"
)

func TestLoadSaveVersions(t *testing.T) {
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "r.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
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
