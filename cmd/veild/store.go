package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/postgres"
)

const dbFile = "veil.db"

// storeOpenTimeout bounds connecting to PostgreSQL and applying its
// migrations at start, so that a wrong DSN is an error, not a hang.
const storeOpenTimeout = 60 * time.Second

// storeOptions are what openStore passes to the store beyond where it is.
// The zero value is the production setting without metrics.
type storeOptions struct {
	// observe receives every group commit of either store, so the commit
	// metrics mean the same on both (on bbolt with its log: the append and
	// fdatasync of the group, not the bbolt transaction).
	observe func(batches int, commit time.Duration)
	// observeApply receives every transaction of bbolt's log applier: how
	// many logged groups it wrote into the file and how long it took.
	observeApply func(groups int, took time.Duration)
	// noLog commits every group to bbolt itself, the path before the
	// write-ahead log (--store-log=false, for measuring).
	noLog bool
	// applyDelay is the log applier's delay (--store-apply-delay); 0: none.
	applyDelay time.Duration
	// plainSync syncs the log with fdatasync, not AIO (--store-log-aio=false).
	plainSync bool
}

// openStore opens the configured store: the bbolt file in dir (created if
// needed), or the PostgreSQL database at dsn.
func openStore(ctx context.Context, kind, dir, dsn string, opts storeOptions) (persistence.Store, error) {
	switch kind {
	case "bolt", "":
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create data directory %s: %w", dir, err)
		}
		return persistence.OpenBolt(filepath.Join(dir, dbFile), persistence.BoltOptions{
			Observe: opts.observe, ObserveApply: opts.observeApply, NoLog: opts.noLog, Failpoint: failpoints.Hook(),
			ApplyDelay: persistence.ApplyDelaySetting(opts.applyDelay), PlainSync: opts.plainSync,
		})
	case "postgres":
		if dsn == "" {
			return nil, &usageError{"--store postgres needs --postgres-dsn (or VEIL_POSTGRES_DSN)"}
		}
		octx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
		defer cancel()
		s, err := postgres.Open(octx, dsn, postgres.Options{Observe: opts.observe, Failpoint: failpoints.Hook()})
		if err != nil {
			return nil, fmt.Errorf("open the PostgreSQL store: %w", err)
		}
		return s, nil
	default:
		return nil, &usageError{fmt.Sprintf("--store %q: want bolt or postgres", kind)}
	}
}
