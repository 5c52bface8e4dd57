// Package storetest is the conformance suite every persistence.Store must
// pass. Run it from the implementation's own test:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) persistence.Store { return openFresh(t) })
//	}
//
// open must return an empty store that belongs to t alone. The suite closes
// it when the subtest ends, possibly a second time after a test closed it
// itself: Close on a closed store must return nil or ErrClosed.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/veilhq/veil/persistence"
)

// Run runs every conformance test as a subtest of t.
func Run(t *testing.T, open func(t *testing.T) persistence.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s persistence.Store)
	}{
		{"GetMissing", testGetMissing},
		{"PutGetVersions", testPutGetVersions},
		{"Expectations", testExpectations},
		{"Atomicity", testAtomicity},
		{"FirstConflictNamed", testFirstConflictNamed},
		{"BatchSeesItsOwnOps", testBatchSeesItsOwnOps},
		{"ResultVersions", testResultVersions},
		{"DeleteRecreateResetsVersion", testDeleteRecreate},
		{"DeletePrefix", testDeletePrefix},
		{"TablesAreSeparate", testTablesSeparate},
		{"KeyOrderIsBytewise", testKeyOrder},
		{"List", testList},
		{"ListAgainstModel", testListModel},
		{"Invalid", testInvalid},
		{"Limits", testLimits},
		{"ValuesAreCopied", testValuesCopied},
		{"EmptyAndLargeValues", testValueSizes},
		{"ConcurrentCreateOneWins", testConcurrentCreate},
		{"ConcurrentCASNoLostUpdate", testConcurrentCAS},
		{"ConcurrentMixedBatchesIndependent", testConcurrentMixed},
		{"ContextCancelled", testContextCancelled},
		{"Closed", testClosed},
		{"CloseWaitsForApply", testCloseWaits},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil && !errors.Is(err, persistence.ErrClosed) {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// helpers

func apply(t *testing.T, s persistence.Store, ops ...persistence.Op) []uint64 {
	t.Helper()
	vs, err := s.Apply(context.Background(), ops...)
	if err != nil {
		t.Fatalf("Apply(%s): %v", describe(ops), err)
	}
	if len(vs) != len(ops) {
		t.Fatalf("Apply(%s) returned %d versions, want %d", describe(ops), len(vs), len(ops))
	}
	return vs
}

func put(t *testing.T, s persistence.Store, table, key, value string) uint64 {
	t.Helper()
	return apply(t, s, persistence.Put(table, key, []byte(value), persistence.Any()))[0]
}

func describe(ops []persistence.Op) string {
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("kind%d %s/%q %s", op.Kind, op.Table, op.Key, op.Expect)
	}
	return strings.Join(parts, ", ")
}

// wantRecord fails unless table/key holds value at version.
func wantRecord(t *testing.T, s persistence.Store, table, key, value string, version uint64) {
	t.Helper()
	rec, err := s.Get(context.Background(), table, key)
	if err != nil {
		t.Fatalf("Get(%s/%q): %v", table, key, err)
	}
	if rec.Key != key || string(rec.Value) != value || rec.Version != version {
		t.Fatalf("Get(%s/%q) = {%q, %q, v%d}, want {%q, %q, v%d}", table, key, rec.Key, rec.Value, rec.Version, key, value, version)
	}
}

func wantAbsent(t *testing.T, s persistence.Store, table, key string) {
	t.Helper()
	rec, err := s.Get(context.Background(), table, key)
	if !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("Get(%s/%q) = %+v, %v; want ErrNotFound", table, key, rec, err)
	}
}

func wantConflict(t *testing.T, err error, table, key string, expected persistence.Expect, actual uint64) {
	t.Helper()
	if !errors.Is(err, persistence.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	var ce *persistence.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v (%T), want a *ConflictError", err, err)
	}
	want := persistence.ConflictError{Table: table, Key: key, Expected: expected, Actual: actual}
	if *ce != want {
		t.Fatalf("conflict = %+v, want %+v", *ce, want)
	}
}

func keysOf(recs []persistence.Record) []string {
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.Key
	}
	return keys
}

// tests

func testGetMissing(t *testing.T, s persistence.Store) {
	wantAbsent(t, s, "never_written", "k")
	put(t, s, "t", "k", "v")
	wantAbsent(t, s, "t", "other")
	wantAbsent(t, s, "t", "k\x00")
}

func testPutGetVersions(t *testing.T, s persistence.Store) {
	for want := uint64(1); want <= 3; want++ {
		value := fmt.Sprintf("value %d", want)
		if got := put(t, s, "t", "k", value); got != want {
			t.Fatalf("put #%d returned version %d", want, got)
		}
		wantRecord(t, s, "t", "k", value, want)
	}
}

