// Package persistence is the only way Veil reaches the disk. A Store is an
// ordered, versioned key-value store organised in tables; every write is an
// atomic batch of operations whose expectations are checked before anything is
// applied, and Apply returns only once the batch is durable.
//
// The bbolt implementation (the embedded default) lives in this package; the
// PostgreSQL one (cluster mode) lives in persistence/postgres. Both must pass
// the conformance suite in persistence/storetest.
package persistence

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/persistence/internal/gate"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrNotFound reports that no record exists at the key.
	ErrNotFound = errors.New("persistence: not found")
	// ErrConflict reports that an operation's expectation did not hold
	// (a stale version, a key that already exists, a key that is missing).
	// The concrete error is a *ConflictError.
	ErrConflict = errors.New("persistence: conflict")
	// ErrClosed reports a call on a store that has been closed. It is the
	// error of the gate both stores admit calls through.
	ErrClosed = gate.ErrClosed
	// ErrInvalid reports a malformed request (empty table, empty key, ...).
	ErrInvalid = errors.New("persistence: invalid operation")
)

// ConflictError says which expectation failed. It matches ErrConflict.
type ConflictError struct {
	Table    string
	Key      string
	Expected Expect
	// Actual is the record's current version; 0 when the record is absent.
	Actual uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("persistence: conflict on %s/%q: expected %s, found version %d", e.Table, e.Key, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Record is one stored value. Version starts at 1 on creation and grows by
// one on every write of the key; a deleted and re-created key starts again at 1.
type Record struct {
	Key     string
	Value   []byte
	Version uint64
}

// ExpectKind selects what an operation requires of the current record.
type ExpectKind uint8

const (
	// ExpectAny applies the operation whatever the current state.
	ExpectAny ExpectKind = iota
	// ExpectAbsent requires that no record exists at the key.
	ExpectAbsent
	// ExpectVersion requires that the record exists with exactly Version.
	ExpectVersion
)

// Expect is an operation's precondition.
type Expect struct {
	Kind    ExpectKind
	Version uint64
}

func (e Expect) String() string {
	switch e.Kind {
	case ExpectAbsent:
		return "absent"
	case ExpectVersion:
		return fmt.Sprintf("version %d", e.Version)
	default:
		return "any"
	}
}

// Holds reports whether a record at version cur (0: absent) meets e.
func (e Expect) Holds(cur uint64) bool {
	switch e.Kind {
	case ExpectAbsent:
		return cur == 0
	case ExpectVersion:
		return cur == e.Version
	default:
		return true
	}
}

// Any, Absent and AtVersion build expectations.
func Any() Expect               { return Expect{Kind: ExpectAny} }
func Absent() Expect            { return Expect{Kind: ExpectAbsent} }
func AtVersion(v uint64) Expect { return Expect{Kind: ExpectVersion, Version: v} }

// OpKind is the kind of a write operation.
type OpKind uint8

const (
	// OpPut writes Value at Key.
	OpPut OpKind = iota + 1
	// OpDelete removes Key. Deleting an absent key with ExpectAny is not an error.
	OpDelete
	// OpDeletePrefix removes every key of Table that starts with Key.
	// Its expectation must be ExpectAny.
	OpDeletePrefix
	// OpCheck writes nothing; it only asserts its expectation, so that a
	// batch can be guarded by a record it does not change.
	OpCheck
)

// Op is one operation of an atomic batch.
type Op struct {
	Kind   OpKind
	Table  string
	Key    string
	Value  []byte
	Expect Expect
}

// Put, Delete, DeletePrefix and Check build operations.
func Put(table, key string, value []byte, expect Expect) Op {
	return Op{Kind: OpPut, Table: table, Key: key, Value: value, Expect: expect}
}
func Delete(table, key string, expect Expect) Op {
	return Op{Kind: OpDelete, Table: table, Key: key, Expect: expect}
}
func DeletePrefix(table, prefix string) Op {
	return Op{Kind: OpDeletePrefix, Table: table, Key: prefix}
}
func Check(table, key string, expect Expect) Op {
	return Op{Kind: OpCheck, Table: table, Key: key, Expect: expect}
}

// Query selects a range of one table, in key order (byte-wise).
type Query struct {
	// Prefix restricts the range to keys that start with it.
	Prefix string
	// After, when set, starts the range strictly after this key (strictly
	// before it when Reverse). It is the cursor for paging.
	After string
	// Limit caps the number of records returned; 0 means no cap.
	Limit int
	// Reverse walks the range from the largest key down.
	Reverse bool
}

// Limits every implementation enforces, so that data written through one
// store can be moved to the other: PostgreSQL's B-tree index entries cap a key
// at about 2.7 kB, and bbolt holds a whole write transaction in memory, so a
// large value would stall every writer that shares its commit. A request over
// a limit fails with ErrInvalid and applies nothing.
const (
	MaxTableLen = 63
	MaxKeyLen   = 1024
	MaxValueLen = 16 << 20
)

// Store is implemented by bbolt (this package) and PostgreSQL.
type Store interface {
	// Get returns the record at key, or an error matching ErrNotFound.
	Get(ctx context.Context, table, key string) (Record, error)
	// List returns the records q selects, in key order.
	List(ctx context.Context, table string, q Query) ([]Record, error)
	// Apply runs ops as one atomic batch: either every expectation holds and
	// every operation is applied, or nothing is and the error matches
	// ErrConflict (a *ConflictError naming the first failed op). It returns
	// only after the batch is durable, with the new version of each op
	// (0 for deletes and checks). Concurrent callers share commits.
	//
	// Ops run in order: each op's expectation is checked against the state
	// the earlier ops of the same batch left (Put k Absent then Put k
	// AtVersion(1) holds). An empty batch, or an op that is malformed or over
	// a limit, fails with ErrInvalid.
	//
	// If ctx ends before the batch is handed to the database, Apply returns
	// ctx.Err() and nothing is written. Once handed over, Apply waits for the
	// outcome whatever ctx does, so an error other than ctx.Err() (for
	// example a failed commit) is the only ambiguous answer.
	Apply(ctx context.Context, ops ...Op) ([]uint64, error)
	// Close waits for in-flight Apply calls and releases the store.
	Close() error
}
