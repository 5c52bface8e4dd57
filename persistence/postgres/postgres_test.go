package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openStore(t, freshDB(t), Options{})
	})
}

func TestConformanceNoGroupCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openStore(t, freshDB(t), Options{NoGroupCommit: true})
	})
}

// A small group cap makes the suite's concurrent tests span several groups.
func TestConformanceSmallGroups(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openStore(t, freshDB(t), Options{MaxGroup: 3})
	})
}

func mustApply(t testing.TB, s persistence.Store, ops ...persistence.Op) []uint64 {
	t.Helper()
	vs, err := s.Apply(context.Background(), ops...)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return vs
}

func wantValue(t testing.TB, s persistence.Store, table, key, value string, version uint64) {
	t.Helper()
	rec, err := s.Get(context.Background(), table, key)
	if err != nil {
		t.Fatalf("Get(%s/%q): %v", table, key, err)
	}
	if string(rec.Value) != value || rec.Version != version {
		t.Fatalf("Get(%s/%q) = {%q, v%d}, want {%q, v%d}", table, key, rec.Value, rec.Version, value, version)
	}
}

func wantMissing(t testing.TB, s persistence.Store, table, key string) {
	t.Helper()
	if rec, err := s.Get(context.Background(), table, key); !errors.Is(err, persistence.ErrNotFound) {
		t.Fatalf("Get(%s/%q) = %+v, %v; want ErrNotFound", table, key, rec, err)
	}
}

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
func TestTwoStoresStaleActivation(t *testing.T) {
	dsn := freshDB(t)
	stores := []*Store{openStore(t, dsn, Options{}), openStore(t, dsn, Options{})}
	ctx := context.Background()

	stop := make(chan struct{})
	var bg sync.WaitGroup
	bgErr := make(chan error, 8)
	for si, s := range stores {
		for w := range 4 {
			bg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					key := fmt.Sprintf("%d/%d/%d", si, w, i)
					if _, err := s.Apply(ctx, persistence.Put("bg", key, []byte(key), persistence.Absent())); err != nil {
						bgErr <- err
						return
					}
				}
			})
		}
	}

	mustApply(t, stores[0], persistence.Put("agents", "a1", []byte("created"), persistence.Absent()))
	const rounds = 40
	for round := range rounds {
		ver := uint64(round + 1)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, s := range stores {
			wg.Go(func() {
				<-start
				_, errs[i] = s.Apply(ctx,
					persistence.Put("agents", "a1", []byte(fmt.Sprintf("r%d/m%d", round, i)), persistence.AtVersion(ver)),
					persistence.Put("side", fmt.Sprintf("r%d/m%d", round, i), []byte("x"), persistence.Absent()),
					persistence.Put("created", fmt.Sprintf("r%d", round), []byte(fmt.Sprint(i)), persistence.Absent()),
				)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("round %d: both members' writes were accepted", round)
				}
				winner = i
				continue
			}
			var ce *persistence.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("round %d member %d: %v, want a conflict", round, i, err)
			}
			// The loser read version ver like the winner. Its UPDATE of the
			// agent record either ran after the winner's commit or waited
			// for it and re-checked the row: either way it fails first.
			want1 := persistence.ConflictError{Table: "agents", Key: "a1", Expected: persistence.AtVersion(ver), Actual: ver + 1}
			if *ce != want1 {
				t.Fatalf("round %d member %d: conflict %+v, want %+v", round, i, *ce, want1)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no member's write was accepted: %v", round, errs)
		}
		loser := 1 - winner
		wantValue(t, stores[loser], "agents", "a1", fmt.Sprintf("r%d/m%d", round, winner), ver+1)
		wantValue(t, stores[loser], "side", fmt.Sprintf("r%d/m%d", round, winner), "x", 1)
		wantMissing(t, stores[winner], "side", fmt.Sprintf("r%d/m%d", round, loser))
		wantValue(t, stores[winner], "created", fmt.Sprintf("r%d", round), fmt.Sprint(winner), 1)
	}
	close(stop)
	bg.Wait()
	close(bgErr)
	for err := range bgErr {
		t.Fatalf("background writer: %v", err)
	}
}

