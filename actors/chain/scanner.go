package chain

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// TableScanCursors holds the scan cursor of each consumer of a chain's
// announcements: "<chain>/<consumer>" → cursor (the connector's format).
const TableScanCursors = "chain_scan_cursors"

// ScanInto hands consumer every announcement after its persisted cursor, in
// pages of at most limit, and persists the cursor after each page deliver
// accepted (deliver must be idempotent: after a crash between deliver and
// the cursor write the page comes again). It returns how many
// announcements were delivered. Two scanners of one consumer running at
// once (two members of a cluster) conflict on the cursor's version: the
// loser stops with an error matching persistence.ErrConflict.
func (r *Ref) ScanInto(ctx context.Context, store persistence.Store, consumer string, limit int,
	deliver func(context.Context, []chains.Announcement) error) (int, error) {
	if limit <= 0 {
		limit = 1000
	}
	key := string(r.id) + "/" + consumer
	cursor, version := "", uint64(0)
	rec, err := store.Get(ctx, TableScanCursors, key)
	switch {
	case err == nil:
		cursor, version = string(rec.Value), rec.Version
	case !errors.Is(err, persistence.ErrNotFound):
		return 0, err
	}
	total := 0
	for {
		anns, next, err := r.Scan(ctx, cursor, limit)
		if err != nil {
			return total, err
		}
		if len(anns) > 0 {
			if err := deliver(ctx, anns); err != nil {
				return total, fmt.Errorf("chain: %s scan %s: deliver: %w", r.id, consumer, err)
			}
			total += len(anns)
		}
		if next != cursor {
			expect := persistence.Absent()
			if version > 0 {
				expect = persistence.AtVersion(version)
			}
			vs, err := store.Apply(ctx, persistence.Put(TableScanCursors, key, []byte(next), expect))
			if err != nil {
				return total, err
			}
			cursor, version = next, vs[0]
		}
		if len(anns) < limit {
			return total, nil
		}
	}
}

// ScanCursor is consumer's persisted cursor ("" before the first scan).
func ScanCursor(ctx context.Context, store persistence.Store, chain chains.ID, consumer string) (string, error) {
	rec, err := store.Get(ctx, TableScanCursors, string(chain)+"/"+consumer)
	if errors.Is(err, persistence.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(rec.Value), nil
}
