// Package postgres is the PostgreSQL persistence.Store, the store of cluster
// mode: every member of a cluster opens the same database. It keeps the
// contract of persistence.Store exactly as the embedded bbolt store does and
// passes the same conformance suite (persistence/storetest).
//
// All records live in one table, veil_records (tbl, rkey, rvalue, version),
// created by the migrations embedded in the binary and applied by Open.
// Writes are group-committed: concurrent Apply calls are coalesced by one
// committer goroutine into one transaction, sent as one pipelined round trip
// in the common case, while each batch keeps its own all-or-nothing outcome.
// Every expectation is a conditional statement (UPDATE … WHERE version = $n,
// INSERT … ON CONFLICT DO NOTHING) evaluated by the database under row
// locks, so a stale duplicate activation on another member cannot overwrite
// newer state. The SQL stays within what CockroachDB also accepts;
// docs/persistence-postgres.md has the design and the exceptions.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/internal/groupcommit"
	keyprefix "github.com/veilhq/veil/persistence/internal/prefix"
)

// Options tunes Open. The zero value is the production setting.
type Options struct {
	// NoGroupCommit gives every Apply its own transaction, run on the
	// caller's goroutine over its own pooled connection. It exists to
	// measure what group commit buys; do not use it in production.
	NoGroupCommit bool
	// MaxGroup caps how many Apply batches share one transaction (default
	// 1024).
	MaxGroup int
	// MaxGroupBytes caps the value bytes of one group (default 32 MiB), so
	// that one transaction's pipeline stays bounded in memory on both ends.
	// A batch larger than the cap gets a group of its own.
	MaxGroupBytes int
	// MaxConns sets the connection pool's size. 0 keeps the DSN's
	// pool_max_conns, else pgxpool's default (4 or the number of CPUs).
	// Group commit uses one connection for writes; reads and NoGroupCommit
	// writers use the rest.
	MaxConns int32
	// CommitTimeout bounds one group's transaction, lock waits included
	// (default 30s). When it expires, the callers of that group get an
	// error that does not say whether their batch committed.
	CommitTimeout time.Duration
	// Observe, when set, is called after every group with the number of
	// Apply batches it held and how long its transaction took (commit
	// included). It runs on the committer goroutine after callers have been
	// answered, but the next group waits for it: keep it cheap. With
	// NoGroupCommit it runs on each caller's goroutine, concurrently.
	Observe func(batchSize int, commit time.Duration)
	// Failpoint, when set, is called by the committer at
	// persistence.FailBeforeCommit (before the group's transaction is
	// sent) and persistence.FailAfterCommit (committed, nobody answered),
	// like persistence.BoltOptions.Failpoint. Tests only.
	Failpoint func(name string) error
}

const (
	defaultMaxGroup      = 1024
	defaultMaxGroupBytes = 32 << 20
	defaultCommitTimeout = 30 * time.Second
)

// Store is the PostgreSQL persistence.Store. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	opts Options

	// c admits calls until Close and group-commits Apply's batches.
	c *groupcommit.Queue[[]persistence.Op]

	hooks testHooks
}

var _ persistence.Store = (*Store)(nil)

// testHooks lets the package's tests steer the committer deterministically.
// All nil in production.
type testHooks struct {
	taken   func(group int)          // the committer took a group, before its transaction
	observe func(int, time.Duration) // called like Observe
	// savepoints makes every group use a savepoint per batch from the
	// start, to measure what the pipeline without them saves.
	savepoints bool
}

// Open connects to the database at dsn (a PostgreSQL URL or key=value
// string, as pgx parses it), applies the embedded schema migrations that
// the database lacks, and starts the committer. ctx bounds Open only.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	return open(ctx, dsn, opts, testHooks{})
}

func open(ctx context.Context, dsn string, opts Options, hooks testHooks) (*Store, error) {
	if opts.MaxGroup <= 0 {
		opts.MaxGroup = defaultMaxGroup
	}
	if opts.MaxGroupBytes <= 0 {
		opts.MaxGroupBytes = defaultMaxGroupBytes
	}
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = defaultCommitTimeout
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("persistence/postgres: %w", err)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	// The committer relies on named prepared statements in pipelined
	// batches, which the simple protocol mode would bypass.
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheStatement

	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("persistence/postgres: %w", err)
	}
	// Migrate on a connection of its own, before the pool's connections
	// prepare statements against the schema.
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("persistence/postgres: connect to %s: %w", where(cfg), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := migrate(ctx, conn, ms); err != nil {
		return nil, fmt.Errorf("persistence/postgres: %s: %w", where(cfg), err)
	}
	if err := checkDurable(ctx, conn); err != nil {
		return nil, fmt.Errorf("persistence/postgres: %s: %w", where(cfg), err)
	}

	cfg.AfterConnect = prepare
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("persistence/postgres: %w", err)
	}
	// Fail now rather than on the first write if the statements do not
	// prepare (a schema that is not the one the migrations made).
	pc, err := pool.Acquire(ctx)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("persistence/postgres: %s: %w", where(cfg), err)
	}
	pc.Release()

	s := &Store{pool: pool, opts: opts, hooks: hooks}
	s.c = groupcommit.Start(groupcommit.Config[[]persistence.Op]{
		Direct: opts.NoGroupCommit, MaxGroup: opts.MaxGroup, MaxBytes: opts.MaxGroupBytes,
		Commit: s.commitGroup,
	})
	return s, nil
}

