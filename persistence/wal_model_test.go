package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/veilhq/veil/persistence"
)

// model is what a store must hold: table -> key -> record. Its apply is
// Store.Apply's contract written out plainly (store.go), the reference
// the write-ahead log tests hold the store to.
type model map[string]map[string]persistence.Record

func (m model) clone() model {
	c := model{}
	for t, keys := range m {
		c[t] = maps.Clone(keys)
	}
	return c
}

// apply runs ops as one batch: it answers each op's version, or the
// conflict of the first op whose expectation fails, and then changes
// nothing.
func (m model) apply(ops []persistence.Op) ([]uint64, *persistence.ConflictError) {
	next := m.clone()
	versions := make([]uint64, len(ops))
	for i, op := range ops {
		keys := next[op.Table]
		if keys == nil {
			keys = map[string]persistence.Record{}
			next[op.Table] = keys
		}
		if op.Kind == persistence.OpDeletePrefix {
			for k := range keys {
				if strings.HasPrefix(k, op.Key) {
					delete(keys, k)
				}
			}
			continue
		}
		cur := keys[op.Key].Version
		if !op.Expect.Holds(cur) {
			return nil, &persistence.ConflictError{Table: op.Table, Key: op.Key, Expected: op.Expect, Actual: cur}
		}
		switch op.Kind {
		case persistence.OpPut:
			versions[i] = cur + 1
			keys[op.Key] = persistence.Record{Key: op.Key, Value: slices.Clone(op.Value), Version: cur + 1}
		case persistence.OpDelete:
			delete(keys, op.Key)
		}
	}
	clear(m)
	maps.Copy(m, next)
	return versions, nil
}

// list is List's answer.
func (m model) list(table string, q persistence.Query) []persistence.Record {
	var out []persistence.Record
	for k, r := range m[table] {
		if !strings.HasPrefix(k, q.Prefix) {
			continue
		}
		if q.After != "" && (!q.Reverse && k <= q.After || q.Reverse && k >= q.After) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b persistence.Record) int {
		if q.Reverse {
			return strings.Compare(b.Key, a.Key)
		}
		return strings.Compare(a.Key, b.Key)
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// applyBoth applies ops to the store and the model and fails the test
// when their answers differ.
func applyBoth(t *testing.T, s persistence.Store, m model, ops ...persistence.Op) error {
	t.Helper()
	versions, err := s.Apply(context.Background(), ops...)
	wantVersions, conflict := m.apply(ops)
	if conflict != nil {
		var ce *persistence.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, persistence.ErrConflict) || *ce != *conflict || versions != nil {
			t.Fatalf("Apply(%s) = %v, %v; want the conflict %v", fmtOps(ops), versions, err, conflict)
		}
		return err
	}
	if err != nil || !slices.Equal(versions, wantVersions) {
		t.Fatalf("Apply(%s) = %v, %v; want versions %v", fmtOps(ops), versions, err, wantVersions)
	}
	return nil
}

func fmtOps(ops []persistence.Op) string {
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteString(", ")
		}
		switch op.Kind {
		case persistence.OpPut:
			fmt.Fprintf(&b, "put %s/%s=%q %s", op.Table, op.Key, op.Value, op.Expect)
		case persistence.OpDelete:
			fmt.Fprintf(&b, "delete %s/%s %s", op.Table, op.Key, op.Expect)
		case persistence.OpDeletePrefix:
			fmt.Fprintf(&b, "delete-prefix %s/%s", op.Table, op.Key)
		case persistence.OpCheck:
			fmt.Fprintf(&b, "check %s/%s %s", op.Table, op.Key, op.Expect)
		}
	}
	return b.String()
}

func sameRecord(a, b persistence.Record) bool {
	return a.Key == b.Key && a.Version == b.Version && string(a.Value) == string(b.Value)
}

// checkGets compares Get of every key of keys in every table of tables
// with the model: a key the model lacks must be ErrNotFound.
func checkGets(t *testing.T, s persistence.Store, m model, tables, keys []string) {
	t.Helper()
	for _, table := range tables {
		for _, k := range keys {
			got, err := s.Get(context.Background(), table, k)
			w, ok := m[table][k]
			if !ok {
				if !errors.Is(err, persistence.ErrNotFound) {
					t.Fatalf("Get %s/%s = %+v, %v; want ErrNotFound", table, k, got, err)
				}
				continue
			}
			if err != nil || !sameRecord(got, w) {
				t.Fatalf("Get %s/%s = %+v, %v; want %+v", table, k, got, err, w)
			}
		}
	}
}

// checkList compares List(table, q) with the model.
func checkList(t *testing.T, s persistence.Store, m model, table string, q persistence.Query) {
	t.Helper()
	got, err := s.List(context.Background(), table, q)
	if err != nil {
		t.Fatalf("List %s %+v: %v", table, q, err)
	}
	w := m.list(table, q)
	if !slices.EqualFunc(got, w, sameRecord) {
		t.Fatalf("List %s %+v = %v; want %v", table, q, recKeys(got), recKeys(w))
	}
}

func recKeys(rs []persistence.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s@%d=%q", r.Key, r.Version, r.Value))
	}
	return out
}

// checkAll compares every key of keys and each table's whole List.
func checkAll(t *testing.T, s persistence.Store, m model, tables, keys []string) {
	t.Helper()
	checkGets(t, s, m, tables, keys)
	for _, table := range tables {
		checkList(t, s, m, table, persistence.Query{})
		checkList(t, s, m, table, persistence.Query{Reverse: true})
	}
}