func testExpectations(t *testing.T, s persistence.Store) {
	type state int
	const (
		absent state = iota
		atV2
	)
	P := persistence.Put
	D := persistence.Delete
	C := persistence.Check
	val := []byte("new")
	tests := []struct {
		name     string
		start    state
		op       func(key string) persistence.Op
		conflict bool
		actual   uint64 // for a conflict
		version  uint64 // returned on success
		after    uint64 // version stored after (0 = absent)
	}{
		{"put absent on absent", absent, func(k string) persistence.Op { return P("t", k, val, persistence.Absent()) }, false, 0, 1, 1},
		{"put absent on existing", atV2, func(k string) persistence.Op { return P("t", k, val, persistence.Absent()) }, true, 2, 0, 2},
		{"put at current version", atV2, func(k string) persistence.Op { return P("t", k, val, persistence.AtVersion(2)) }, false, 0, 3, 3},
		{"put at stale version", atV2, func(k string) persistence.Op { return P("t", k, val, persistence.AtVersion(1)) }, true, 2, 0, 2},
		{"put at future version", atV2, func(k string) persistence.Op { return P("t", k, val, persistence.AtVersion(3)) }, true, 2, 0, 2},
		{"put at version on absent", absent, func(k string) persistence.Op { return P("t", k, val, persistence.AtVersion(1)) }, true, 0, 0, 0},
		{"put any on absent", absent, func(k string) persistence.Op { return P("t", k, val, persistence.Any()) }, false, 0, 1, 1},
		{"put any on existing", atV2, func(k string) persistence.Op { return P("t", k, val, persistence.Any()) }, false, 0, 3, 3},
		{"delete any on absent", absent, func(k string) persistence.Op { return D("t", k, persistence.Any()) }, false, 0, 0, 0},
		{"delete any on existing", atV2, func(k string) persistence.Op { return D("t", k, persistence.Any()) }, false, 0, 0, 0},
		{"delete at current version", atV2, func(k string) persistence.Op { return D("t", k, persistence.AtVersion(2)) }, false, 0, 0, 0},
		{"delete at stale version", atV2, func(k string) persistence.Op { return D("t", k, persistence.AtVersion(1)) }, true, 2, 0, 2},
		{"delete at version on absent", absent, func(k string) persistence.Op { return D("t", k, persistence.AtVersion(1)) }, true, 0, 0, 0},
		{"delete absent on absent", absent, func(k string) persistence.Op { return D("t", k, persistence.Absent()) }, false, 0, 0, 0},
		{"delete absent on existing", atV2, func(k string) persistence.Op { return D("t", k, persistence.Absent()) }, true, 2, 0, 2},
		{"check absent on absent", absent, func(k string) persistence.Op { return C("t", k, persistence.Absent()) }, false, 0, 0, 0},
		{"check absent on existing", atV2, func(k string) persistence.Op { return C("t", k, persistence.Absent()) }, true, 2, 0, 2},
		{"check at current version", atV2, func(k string) persistence.Op { return C("t", k, persistence.AtVersion(2)) }, false, 0, 0, 2},
		{"check at stale version", atV2, func(k string) persistence.Op { return C("t", k, persistence.AtVersion(1)) }, true, 2, 0, 2},
		{"check at version on absent", absent, func(k string) persistence.Op { return C("t", k, persistence.AtVersion(1)) }, true, 0, 0, 0},
		{"check any on absent", absent, func(k string) persistence.Op { return C("t", k, persistence.Any()) }, false, 0, 0, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("k%02d", i)
			if tc.start == atV2 {
				put(t, s, "t", key, "v1")
				put(t, s, "t", key, "old")
			}
			op := tc.op(key)
			vs, err := s.Apply(context.Background(), op)
			if tc.conflict {
				wantConflict(t, err, "t", key, op.Expect, tc.actual)
				if vs != nil {
					t.Errorf("versions on conflict = %v, want nil", vs)
				}
			} else {
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if len(vs) != 1 || vs[0] != tc.version {
					t.Fatalf("versions = %v, want [%d]", vs, tc.version)
				}
			}
			switch {
			case tc.after == 0:
				wantAbsent(t, s, "t", key)
			case op.Kind == persistence.OpPut && !tc.conflict:
				wantRecord(t, s, "t", key, "new", tc.after)
			default:
				wantRecord(t, s, "t", key, "old", tc.after)
			}
		})
	}
}