// Two members create the same keys at once: one creation each wins, the
// other member's batch conflicts with Actual 1.
func TestTwoStoresCreateRace(t *testing.T) {
	dsn := freshDB(t)
	stores := []*Store{openStore(t, dsn, Options{}), openStore(t, dsn, Options{})}
	const keys = 100
	var wg sync.WaitGroup
	errs := make([][keys]error, 2)
	start := make(chan struct{})
	for i, s := range stores {
		for k := range keys {
			wg.Go(func() {
				<-start
				_, errs[i][k] = s.Apply(context.Background(), persistence.Put("names", fmt.Sprint(k), []byte(fmt.Sprint(i)), persistence.Absent()))
			})
		}
	}
	close(start)
	wg.Wait()
	for k := range keys {
		a, b := errs[0][k], errs[1][k]
		if (a == nil) == (b == nil) {
			t.Fatalf("key %d: errors %v and %v, want exactly one nil", k, a, b)
		}
		winner, lerr := 0, b
		if a != nil {
			winner, lerr = 1, a
		}
		var ce *persistence.ConflictError
		if !errors.As(lerr, &ce) || ce.Actual != 1 {
			t.Fatalf("key %d: loser got %v, want a conflict with actual version 1", k, lerr)
		}
		wantValue(t, stores[0], "names", fmt.Sprint(k), fmt.Sprint(winner), 1)
	}
}

// Check with Absent locks the absent key until the batch commits, so two
// members cannot both act on "y is absent" and "x is absent" while each
// creates the other's key (write skew). Both orders of the classic
// interleaving end with at most one batch applied.
func TestTwoStoresNoWriteSkew(t *testing.T) {
	// A short deadlock_timeout: the two transactions may deadlock on each
	// other's key locks, and PostgreSQL only looks after the timeout.
	dsn := freshDB(t, "deadlock_timeout", "50ms")
	a, b := openStore(t, dsn, Options{}), openStore(t, dsn, Options{})
	const rounds = 12
	for round := range rounds {
		x, y := fmt.Sprintf("x%d", round), fmt.Sprintf("y%d", round)
		var wg sync.WaitGroup
		var errA, errB error
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, errA = a.Apply(context.Background(), persistence.Check("oncall", x, persistence.Absent()), persistence.Put("oncall", y, []byte("a"), persistence.Absent()))
		})
		wg.Go(func() {
			<-start
			_, errB = b.Apply(context.Background(), persistence.Check("oncall", y, persistence.Absent()), persistence.Put("oncall", x, []byte("b"), persistence.Absent()))
		})
		close(start)
		wg.Wait()
		for _, err := range []error{errA, errB} {
			if err != nil && !errors.Is(err, persistence.ErrConflict) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if errA == nil && errB == nil {
			t.Fatalf("round %d: both batches applied: write skew", round)
		}
		if errA != nil && errB != nil {
			// Legal (each may have seen the other's key), but then
			// nothing was written.
			wantMissing(t, a, "oncall", x)
			wantMissing(t, a, "oncall", y)
		}
	}
}

