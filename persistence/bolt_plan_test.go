package persistence

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// A batch tracks its own effects while it is planned only when an op can
// see an earlier one's; either way the outcome is the same.
func TestNeedsOverlay(t *testing.T) {
	put := func(table, key string) Op { return Put(table, key, []byte("v"), Any()) }
	long := make([]Op, overlaySmall+1)
	for i := range long {
		long[i] = put("t", fmt.Sprint(i))
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want bool
	}{
		{"distinct keys and tables", []Op{put("a", "k"), put("b", "k"), put("a", "j")}, false},
		{"a key repeated", []Op{put("a", "k"), put("b", "x"), Delete("a", "k", Any())}, true},
		{"a prefix deleted", []Op{put("a", "k"), DeletePrefix("b", "p")}, true},
		{"longer than the pairwise check", long, true},
		{"the same batch without its last op", long[:overlaySmall], false},
	} {
		if got := needsOverlay(tc.ops); got != tc.want {
			t.Errorf("%s: %t, want %t", tc.name, got, tc.want)
		}
	}
	// With and without the overlay, a batch that repeats a key is planned
	// against its own earlier ops.
	st, err := OpenBolt(filepath.Join(t.TempDir(), "veil.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	vs, err := st.Apply(ctx, Put("a", "k", []byte("1"), Absent()), Put("b", "k", []byte("1"), Absent()), Put("a", "k", []byte("2"), AtVersion(1)))
	if err != nil || fmt.Sprint(vs) != "[1 1 2]" {
		t.Fatalf("repeated key: %v %v", vs, err)
	}
	vs, err = st.Apply(ctx, Put("a", "k", []byte("3"), AtVersion(2)), Put("c", "k", []byte("1"), Absent()))
	if err != nil || fmt.Sprint(vs) != "[3 1]" {
		t.Fatalf("no overlay: %v %v", vs, err)
	}
	rec, err := st.Get(ctx, "a", "k")
	if err != nil || string(rec.Value) != "3" || rec.Version != 3 {
		t.Fatalf("read back %q v%d %v", rec.Value, rec.Version, err)
	}
}

// A watch answers, at every moment, the version a Get would: absent is 0,
// every Apply that has returned is seen, a deleted record is 0 again.
func TestWatchSeesEveryReturnedApply(t *testing.T) {
	st, err := OpenBolt(filepath.Join(t.TempDir(), "veil.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.Apply(ctx, Put("w", "before", []byte("x"), Absent())); err != nil {
		t.Fatal(err)
	}
	before, err := st.Watch(ctx, "w", "before")
	if err != nil || before() != 1 {
		t.Fatalf("a record written before its watch: %v", err)
	}
	v, err := st.Watch(ctx, "w", "k")
	if err != nil || v() != 0 {
		t.Fatalf("absent: %v", err)
	}
	for want := uint64(1); want <= 5; want++ {
		if _, err := st.Apply(ctx, Put("w", "other", []byte("x"), Any()), Put("w", "k", []byte("x"), Any())); err != nil {
			t.Fatal(err)
		}
		if got := v(); got != want {
			t.Fatalf("after put %d: watch says %d", want, got)
		}
	}
	if _, err := st.Apply(ctx, Put("w", "k", []byte("x"), AtVersion(1))); err == nil || v() != 5 {
		t.Fatalf("a conflicting batch changed the watch: %v, %d", err, v())
	}
	if _, err := st.Apply(ctx, DeletePrefix("w", "k")); err != nil || v() != 0 {
		t.Fatalf("after delete prefix: %v, %d", err, v())
	}
	if _, err := st.Apply(ctx, Put("w", "k", []byte("x"), Absent())); err != nil || v() != 1 {
		t.Fatalf("re-created: %v, %d", err, v())
	}
	if _, err := st.Apply(ctx, Delete("w", "before", Any())); err != nil || before() != 0 {
		t.Fatalf("after delete: %v, %d", err, before())
	}
}
