package storetest

// Reads, writes, expectations, atomicity and validation.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/veilhq/veil/persistence"
)

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
