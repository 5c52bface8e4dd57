package storetest

// Key order and List.

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/veilhq/veil/persistence"
)

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