func testAtomicity(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	put(t, s, "t", "x/1", "one")
	put(t, s, "t", "x/2", "two")
	put(t, s, "t", "guard", "g") // version 1
	tests := []struct {
		name string
		ops  []persistence.Op
	}{
		{"last op fails", []persistence.Op{
			persistence.Put("t", "a", []byte("a"), persistence.Absent()),
			persistence.Put("u", "b", []byte("b"), persistence.Any()),
			persistence.Put("t", "c", []byte("c"), persistence.AtVersion(5)),
		}},
		{"check guards writes", []persistence.Op{
			persistence.Put("t", "a", []byte("a"), persistence.Any()),
			persistence.Delete("t", "x/1", persistence.Any()),
			persistence.Check("t", "guard", persistence.AtVersion(2)),
		}},
		{"delete prefix then failure", []persistence.Op{
			persistence.DeletePrefix("t", "x/"),
			persistence.Put("t", "x/1", []byte("changed"), persistence.Any()),
			persistence.Check("t", "guard", persistence.Absent()),
		}},
		{"first op fails", []persistence.Op{
			persistence.Check("t", "missing", persistence.AtVersion(1)),
			persistence.Put("t", "a", []byte("a"), persistence.Any()),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Apply(ctx, tc.ops...); !errors.Is(err, persistence.ErrConflict) {
				t.Fatalf("Apply = %v, want ErrConflict", err)
			}
			wantAbsent(t, s, "t", "a")
			wantAbsent(t, s, "u", "b")
			wantAbsent(t, s, "t", "c")
			wantRecord(t, s, "t", "x/1", "one", 1)
			wantRecord(t, s, "t", "x/2", "two", 1)
			wantRecord(t, s, "t", "guard", "g", 1)
		})
	}
}

func testFirstConflictNamed(t *testing.T, s persistence.Store) {
	put(t, s, "t", "b", "v")
	_, err := s.Apply(context.Background(),
		persistence.Check("t", "a", persistence.Absent()),
		persistence.Check("t", "b", persistence.AtVersion(7)),
		persistence.Check("t", "c", persistence.AtVersion(1)),
	)
	wantConflict(t, err, "t", "b", persistence.AtVersion(7), 1)
}

func testBatchSeesItsOwnOps(t *testing.T, s persistence.Store) {
	P := persistence.Put
	tests := []struct {
		name     string
		ops      func(k string) []persistence.Op
		versions []uint64
		final    string // value of the key after; "" = absent
		version  uint64
	}{
		{"create then update", func(k string) []persistence.Op {
			return []persistence.Op{
				P("t", k, []byte("1"), persistence.Absent()),
				P("t", k, []byte("2"), persistence.AtVersion(1)),
			}
		}, []uint64{1, 2}, "2", 2},
		{"create then check", func(k string) []persistence.Op {
			return []persistence.Op{
				P("t", k, []byte("1"), persistence.Absent()),
				persistence.Check("t", k, persistence.AtVersion(1)),
			}
		}, []uint64{1, 0}, "1", 1},
		{"create then delete", func(k string) []persistence.Op {
			return []persistence.Op{
				P("t", k, []byte("1"), persistence.Absent()),
				persistence.Delete("t", k, persistence.AtVersion(1)),
				persistence.Check("t", k, persistence.Absent()),
			}
		}, []uint64{1, 0, 0}, "", 0},
		{"create, delete prefix, create", func(k string) []persistence.Op {
			return []persistence.Op{
				P("t", k, []byte("1"), persistence.Absent()),
				persistence.DeletePrefix("t", k),
				persistence.Check("t", k, persistence.Absent()),
				P("t", k, []byte("2"), persistence.Absent()),
				P("t", k, []byte("3"), persistence.AtVersion(1)),
			}
		}, []uint64{1, 0, 0, 1, 2}, "3", 2},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("k%d", i)
			vs := apply(t, s, tc.ops(key)...)
			if !slices.Equal(vs, tc.versions) {
				t.Fatalf("versions = %v, want %v", vs, tc.versions)
			}
			if tc.final == "" {
				wantAbsent(t, s, "t", key)
			} else {
				wantRecord(t, s, "t", key, tc.final, tc.version)
			}
		})
	}
	// A delete-prefix hides keys written earlier in the same batch, in the
	// store and in the batch alike.
	put(t, s, "t", "p/old", "x")
	_, err := s.Apply(context.Background(),
		persistence.Put("t", "p/new", []byte("y"), persistence.Absent()),
		persistence.DeletePrefix("t", "p/"),
		persistence.Check("t", "p/new", persistence.AtVersion(1)),
	)
	wantConflict(t, err, "t", "p/new", persistence.AtVersion(1), 0)
	_, err = s.Apply(context.Background(),
		persistence.DeletePrefix("t", "p/"),
		persistence.Check("t", "p/old", persistence.AtVersion(1)),
	)
	wantConflict(t, err, "t", "p/old", persistence.AtVersion(1), 0)
	wantRecord(t, s, "t", "p/old", "x", 1)
}

