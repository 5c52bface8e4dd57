package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The tests need a PostgreSQL server where they may create databases. Each
// test gets a database of its own (veil_test_<random>), dropped when it
// ends. Without a server they skip, except under CI=true, where a skip
// would hide that nothing was tested.
const (
	dsnEnv     = "VEIL_TEST_POSTGRES"
	defaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=5"
)

func baseDSN() string {
	if dsn := os.Getenv(dsnEnv); dsn != "" {
		return dsn
	}
	return defaultDSN
}

var (
	reachOnce sync.Once
	reachErr  error
)

// needPostgres skips (or, under CI, fails) t when the server is not there.
func needPostgres(t testing.TB) {
	t.Helper()
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, baseDSN())
		if err != nil {
			reachErr = err
			return
		}
		reachErr = conn.Ping(ctx)
		conn.Close(ctx)
	})
	if reachErr == nil {
		return
	}
	u := redacted(baseDSN())
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL not reachable at %s: %v\n(CI=true: these tests must run, not skip; .ci/run starts the server with pg_ctlcluster)", u, reachErr)
	}
	t.Skipf("PostgreSQL not reachable at %s (%v): start it, or point %s at a server where the user may CREATE DATABASE", u, reachErr, dsnEnv)
}

func redacted(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable " + dsnEnv + ")"
	}
	return u.Redacted()
}

// freshDB creates an empty database for t alone and returns its DSN. extra
// query parameters (runtime settings, application_name) are added to it.
func freshDB(t testing.TB, extra ...string) string {
	t.Helper()
	needPostgres(t)
	var b [6]byte
	rand.Read(b[:])
	name := "veil_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, baseDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, baseDSN())
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		// FORCE: a store a failed test left open must not keep it.
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(baseDSN())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	q := u.Query()
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// openStore opens a store on dsn, closed when t ends.
func openStore(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	return openHooked(t, dsn, opts, testHooks{})
}

func openHooked(t testing.TB, dsn string, opts Options, hooks testHooks) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := open(ctx, dsn, opts, hooks)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
