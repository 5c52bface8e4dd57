package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Schema migrations. Each file migrations/NNNN_name.sql is one migration,
// numbered from 1 without gaps, applied in order in its own transaction and
// recorded in schema_migrations with the SHA-256 of its text. A migration is
// never edited once released: Open refuses a database where an applied
// migration's checksum differs from the embedded file, and one that holds a
// migration this binary does not know (a newer veild migrated it).
//
// Several members may start at once. Each migration runs in one
// transaction with the insert of its schema_migrations row, whose primary
// key lets only one such transaction commit; the others fail, roll back
// whole, and find the row when they look again. DDL is transactional in
// PostgreSQL, so a member that dies half way leaves neither the row nor the
// schema change. No advisory lock: CockroachDB has none to rely on.

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version  int
	name     string
	sql      string
	checksum string // hex SHA-256 of sql
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads the embedded migrations in version order.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names { // fs.Glob sorts
		m := migrationName.FindStringSubmatch(path.Base(name))
		if m == nil {
			return nil, fmt.Errorf("migration file %s: name is not NNNN_name.sql", name)
		}
		v, _ := strconv.Atoi(m[1])
		if v != len(ms)+1 {
			return nil, fmt.Errorf("migration file %s: version %d, want %d (no gaps)", name, v, len(ms)+1)
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(text)
		ms = append(ms, migration{version: v, name: m[2], sql: string(text), checksum: hex.EncodeToString(sum[:])})
	}
	if len(ms) == 0 {
		return nil, errors.New("no migrations embedded")
	}
	return ms, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER     PRIMARY KEY,
    name       TEXT        NOT NULL,
    checksum   TEXT        NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// migrateAttempts bounds the retries of one step after a serialization
// failure or a deadlock (CockroachDB reports contention that way), or after
// losing the race to create an object to a concurrent member.
const migrateAttempts = 8

// migrate brings the schema up to date and returns how many migrations it
// applied (0 when another member, or an earlier start, already did).
func migrate(ctx context.Context, conn *pgx.Conn, ms []migration) (int, error) {
	if err := retry(ctx, func() error {
		_, err := conn.Exec(ctx, createMigrationsTable)
		return err
	}, func(err error) bool {
		// Two concurrent CREATE TABLE IF NOT EXISTS can both pass the
		// existence test; the loser fails on the catalog (unique_violation,
		// duplicate_table, or duplicate_object for the table's row type).
		// Its retry sees the table.
		return catalogRace(err) || retriable(err)
	}); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	// Check what is there first: a database migrated by a newer binary, or
	// with an edited migration, must be refused before anything runs.
	done, err := appliedMigrations(ctx, conn)
	if err != nil {
		return 0, err
	}
	for v, sum := range done {
		if v < 1 || v > len(ms) {
			return 0, fmt.Errorf("database is at schema version %d, newer than this binary's %d: run a newer veild", v, len(ms))
		}
		if m := ms[v-1]; sum != m.checksum {
			return 0, fmt.Errorf("migration %d (%s) was applied with checksum %s, but this binary embeds %s: a released migration was edited", v, m.name, sum, m.checksum)
		}
	}
	applied := 0
	for _, m := range ms {
		if _, ok := done[m.version]; ok {
			continue
		}
		var ran bool
		err := retry(ctx, func() (err error) {
			ran, err = applyMigration(ctx, conn, m)
			return err
		}, func(err error) bool {
			// Contention, or a concurrent run that committed first.
			return catalogRace(err) || retriable(err)
		})
		if err != nil {
			return applied, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		if ran {
			applied++
		}
	}
	return applied, nil
}

func appliedMigrations(ctx context.Context, conn *pgx.Conn) (map[int]string, error) {
	rows, err := conn.Query(ctx, `SELECT version, checksum FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	done := map[int]string{}
	var (
		v   int32
		sum string
	)
	_, err = pgx.ForEachRow(rows, []any{&v, &sum}, func() error {
		done[int(v)] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return done, nil
}

// applyMigration runs m unless another member applied it first, and reports
// whether it ran it. The DDL runs first and the schema_migrations row is
// inserted last (CockroachDB refuses DDL after a write in the same
// transaction), so the unique row is what lets exactly one of several
// concurrent runs commit: a second run fails, on the catalog (two CREATE
// TABLE of one name) or on the row's primary key, rolls back whole, and on
// its next attempt finds the row.
func applyMigration(ctx context.Context, conn *pgx.Conn, m migration) (ran bool, err error) {
	defer func() {
		if err == nil {
			return
		}
		// Whatever failed, if the row is there now another member applied
		// the migration while this one tried.
		if sum, ok, lookErr := migrationRow(ctx, conn, m.version); lookErr == nil && ok {
			ran, err = false, checkSum(m, sum)
		}
	}()
	if sum, ok, err := migrationRow(ctx, conn, m.version); err != nil || ok {
		if err == nil {
			err = checkSum(m, sum)
		}
		return false, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	// No arguments: pgx sends it with the simple protocol, so a migration
	// may hold several statements.
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`,
		m.version, m.name, m.checksum); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	return true, nil
}

func migrationRow(ctx context.Context, conn *pgx.Conn, version int) (sum string, ok bool, err error) {
	err = conn.QueryRow(ctx, `SELECT checksum FROM schema_migrations WHERE version = $1`, version).Scan(&sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return sum, err == nil, err
}

func checkSum(m migration, sum string) error {
	if sum != m.checksum {
		return fmt.Errorf("applied with checksum %s, but this binary embeds %s: a released migration was edited", sum, m.checksum)
	}
	return nil
}

// retry runs fn until it succeeds, fails with an error again does not
// accept, or migrateAttempts runs are spent.
func retry(ctx context.Context, fn func() error, again func(error) bool) error {
	var err error
	for attempt := range migrateAttempts {
		if err = fn(); err == nil || !again(err) {
			return err
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
	return err
}

// catalogRace reports the errors of a statement that lost a race to create
// the same object (or row) as a concurrent transaction: unique_violation,
// duplicate_table, duplicate_object.
func catalogRace(err error) bool {
	switch pgCode(err) {
	case "23505", "42P07", "42710":
		return true
	}
	return false
}

// pgCode returns err's SQLSTATE, or "" when err is not from the server.
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