func testResultVersions(t *testing.T, s persistence.Store) {
	put(t, s, "t", "a", "1")
	put(t, s, "t", "a", "2")
	put(t, s, "t", "d", "1")
	vs := apply(t, s,
		persistence.Put("t", "a", []byte("3"), persistence.AtVersion(2)),
		persistence.Put("t", "b", []byte("1"), persistence.Absent()),
		persistence.Check("t", "a", persistence.AtVersion(3)),
		persistence.Delete("t", "d", persistence.Any()),
		persistence.DeletePrefix("t", "zz"),
		persistence.Put("u", "a", nil, persistence.Any()),
	)
	if want := []uint64{3, 1, 0, 0, 0, 1}; !slices.Equal(vs, want) {
		t.Fatalf("versions = %v, want %v", vs, want)
	}
}

func testDeleteRecreate(t *testing.T, s persistence.Store) {
	put(t, s, "t", "k", "a")
	put(t, s, "t", "k", "b")
	put(t, s, "t", "k", "c")
	apply(t, s, persistence.Delete("t", "k", persistence.AtVersion(3)))
	wantAbsent(t, s, "t", "k")
	if v := apply(t, s, persistence.Put("t", "k", []byte("d"), persistence.Absent()))[0]; v != 1 {
		t.Fatalf("re-created version = %d, want 1", v)
	}
	wantRecord(t, s, "t", "k", "d", 1)
	// The same through a prefix delete.
	apply(t, s, persistence.DeletePrefix("t", "k"))
	if v := put(t, s, "t", "k", "e"); v != 1 {
		t.Fatalf("re-created after prefix delete: version %d, want 1", v)
	}
}

func testDeletePrefix(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	keys := []string{"a", "a/", "a/1", "a/2", "a/2/x", "a0", "ab", "b", "a\xff", "a\xff\xff", "a\xff\x00", "\xff", "\xff\xff"}
	tests := []struct {
		prefix string
		left   []string
	}{
		{"a/", []string{"\xff", "\xff\xff", "a", "a0", "a\xff", "a\xff\x00", "a\xff\xff", "ab", "b"}},
		{"a", []string{"\xff", "\xff\xff", "b"}},
		{"a\xff", []string{"\xff", "\xff\xff", "a", "a/", "a/1", "a/2", "a/2/x", "a0", "ab", "b"}},
		{"\xff", []string{"a", "a/", "a/1", "a/2", "a/2/x", "a0", "a\xff", "a\xff\x00", "a\xff\xff", "ab", "b"}},
		{"a/2/x", []string{"\xff", "\xff\xff", "a", "a/", "a/1", "a/2", "a0", "a\xff", "a\xff\x00", "a\xff\xff", "ab", "b"}},
		{"c", []string{"\xff", "\xff\xff", "a", "a/", "a/1", "a/2", "a/2/x", "a0", "a\xff", "a\xff\x00", "a\xff\xff", "ab", "b"}},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.prefix), func(t *testing.T) {
			table := fmt.Sprintf("dp%d", i)
			other := fmt.Sprintf("keep%d", i)
			for _, k := range keys {
				put(t, s, table, k, k)
				put(t, s, other, k, k)
			}
			if vs := apply(t, s, persistence.DeletePrefix(table, tc.prefix)); vs[0] != 0 {
				t.Fatalf("version = %d, want 0", vs[0])
			}
			recs, err := s.List(ctx, table, persistence.Query{})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tc.left)
			sort.Strings(want)
			if got := keysOf(recs); !slices.Equal(got, want) {
				t.Fatalf("left %q, want %q", got, want)
			}
			recs, err = s.List(ctx, other, persistence.Query{})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != len(keys) {
				t.Fatalf("other table lost records: %d left of %d", len(recs), len(keys))
			}
		})
	}
	t.Run("missing table", func(t *testing.T) {
		apply(t, s, persistence.DeletePrefix("never_written", "x"))
		recs, err := s.List(ctx, "never_written", persistence.Query{})
		if err != nil || len(recs) != 0 {
			t.Fatalf("List = %v, %v; want empty", recs, err)
		}
	})
}