// A group deliberately filled with conflicting and succeeding batches,
// multi-op ones included: the conflicts are each batch's own answer, and
// the group took one transaction.
func TestGroupWithConflictsKeepsOthers(t *testing.T) {
	dsn := freshDB(t)
	release := make(chan struct{})
	var (
		mu     sync.Mutex
		groups []int
		first  = true
	)
	s := openHooked(t, dsn, Options{}, testHooks{
		taken: func(n int) {
			mu.Lock()
			f := first
			first = false
			mu.Unlock()
			if f {
				<-release // hold the committer so that the queue fills
			}
		},
		observe: func(n int, _ time.Duration) {
			mu.Lock()
			groups = append(groups, n)
			mu.Unlock()
		},
	})
	ctx := context.Background()
	// The first Apply is taken alone and holds the committer.
	done := make(chan error, 1)
	go func() {
		_, err := s.Apply(ctx, persistence.Put("t", "guard", []byte("g"), persistence.Absent()))
		done <- err
	}()
	waitQueue(t, s, 0, func() bool { mu.Lock(); defer mu.Unlock(); return !first })

	const n = 60
	var wg sync.WaitGroup
	errs := make([]error, n)
	vers := make([][]uint64, n)
	for i := range n {
		wg.Go(func() {
			k := fmt.Sprintf("k%02d", i)
			ops := []persistence.Op{
				persistence.Put("t", k, []byte("1"), persistence.Absent()),
				persistence.Put("t", k, []byte("2"), persistence.AtVersion(1)),
			}
			switch i % 3 {
			case 1: // fails on its last op
				ops = append(ops, persistence.Check("t", "guard", persistence.AtVersion(7)))
			case 2: // fails on its first op
				ops = append([]persistence.Op{persistence.Put("t", "guard", nil, persistence.Absent())}, ops...)
			}
			vers[i], errs[i] = s.Apply(ctx, ops...)
		})
	}
	waitQueue(t, s, n, nil)
	close(release)
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		switch {
		case i%3 == 0:
			if errs[i] != nil || fmt.Sprint(vers[i]) != "[1 2]" {
				t.Fatalf("batch %d = %v, %v; want [1 2]", i, vers[i], errs[i])
			}
			wantValue(t, s, "t", k, "2", 2)
		case i%3 == 1:
			var ce *persistence.ConflictError
			if !errors.As(errs[i], &ce) || *ce != (persistence.ConflictError{Table: "t", Key: "guard", Expected: persistence.AtVersion(7), Actual: 1}) {
				t.Fatalf("batch %d = %v, want a conflict on guard", i, errs[i])
			}
			wantMissing(t, s, "t", k)
		default:
			var ce *persistence.ConflictError
			if !errors.As(errs[i], &ce) || *ce != (persistence.ConflictError{Table: "t", Key: "guard", Expected: persistence.Absent(), Actual: 1}) {
				t.Fatalf("batch %d = %v, want a conflict on guard", i, errs[i])
			}
			wantMissing(t, s, "t", k)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(groups) != 2 || groups[1] != n {
		t.Fatalf("groups %v, want [1 %d]", groups, n)
	}
}

// waitQueue waits until s's committer queue holds n requests and cond (if
// set) holds.
func waitQueue(t *testing.T, s *Store, n int, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := s.c.Len()
		if l == n && (cond == nil || cond()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue holds %d requests, want %d", l, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Contexts cancelled while their batches sit in the queue or in a group
// being committed: a batch withdrawn from the queue (Apply returned
// ctx.Err()) wrote nothing; a batch already taken reports its real outcome;
// no batch is ever half applied. Each writer keeps a compare-and-set chain
// on its own counter, so one batch that wrote while reporting ctx.Err()
// would break the chain.
func TestCancelMidGroupLeavesNoPartialBatch(t *testing.T) {
	dsn := freshDB(t)
	var (
		mu      sync.Mutex
		cancels = map[*context.CancelFunc]struct{}{}
		groupNo int
	)
	s := openHooked(t, dsn, Options{MaxGroup: 8}, testHooks{
		taken: func(int) {
			mu.Lock()
			defer mu.Unlock()
			groupNo++
			if groupNo%2 == 0 {
				return
			}
			// Cancel every caller that is waiting now: those in this group
			// (already taken) and those still queued.
			for c := range cancels {
				(*c)()
				delete(cancels, c)
			}
		},
	})
	const writers, perWriter = 16, 40
	var wg sync.WaitGroup
	type result struct {
		key string
		ok  bool
	}
	results := make([][]result, writers)
	counters := make([]uint64, writers)
	for w := range writers {
		wg.Go(func() {
			counter := fmt.Sprintf("w%02d", w)
			var ver uint64 // 0: not created yet
			for i := range perWriter {
				key := fmt.Sprintf("w%02d/%03d", w, i)
				expect := persistence.AtVersion(ver)
				if ver == 0 {
					expect = persistence.Absent()
				}
				ctx, cancel := context.WithCancel(context.Background())
				mu.Lock()
				cancels[&cancel] = struct{}{}
				mu.Unlock()
				vs, err := s.Apply(ctx,
					persistence.Put("a", key, []byte(key), persistence.Absent()),
					persistence.Put("counter", counter, []byte(fmt.Sprint(i)), expect),
					persistence.Put("b", key, []byte(key), persistence.Absent()),
				)
				mu.Lock()
				delete(cancels, &cancel)
				mu.Unlock()
				cancel()
				switch {
				case err == nil:
					ver = vs[1]
					results[w] = append(results[w], result{key, true})
				case errors.Is(err, context.Canceled):
					results[w] = append(results[w], result{key, false})
				default:
					t.Errorf("writer %d batch %d: %v", w, i, err)
					return
				}
			}
			counters[w] = ver
		})
	}
	wg.Wait()
	committed, withdrawn := 0, 0
	for w := range writers {
		var n uint64
		for _, r := range results[w] {
			if r.ok {
				committed++
				n++
				wantValue(t, s, "a", r.key, r.key, 1)
				wantValue(t, s, "b", r.key, r.key, 1)
			} else {
				withdrawn++
				wantMissing(t, s, "a", r.key)
				wantMissing(t, s, "b", r.key)
			}
		}
		if n > 0 {
			rec, err := s.Get(context.Background(), "counter", fmt.Sprintf("w%02d", w))
			if err != nil || rec.Version != n || rec.Version != counters[w] {
				t.Fatalf("writer %d: counter %+v, %v; want version %d", w, rec, err, n)
			}
		}
	}
	t.Logf("%d batches committed, %d withdrawn by their cancelled context", committed, withdrawn)
	if withdrawn == 0 {
		t.Log("no batch was withdrawn: the cancellations only hit taken groups")
	}
}

// The crash-ish case: the database connection of the committer is killed
// (pg_terminate_backend, what a crashed member or a network cut looks like
// from the server) again and again while writers commit two-record
// batches. Every acknowledged batch is there; every batch, acknowledged or
// not, is all there or not at all.
func TestBackendKilledMidGroup(t *testing.T) {
	const app = "veil_kill_test"
	dsn := freshDB(t, "application_name", app)
	s := openStore(t, dsn, Options{})
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, baseDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var dbName string
	if err := s.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&dbName); err != nil {
		t.Fatal(err)
	}

	const writers = 16
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acked, failed []string
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("w%02d/%06d", w, i)
				_, err := s.Apply(ctx,
					persistence.Put("a", key, []byte(key), persistence.Absent()),
					persistence.Put("b", key, []byte(key), persistence.Absent()),
				)
				mu.Lock()
				if err == nil {
					acked = append(acked, key)
				} else {
					failed = append(failed, key)
				}
				mu.Unlock()
				if errors.Is(err, persistence.ErrConflict) {
					t.Errorf("%s: %v", key, err)
					return
				}
			}
		})
	}
	kills := 0
	for range 15 {
		time.Sleep(30 * time.Millisecond)
		var n int
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()`, dbName, app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		kills += n
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()

	// Verify over a fresh store: the old pool may still be reconnecting.
	v := openStore(t, dsn, Options{})
	for _, key := range acked {
		wantValue(t, v, "a", key, key, 1)
		wantValue(t, v, "b", key, key, 1)
	}
	for _, table := range []string{"a", "b"} {
		recs, err := v.List(ctx, table, persistence.Query{})
		if err != nil {
			t.Fatal(err)
		}
		other := map[string]string{"a": "b", "b": "a"}[table]
		for _, r := range recs {
			if _, err := v.Get(ctx, other, r.Key); err != nil {
				t.Fatalf("%s/%s committed without %s/%s: %v", table, r.Key, other, r.Key, err)
			}
		}
	}
	if len(acked) == 0 {
		t.Fatal("no batch was acknowledged")
	}
	t.Logf("%d backends killed; %d batches acknowledged, %d failed with an (ambiguous) error", kills, len(acked), len(failed))
}

func TestRefusesAsyncCommit(t *testing.T) {
	dsn := freshDB(t, "synchronous_commit", "off")
	s, err := Open(context.Background(), dsn, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open with synchronous_commit=off succeeded")
	}
	if !strings.Contains(err.Error(), "synchronous_commit") {
		t.Fatalf("Open = %v, want an error naming synchronous_commit", err)
	}
}

// A version no BIGINT can hold is a conflict, as against bbolt, not an
// error of the database.
func TestHugeExpectedVersionIsAConflict(t *testing.T) {
	s := openStore(t, freshDB(t), Options{})
	mustApply(t, s, persistence.Put("t", "k", []byte("v"), persistence.Absent()))
	for _, v := range []uint64{math.MaxInt64 + 1, math.MaxUint64} {
		_, err := s.Apply(context.Background(), persistence.Put("t", "k", nil, persistence.AtVersion(v)))
		var ce *persistence.ConflictError
		if !errors.As(err, &ce) || ce.Actual != 1 {
			t.Fatalf("AtVersion(%d) = %v, want a conflict with actual 1", v, err)
		}
	}
}

// A group larger than MaxGroupBytes is split; a single batch over it still
// commits, alone.
func TestGroupBytesCap(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	s := openHooked(t, freshDB(t), Options{MaxGroupBytes: 1 << 20}, testHooks{observe: func(n int, _ time.Duration) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	}})
	big := make([]byte, 3<<20)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			mustApply(t, s, persistence.Put("t", fmt.Sprint(i), big, persistence.Any()))
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range sizes {
		if n != 1 {
			t.Fatalf("group sizes %v: batches over the byte cap must commit alone", sizes)
		}
	}
}

// The savepoint path, which groups otherwise take only after a conflict,
// on every group.
func TestConformanceAlwaysSavepoints(t *testing.T) {
	storetest.Run(t, func(t *testing.T) persistence.Store {
		return openHooked(t, freshDB(t), Options{}, testHooks{savepoints: true})
	})
}