// where names the database for error messages, without credentials.
func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("database %q on %s:%d", cfg.ConnConfig.Database, cfg.ConnConfig.Host, cfg.ConnConfig.Port)
}

// checkDurable refuses a session where a commit returns before its WAL is
// flushed: Apply promises that an acknowledged batch survives a crash of
// the database server. CockroachDB has no such setting (NULL here), and
// an error from the probe itself is not a reason to refuse.
func checkDurable(ctx context.Context, conn *pgx.Conn) error {
	var v *string
	if err := conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit', true)`).Scan(&v); err != nil {
		return nil
	}
	if v != nil && strings.EqualFold(*v, "off") {
		return errors.New("synchronous_commit is off: an acknowledged write could be lost; turn it on for Veil's database or role")
	}
	return nil
}

// Close rejects new calls with ErrClosed, waits for the calls already
// admitted (their batches commit normally), stops the committer and closes
// the connection pool. Closing twice is a no-op.
func (s *Store) Close() error {
	if !s.c.Close() {
		return nil
	}
	s.pool.Close()
	return nil
}

// Get implements persistence.Store.
func (s *Store) Get(ctx context.Context, table, key string) (persistence.Record, error) {
	if err := persistence.ValidateGet(table, key); err != nil {
		return persistence.Record{}, err
	}
	if err := s.c.Enter(ctx); err != nil {
		return persistence.Record{}, err
	}
	defer s.c.Leave()
	var (
		val []byte
		ver int64
	)
	err := s.pool.QueryRow(ctx, stGet, []byte(table), []byte(key)).Scan(&val, &ver)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return persistence.Record{}, fmt.Errorf("%w: %s/%q", persistence.ErrNotFound, table, key)
	case err != nil:
		if ctxErr := ctx.Err(); ctxErr != nil {
			return persistence.Record{}, ctxErr
		}
		return persistence.Record{}, fmt.Errorf("persistence/postgres: get %s/%q: %w", table, key, err)
	case ver <= 0:
		return persistence.Record{}, fmt.Errorf("persistence/postgres: get %s/%q: stored version %d", table, key, ver)
	}
	if val == nil {
		val = []byte{}
	}
	return persistence.Record{Key: key, Value: val, Version: uint64(ver)}, nil
}

// List implements persistence.Store. The range is one index scan of the
// primary key (tbl, rkey); BYTEA compares byte-wise, which is the order the
// contract asks for.
func (s *Store) List(ctx context.Context, table string, q persistence.Query) ([]persistence.Record, error) {
	if err := persistence.ValidateList(table, q); err != nil {
		return nil, err
	}
	if err := s.c.Enter(ctx); err != nil {
		return nil, err
	}
	defer s.c.Leave()
	sql, args := listQuery(table, q)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("persistence/postgres: list %s: %w", table, err)
	}
	var (
		out []persistence.Record
		key []byte
		val []byte
		ver int64
	)
	_, err = pgx.ForEachRow(rows, []any{&key, &val, &ver}, func() error {
		if ver <= 0 {
			return fmt.Errorf("%s/%q: stored version %d", table, key, ver)
		}
		if val == nil {
			val = []byte{}
		}
		out = append(out, persistence.Record{Key: string(key), Value: val, Version: uint64(ver)})
		return nil
	})
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("persistence/postgres: list %s: %w", table, err)
	}
	return out, nil
}

// listQuery builds the SELECT for q. Prefix becomes a key range (prefix <=
// key < keyprefix.End(prefix)) so the index bounds the scan; After bounds it on
// the side the walk starts from.
func listQuery(table string, q persistence.Query) (string, []any) {
	var sb strings.Builder
	args := []any{[]byte(table)}
	arg := func(v []byte) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	sb.WriteString("SELECT rkey, rvalue, version FROM veil_records WHERE tbl = $1")
	if q.Prefix != "" {
		sb.WriteString(" AND rkey >= " + arg([]byte(q.Prefix)))
		if end, ok := keyprefix.End([]byte(q.Prefix)); ok {
			sb.WriteString(" AND rkey < " + arg(end))
		}
	}
	if q.After != "" {
		if q.Reverse {
			sb.WriteString(" AND rkey < " + arg([]byte(q.After)))
		} else {
			sb.WriteString(" AND rkey > " + arg([]byte(q.After)))
		}
	}
	if q.Reverse {
		sb.WriteString(" ORDER BY rkey DESC")
	} else {
		sb.WriteString(" ORDER BY rkey")
	}
	if q.Limit > 0 {
		args = append(args, int64(q.Limit))
		fmt.Fprintf(&sb, " LIMIT $%d", len(args))
	}
	return sb.String(), args
}