func testTablesSeparate(t *testing.T, s persistence.Store) {
	put(t, s, "one", "k", "1")
	put(t, s, "two", "k", "2")
	put(t, s, "two", "k", "2b")
	wantRecord(t, s, "one", "k", "1", 1)
	wantRecord(t, s, "two", "k", "2b", 2)
	apply(t, s, persistence.Delete("one", "k", persistence.Any()))
	wantAbsent(t, s, "one", "k")
	wantRecord(t, s, "two", "k", "2b", 2)
	// A table whose name is a prefix of another's is a different table.
	put(t, s, "tw", "k", "x")
	recs, err := s.List(context.Background(), "tw", persistence.Query{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("List(tw) = %v, %v; want one record", recs, err)
	}
}

func testKeyOrder(t *testing.T, s persistence.Store) {
	// Byte order, not collation order: upper case before lower case, NUL
	// after the shorter key, bytes >= 0x80 (invalid UTF-8 included) last.
	want := []string{"A", "B", "Z", "a", "a\x00", "a\x01", "aa", "b", "\x7f", "\x80", "\xc3\xa9", "\xff", "\xff\x00"}
	shuffled := slices.Clone(want)
	for i := range shuffled {
		j := (i*7 + 3) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	for _, k := range shuffled {
		put(t, s, "t", k, k)
	}
	recs, err := s.List(context.Background(), "t", persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(recs); !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
	for _, k := range want {
		wantRecord(t, s, "t", k, k, 1)
	}
}

// listKeys is the fixture of the List tests.
var listKeys = []string{
	"a", "a/", "a/1", "a/2", "a/3", "a/30", "ab", "b", "b/1",
	"c\xff", "c\xff\x00", "c\xff\xff", "c\xff\xffz", "d", "\xff", "\xff\xff", "\xff\xff\x01",
}

func fillList(t *testing.T, s persistence.Store, table string) {
	t.Helper()
	// Several records per batch, and one key written twice so versions
	// differ between records.
	var ops []persistence.Op
	for _, k := range listKeys {
		ops = append(ops, persistence.Put(table, k, []byte("v:"+k), persistence.Absent()))
	}
	apply(t, s, ops...)
	apply(t, s, persistence.Put(table, "a/2", []byte("v:a/2"), persistence.AtVersion(1)))
}

func testList(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	fillList(t, s, "t")
	tests := []struct {
		name string
		q    persistence.Query
		want []string
	}{
		{"all", persistence.Query{}, listKeys},
		{"prefix", persistence.Query{Prefix: "a/"}, []string{"a/", "a/1", "a/2", "a/3", "a/30"}},
		{"prefix is a key", persistence.Query{Prefix: "a/3"}, []string{"a/3", "a/30"}},
		{"prefix no match", persistence.Query{Prefix: "zz"}, nil},
		{"prefix reverse", persistence.Query{Prefix: "a/", Reverse: true}, []string{"a/30", "a/3", "a/2", "a/1", "a/"}},
		{"prefix limit", persistence.Query{Prefix: "a/", Limit: 2}, []string{"a/", "a/1"}},
		{"prefix reverse limit", persistence.Query{Prefix: "a/", Limit: 2, Reverse: true}, []string{"a/30", "a/3"}},
		{"after", persistence.Query{Prefix: "a/", After: "a/1"}, []string{"a/2", "a/3", "a/30"}},
		{"after absent key", persistence.Query{Prefix: "a/", After: "a/25"}, []string{"a/3", "a/30"}},
		{"after reverse", persistence.Query{Prefix: "a/", After: "a/3", Reverse: true}, []string{"a/2", "a/1", "a/"}},
		{"after absent key reverse", persistence.Query{Prefix: "a/", After: "a/25", Reverse: true}, []string{"a/2", "a/1", "a/"}},
		{"after below prefix", persistence.Query{Prefix: "a/", After: "a"}, []string{"a/", "a/1", "a/2", "a/3", "a/30"}},
		{"after above prefix", persistence.Query{Prefix: "a/", After: "b"}, nil},
		{"after above prefix reverse", persistence.Query{Prefix: "a/", After: "b", Reverse: true}, []string{"a/30", "a/3", "a/2", "a/1", "a/"}},
		{"after below prefix reverse", persistence.Query{Prefix: "a/", After: "a", Reverse: true}, nil},
		{"after last", persistence.Query{After: "\xff\xff\x01"}, nil},
		{"after first reverse", persistence.Query{After: "a", Reverse: true}, nil},
		{"after limit", persistence.Query{After: "a/2", Limit: 3}, []string{"a/3", "a/30", "ab"}},
		{"after reverse limit", persistence.Query{After: "b", Limit: 2, Reverse: true}, []string{"ab", "a/30"}},
		{"reverse all", persistence.Query{Reverse: true}, reversed(listKeys)},
		{"limit over count", persistence.Query{Limit: 100}, listKeys},
		{"prefix 0xff", persistence.Query{Prefix: "c\xff"}, []string{"c\xff", "c\xff\x00", "c\xff\xff", "c\xff\xffz"}},
		{"prefix 0xff reverse", persistence.Query{Prefix: "c\xff", Reverse: true}, []string{"c\xff\xffz", "c\xff\xff", "c\xff\x00", "c\xff"}},
		{"prefix 0xff 0xff reverse", persistence.Query{Prefix: "c\xff\xff", Reverse: true}, []string{"c\xff\xffz", "c\xff\xff"}},
		{"prefix all 0xff", persistence.Query{Prefix: "\xff"}, []string{"\xff", "\xff\xff", "\xff\xff\x01"}},
		{"prefix all 0xff reverse", persistence.Query{Prefix: "\xff", Reverse: true}, []string{"\xff\xff\x01", "\xff\xff", "\xff"}},
		{"prefix all 0xff reverse after", persistence.Query{Prefix: "\xff", After: "\xff\xff\x01", Reverse: true}, []string{"\xff\xff", "\xff"}},
		{"prefix 0xff 0xff after", persistence.Query{Prefix: "\xff\xff", After: "\xff\xff"}, []string{"\xff\xff\x01"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := s.List(ctx, "t", tc.q)
			if err != nil {
				t.Fatalf("List(%+v): %v", tc.q, err)
			}
			if got := keysOf(recs); !slices.Equal(got, tc.want) {
				t.Fatalf("List(%+v) = %q, want %q", tc.q, got, tc.want)
			}
			for _, r := range recs {
				wantV := uint64(1)
				if r.Key == "a/2" {
					wantV = 2
				}
				if string(r.Value) != "v:"+r.Key || r.Version != wantV {
					t.Fatalf("record %q = {%q, v%d}, want {%q, v%d}", r.Key, r.Value, r.Version, "v:"+r.Key, wantV)
				}
			}
		})
	}
	t.Run("empty table", func(t *testing.T) {
		for _, q := range []persistence.Query{{}, {Reverse: true}, {Prefix: "a", After: "b", Limit: 1}} {
			recs, err := s.List(ctx, "never_written", q)
			if err != nil || len(recs) != 0 {
				t.Fatalf("List(%+v) = %v, %v; want empty", q, recs, err)
			}
		}
	})
	t.Run("emptied table", func(t *testing.T) {
		put(t, s, "gone", "k", "v")
		apply(t, s, persistence.Delete("gone", "k", persistence.Any()))
		recs, err := s.List(ctx, "gone", persistence.Query{Reverse: true})
		if err != nil || len(recs) != 0 {
			t.Fatalf("List = %v, %v; want empty", recs, err)
		}
	})
	t.Run("paging", func(t *testing.T) {
		for _, reverse := range []bool{false, true} {
			var got []string
			q := persistence.Query{Limit: 4, Reverse: reverse}
			for pages := 0; ; pages++ {
				if pages > len(listKeys) {
					t.Fatal("paging does not end")
				}
				recs, err := s.List(ctx, "t", q)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) == 0 {
					break
				}
				got = append(got, keysOf(recs)...)
				q.After = recs[len(recs)-1].Key
			}
			want := listKeys
			if reverse {
				want = reversed(listKeys)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("reverse=%v: pages gave %q, want %q", reverse, got, want)
			}
		}
	})
}

// testListModel compares List with a brute-force model over every
// combination of a set of prefixes, cursors, limits and directions.
func testListModel(t *testing.T, s persistence.Store) {
	fillList(t, s, "t")
	sorted := slices.Clone(listKeys)
	sort.Strings(sorted)
	if !slices.Equal(sorted, listKeys) {
		t.Fatalf("fixture listKeys is not sorted: %q", listKeys)
	}
	probes := []string{"", "a", "a/", "a/3", "a/4", "b", "c", "c\xff", "c\xff\xff", "c\xff\xff\xff", "d", "e", "\xff", "\xff\xff", "\xff\xff\xff"}
	for _, prefix := range probes {
		for _, after := range probes {
			for _, limit := range []int{0, 1, 3} {
				for _, reverse := range []bool{false, true} {
					q := persistence.Query{Prefix: prefix, After: after, Limit: limit, Reverse: reverse}
					want := modelList(listKeys, q)
					recs, err := s.List(context.Background(), "t", q)
					if err != nil {
						t.Fatalf("List(%+v): %v", q, err)
					}
					if got := keysOf(recs); !slices.Equal(got, want) {
						t.Fatalf("List(%+v) = %q, want %q", q, got, want)
					}
				}
			}
		}
	}
}

func modelList(sortedKeys []string, q persistence.Query) []string {
	keys := sortedKeys
	if q.Reverse {
		keys = reversed(keys)
	}
	var out []string
	for _, k := range keys {
		if !strings.HasPrefix(k, q.Prefix) {
			continue
		}
		if q.After != "" && (!q.Reverse && k <= q.After || q.Reverse && k >= q.After) {
			continue
		}
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
		out = append(out, k)
	}
	return out
}

func reversed(s []string) []string {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

func testInvalid(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	v := []byte("v")
	batches := []struct {
		name string
		ops  []persistence.Op
	}{
		{"empty batch", nil},
		{"put empty table", []persistence.Op{persistence.Put("", "k", v, persistence.Any())}},
		{"put empty key", []persistence.Op{persistence.Put("t", "", v, persistence.Any())}},
		{"delete empty key", []persistence.Op{persistence.Delete("t", "", persistence.Any())}},
		{"check empty key", []persistence.Op{persistence.Check("t", "", persistence.Absent())}},
		{"delete prefix empty prefix", []persistence.Op{persistence.DeletePrefix("t", "")}},
		{"delete prefix empty table", []persistence.Op{persistence.DeletePrefix("", "a")}},
		{"delete prefix with expectation", []persistence.Op{{Kind: persistence.OpDeletePrefix, Table: "t", Key: "a", Expect: persistence.Absent()}}},
		{"version 0", []persistence.Op{persistence.Put("t", "k", v, persistence.AtVersion(0))}},
		{"unknown op kind", []persistence.Op{{Kind: 0, Table: "t", Key: "k"}}},
		{"unknown op kind 99", []persistence.Op{{Kind: 99, Table: "t", Key: "k"}}},
		{"unknown expectation", []persistence.Op{persistence.Put("t", "k", v, persistence.Expect{Kind: 9})}},
		{"invalid op after valid ones", []persistence.Op{
			persistence.Put("t", "k", v, persistence.Any()),
			persistence.Put("t", "", v, persistence.Any()),
		}},
	}
	for _, tc := range batches {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Apply(ctx, tc.ops...); !errors.Is(err, persistence.ErrInvalid) {
				t.Fatalf("Apply = %v, want ErrInvalid", err)
			}
		})
	}
	wantAbsent(t, s, "t", "k")
	if _, err := s.Get(ctx, "", "k"); !errors.Is(err, persistence.ErrInvalid) {
		t.Errorf("Get with empty table = %v, want ErrInvalid", err)
	}
	if _, err := s.Get(ctx, "t", ""); !errors.Is(err, persistence.ErrInvalid) {
		t.Errorf("Get with empty key = %v, want ErrInvalid", err)
	}
	if _, err := s.List(ctx, "", persistence.Query{}); !errors.Is(err, persistence.ErrInvalid) {
		t.Errorf("List with empty table = %v, want ErrInvalid", err)
	}
	if _, err := s.List(ctx, "t", persistence.Query{Limit: -1}); !errors.Is(err, persistence.ErrInvalid) {
		t.Errorf("List with negative limit = %v, want ErrInvalid", err)
	}
}

func testLimits(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	table := strings.Repeat("t", persistence.MaxTableLen)
	key := strings.Repeat("k", persistence.MaxKeyLen)
	value := bytes.Repeat([]byte{0xab}, persistence.MaxValueLen)
	apply(t, s, persistence.Put(table, key, value, persistence.Absent()))
	rec, err := s.Get(ctx, table, key)
	if err != nil || !bytes.Equal(rec.Value, value) {
		t.Fatalf("Get at the limits: %d bytes, %v", len(rec.Value), err)
	}
	over := []struct {
		name string
		op   persistence.Op
	}{
		{"table", persistence.Put(table+"t", "k", nil, persistence.Any())},
		{"key", persistence.Put("t", key+"k", nil, persistence.Any())},
		{"value", persistence.Put("t", "k", append(value, 0), persistence.Any())},
		{"prefix", persistence.DeletePrefix("t", key+"k")},
	}
	for _, tc := range over {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Apply(ctx, tc.op); !errors.Is(err, persistence.ErrInvalid) {
				t.Fatalf("Apply over the %s limit = %v, want ErrInvalid", tc.name, err)
			}
		})
	}
	if _, err := s.Get(ctx, "t", key+"k"); !errors.Is(err, persistence.ErrInvalid) {
		t.Errorf("Get over the key limit = %v, want ErrInvalid", err)
	}
	wantAbsent(t, s, "t", "k")
}

