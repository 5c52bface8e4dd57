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
	"context"
	"errors"
	"fmt"
	"strings"
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
		{"FenceRefusesAStaleOwnersBatch", testFence},
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
