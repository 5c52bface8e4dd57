package postgres

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// The statements of the store, prepared by name on every pooled connection.
//
// The "guarded" statements are how an expectation is checked inside a
// pipelined group transaction: the conditional write (UPDATE … WHERE
// version = $n, INSERT … ON CONFLICT DO NOTHING, DELETE … WHERE version =
// $n, or a row lock for a check) runs in a data-modifying CTE, and the outer
// SELECT divides by the number of rows it touched. No row touched means the
// expectation failed, and the division by zero (SQLSTATE 22012) makes the
// server abort the transaction and skip the rest of the pipeline, so that
// nothing after a failed expectation runs (in particular not the COMMIT).
// The committer then resolves the failed batch precisely (commit.go).
const (
	stBegin      = "veil_begin"
	stCommit     = "veil_commit"
	stRollback   = "veil_rollback"
	stSavepoint  = "veil_savepoint"
	stRelease    = "veil_release"
	stRollbackTo = "veil_rollback_to"

	// Fast path (pipelined, guarded).
	stPutAny           = "veil_put_any"
	stPutAbsent        = "veil_put_absent"
	stPutAt            = "veil_put_at"
	stDeleteAny        = "veil_delete_any"
	stDeleteAt         = "veil_delete_at"
	stCheckAt          = "veil_check_at"
	stDeletePrefix     = "veil_delete_prefix"
	stDeletePrefixOpen = "veil_delete_prefix_open"

	// Precise path (one statement at a time, never guarded).
	stLockRead      = "veil_lock_read"
	stInsert        = "veil_insert"
	stUpdateAt      = "veil_update_at"
	stDeleteVersion = "veil_delete_version"

	// Reads.
	stGet = "veil_get"
)

// guardFailed is the SQLSTATE of a guarded statement whose expectation did
// not hold (division_by_zero).
const guardFailed = "22012"

var statements = map[string]string{
	stBegin:      `BEGIN`,
	stCommit:     `COMMIT`,
	stRollback:   `ROLLBACK`,
	stSavepoint:  `SAVEPOINT veil_batch`,
	stRelease:    `RELEASE SAVEPOINT veil_batch`,
	stRollbackTo: `ROLLBACK TO SAVEPOINT veil_batch`,

	// Put with Any: an upsert, whatever the row's state; returns the new
	// version.
	stPutAny: `INSERT INTO veil_records AS r (tbl, rkey, rvalue, version) VALUES ($1, $2, $3, 1)
ON CONFLICT (tbl, rkey) DO UPDATE SET rvalue = excluded.rvalue, version = r.version + 1
RETURNING version`,
	// Put with Absent: the insert happens only if no row exists; a
	// concurrent inserter's uncommitted row makes it wait for that
	// transaction's outcome. Also used, with an empty value and followed by
	// stDeleteAny, to lock an absent key for Check/Delete with Absent.
	stPutAbsent: `WITH w AS (
  INSERT INTO veil_records (tbl, rkey, rvalue, version) VALUES ($1, $2, $3, 1)
  ON CONFLICT (tbl, rkey) DO NOTHING RETURNING 1
) SELECT 1 / count(*) FROM w`,
	// Put with AtVersion($4): the version check is the UPDATE's WHERE, so a
	// stale writer (another member's duplicate activation) updates nothing.
	// A concurrent update makes it wait and re-check the new row.
	stPutAt: `WITH w AS (
  UPDATE veil_records SET rvalue = $3, version = version + 1
  WHERE tbl = $1 AND rkey = $2 AND version = $4 RETURNING 1
) SELECT 1 / count(*) FROM w`,
	stDeleteAny: `DELETE FROM veil_records WHERE tbl = $1 AND rkey = $2`,
	stDeleteAt: `WITH w AS (
  DELETE FROM veil_records WHERE tbl = $1 AND rkey = $2 AND version = $3 RETURNING 1
) SELECT 1 / count(*) FROM w`,
	// Check with AtVersion($3): a shared row lock, held to commit, so that
	// no other transaction changes the guarding record before this batch
	// commits (other checkers are not blocked).
	stCheckAt: `WITH w AS (
  SELECT 1 FROM veil_records WHERE tbl = $1 AND rkey = $2 AND version = $3 FOR SHARE
) SELECT 1 / count(*) FROM w`,
	stDeletePrefix:     `DELETE FROM veil_records WHERE tbl = $1 AND rkey >= $2 AND rkey < $3`,
	stDeletePrefixOpen: `DELETE FROM veil_records WHERE tbl = $1 AND rkey >= $2`,

	stLockRead:      `SELECT version FROM veil_records WHERE tbl = $1 AND rkey = $2 FOR UPDATE`,
	stInsert:        `INSERT INTO veil_records (tbl, rkey, rvalue, version) VALUES ($1, $2, $3, 1) ON CONFLICT (tbl, rkey) DO NOTHING`,
	stUpdateAt:      `UPDATE veil_records SET rvalue = $3, version = version + 1 WHERE tbl = $1 AND rkey = $2 AND version = $4`,
	stDeleteVersion: `DELETE FROM veil_records WHERE tbl = $1 AND rkey = $2 AND version = $3`,

	stGet: `SELECT rvalue, version FROM veil_records WHERE tbl = $1 AND rkey = $2`,
}

// prepare is the pool's AfterConnect: it prepares every statement on a new
// connection (a round trip each, once per connection).
func prepare(ctx context.Context, conn *pgx.Conn) error {
	for name, sql := range statements {
		if _, err := conn.Prepare(ctx, name, sql); err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
	}
	return nil
}

// sqlVersion is v as a BIGINT parameter. A version beyond int64 can never be
// stored, so it becomes -1, which no row has (CHECK version > 0): the
// expectation then fails as a conflict, as it would against bbolt.
func sqlVersion(v uint64) int64 {
	if v > math.MaxInt64 {
		return -1
	}
	return int64(v)
}