func testValuesCopied(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	in := []byte("original")
	apply(t, s, persistence.Put("t", "k", in, persistence.Any()))
	copy(in, "XXXXXXXX")
	wantRecord(t, s, "t", "k", "original", 1)

	rec, err := s.Get(ctx, "t", "k")
	if err != nil {
		t.Fatal(err)
	}
	copy(rec.Value, "YYYYYYYY")
	wantRecord(t, s, "t", "k", "original", 1)

	recs, err := s.List(ctx, "t", persistence.Query{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("List = %v, %v", recs, err)
	}
	copy(recs[0].Value, "ZZZZZZZZ")
	wantRecord(t, s, "t", "k", "original", 1)

	// Two Gets never share a buffer either.
	a, _ := s.Get(ctx, "t", "k")
	b, _ := s.Get(ctx, "t", "k")
	a.Value[0] = '!'
	if b.Value[0] != 'o' {
		t.Fatal("two Gets returned the same buffer")
	}
}

func testValueSizes(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	apply(t, s, persistence.Put("t", "nil", nil, persistence.Any()))
	apply(t, s, persistence.Put("t", "empty", []byte{}, persistence.Any()))
	for _, k := range []string{"nil", "empty"} {
		rec, err := s.Get(ctx, "t", k)
		if err != nil || len(rec.Value) != 0 || rec.Version != 1 {
			t.Fatalf("Get(%s) = %+v, %v; want an empty value at version 1", k, rec, err)
		}
	}
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i*31 + i>>8)
	}
	apply(t, s, persistence.Put("t", "big", big, persistence.Any()))
	rec, err := s.Get(ctx, "t", "big")
	if err != nil || !bytes.Equal(rec.Value, big) {
		t.Fatalf("big value did not round-trip (%d bytes, %v)", len(rec.Value), err)
	}
	bin := []byte{0, 1, 0xff, 0, 0x80}
	apply(t, s, persistence.Put("t", "bin\x00key", bin, persistence.Any()))
	wantRecord(t, s, "t", "bin\x00key", string(bin), 1)
}

