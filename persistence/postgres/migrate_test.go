package postgres

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/veilhq/veil/persistence"
)

func countMigrations(t *testing.T, dsn string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMigrationsTwiceAreANoOp(t *testing.T) {
	ctx := context.Background()
	dsn := freshDB(t)
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, dsn, Options{})
	mustApply(t, s, persistence.Put("t", "k", []byte("v"), persistence.Absent()))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for range 2 {
		n, err := migrate(ctx, conn, ms)
		if err != nil || n != 0 {
			t.Fatalf("migrate again = %d applied, %v; want 0, nil", n, err)
		}
	}
	if n := countMigrations(t, dsn); n != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(ms))
	}
	// A reopened store sees the data the first one wrote.
	s = openStore(t, dsn, Options{})
	wantValue(t, s, "t", "k", "v", 1)
}

func TestMigrationsRefuseForeignSchema(t *testing.T) {
	ctx := context.Background()
	dsn := freshDB(t)
	openStore(t, dsn, Options{}).Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	// A migration this binary does not know: a newer veild ran.
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name, checksum) VALUES (9999, 'future', 'x')`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open on a newer schema = %v, want an error saying so", err)
	}
	if _, err := conn.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 9999`); err != nil {
		t.Fatal(err)
	}
	// An applied migration whose text changed since.
	if _, err := conn.Exec(ctx, `UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, Options{}); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Open with an edited migration = %v, want a checksum error", err)
	}
}

// Several members starting at once on an empty database: every Open
// succeeds and each migration is applied exactly once.
func TestConcurrentStartsMigrateOnce(t *testing.T) {
	dsn := freshDB(t)
	const members = 6
	var wg sync.WaitGroup
	errs := make([]error, members)
	stores := make([]*Store, members)
	start := make(chan struct{})
	for i := range members {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(context.Background(), dsn, Options{})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %d: %v", i, err)
			continue
		}
		stores[i].Close()
	}
	ms, _ := loadMigrations(migrationFiles)
	if n := countMigrations(t, dsn); n != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}

// Members racing on a migration that also writes data: the data is written
// once, whichever member wins, and every member ends up at the last version.
func TestConcurrentMigrationsRunOnce(t *testing.T) {
	ctx := context.Background()
	dsn := freshDB(t)
	embedded, err := fs.ReadFile(migrationFiles, "migrations/0001_records.sql")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations(fstest.MapFS{
		"migrations/0001_records.sql": {Data: embedded},
		"migrations/0002_probe.sql": {Data: []byte(`CREATE TABLE probe (n INTEGER NOT NULL);
INSERT INTO probe (n) VALUES (1);
INSERT INTO veil_records (tbl, rkey, rvalue, version) VALUES ('t', 'k', 'v', 1);`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	const members = 8
	var wg sync.WaitGroup
	applied := make([]int, members)
	errs := make([]error, members)
	start := make(chan struct{})
	for i := range members {
		wg.Go(func() {
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close(ctx)
			<-start
			applied[i], errs[i] = migrate(ctx, conn, ms)
		})
	}
	close(start)
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		total += applied[i]
	}
	if total != len(ms) {
		t.Fatalf("members applied %v migrations in all, want %d", applied, len(ms))
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var probes int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM probe`).Scan(&probes); err != nil || probes != 1 {
		t.Fatalf("probe rows = %d, %v; want 1", probes, err)
	}
	if n := countMigrations(t, dsn); n != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}

func TestLoadMigrationsRules(t *testing.T) {
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.version != i+1 || m.checksum == "" || m.sql == "" {
			t.Fatalf("migration %d = %+v", i, m)
		}
	}
}

// The cluster's stale-activation case: the same agent active on two members,
// both writing the agent's record at the version they last read. Exactly one
// wins; the other gets a conflict naming the newer version and none of its
// batch is applied. Other traffic on both stores makes the contested batches
// share their group transactions with unrelated ones.
