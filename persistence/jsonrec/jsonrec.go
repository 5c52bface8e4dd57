// Package jsonrec reads and writes one JSON value per store key: Get, Load
// and List decode records, Save writes one under the store's version check
// (the connectors' payment intents, which must be written once (Absent)
// and then only by whoever read the latest version).
package jsonrec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/veilhq/veil/persistence"
)

// Load decodes the record at key into a new T; it answers (nil, 0, nil)
// when there is none, and the record's version otherwise.
func Load[T any](ctx context.Context, st persistence.Store, table, key string) (*T, uint64, error) {
	v, ver, err := get[T](ctx, st, table, key)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, 0, nil
	}
	return v, ver, err
}

// Get decodes the record at key into a new T; a missing record is
// persistence.ErrNotFound.
func Get[T any](ctx context.Context, st persistence.Store, table, key string) (*T, error) {
	v, _, err := get[T](ctx, st, table, key)
	return v, err
}

func get[T any](ctx context.Context, st persistence.Store, table, key string) (*T, uint64, error) {
	rec, err := st.Get(ctx, table, key)
	if err != nil {
		return nil, 0, err
	}
	v := new(T)
	if err := json.Unmarshal(rec.Value, v); err != nil {
		return nil, 0, fmt.Errorf("decode %s/%s: %w", table, key, err)
	}
	return v, rec.Version, nil
}

// List decodes every record of table that q selects, in the store's
// order, each into a T.
func List[T any](ctx context.Context, st persistence.Store, table string, q persistence.Query) ([]T, error) {
	recs, err := st.List(ctx, table, q)
	if err != nil {
		return nil, err
	}
	return Decode[T](table, recs)
}

// Decode decodes recs, read from table, each into a T, for a caller that
// needs the records too (their keys and versions).
func Decode[T any](table string, recs []persistence.Record) ([]T, error) {
	out := make([]T, 0, len(recs))
	for _, rec := range recs {
		var v T
		if err := json.Unmarshal(rec.Value, &v); err != nil {
			return nil, fmt.Errorf("decode %s/%s: %w", table, rec.Key, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Save writes v at key if the record is still at version ver (0: absent)
// and answers the new version; a concurrent writer makes it fail with
// persistence.ErrConflict.
func Save(ctx context.Context, st persistence.Store, table, key string, v any, ver uint64) (uint64, error) {
	val, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	exp := persistence.Absent()
	if ver > 0 {
		exp = persistence.AtVersion(ver)
	}
	vs, err := st.Apply(ctx, persistence.Put(table, key, val, exp))
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}