func testConcurrentCreate(t *testing.T, s persistence.Store) {
	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = s.Apply(context.Background(),
				persistence.Put("t", "contested", []byte(fmt.Sprint(i)), persistence.Absent()),
				persistence.Put("t", fmt.Sprintf("side/%02d", i), []byte("x"), persistence.Absent()),
			)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both created the key", winner, i)
			}
			winner = i
		default:
			wantConflict(t, err, "t", "contested", persistence.Absent(), 1)
		}
	}
	if winner < 0 {
		t.Fatal("no writer created the key")
	}
	wantRecord(t, s, "t", "contested", fmt.Sprint(winner), 1)
	// Losers' batches left nothing behind.
	recs, err := s.List(context.Background(), "t", persistence.Query{Prefix: "side/"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{fmt.Sprintf("side/%02d", winner)}; !slices.Equal(keysOf(recs), want) {
		t.Fatalf("side records %q, want %q", keysOf(recs), want)
	}
}

func testConcurrentCAS(t *testing.T, s persistence.Store) {
	const workers, perWorker = 8, 25
	ctx := context.Background()
	put(t, s, "t", "counter", "0")
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for done := 0; done < perWorker; {
				rec, err := s.Get(ctx, "t", "counter")
				if err != nil {
					errc <- err
					return
				}
				n, err := strconv.Atoi(string(rec.Value))
				if err != nil {
					errc <- fmt.Errorf("counter holds %q: %w", rec.Value, err)
					return
				}
				_, err = s.Apply(ctx, persistence.Put("t", "counter", []byte(fmt.Sprint(n+1)), persistence.AtVersion(rec.Version)))
				switch {
				case err == nil:
					done++
				case errors.Is(err, persistence.ErrConflict):
					// Lost the race: read again.
				default:
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	wantRecord(t, s, "t", "counter", fmt.Sprint(workers*perWorker), workers*perWorker+1)
}

// testConcurrentMixed runs failing and succeeding batches at the same time:
// an implementation that shares commits must not let one batch's conflict
// spill into another's.
func testConcurrentMixed(t *testing.T, s persistence.Store) {
	const n = 40
	ctx := context.Background()
	put(t, s, "t", "guard", "g")
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			expect := persistence.AtVersion(1)
			if i%2 == 1 {
				expect = persistence.AtVersion(99)
			}
			_, errs[i] = s.Apply(ctx,
				persistence.Put("t", fmt.Sprintf("w/%02d", i), []byte("x"), persistence.Absent()),
				persistence.Check("t", "guard", expect),
			)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		key := fmt.Sprintf("w/%02d", i)
		if i%2 == 1 {
			wantConflict(t, err, "t", "guard", persistence.AtVersion(99), 1)
			wantAbsent(t, s, "t", key)
		} else {
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
			wantRecord(t, s, "t", key, "x", 1)
		}
	}
}

func testContextCancelled(t *testing.T, s persistence.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Apply(ctx, persistence.Put("t", "k", []byte("v"), persistence.Any())); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a cancelled context = %v, want context.Canceled", err)
	}
	wantAbsent(t, s, "t", "k")
	if _, err := s.Get(ctx, "t", "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, "t", persistence.Query{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v, want context.Canceled", err)
	}
}

func testClosed(t *testing.T, s persistence.Store) {
	ctx := context.Background()
	put(t, s, "t", "k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(ctx, "t", "k"); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
	if _, err := s.List(ctx, "t", persistence.Query{}); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Apply(ctx, persistence.Put("t", "k", nil, persistence.Any())); !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("Apply after Close = %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil && !errors.Is(err, persistence.ErrClosed) {
		t.Errorf("second Close = %v, want nil or ErrClosed", err)
	}
}

// testCloseWaits closes the store while writers run: every Apply must either
// succeed or report ErrClosed, never fail some other way or hang.
func testCloseWaits(t *testing.T, s persistence.Store) {
	const n = 32
	var wg sync.WaitGroup
	errs := make([]error, n)
	started := make(chan struct{}, n)
	for i := range n {
		wg.Go(func() {
			started <- struct{}{}
			_, errs[i] = s.Apply(context.Background(), persistence.Put("t", fmt.Sprint(i), []byte("v"), persistence.Any()))
		})
	}
	for range n / 2 {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil && !errors.Is(err, persistence.ErrClosed) {
			t.Errorf("writer %d: %v", i, err)
		}
	}
}
