// Package pgtest gives tests a PostgreSQL database of their own. The
// server is VEIL_TEST_POSTGRES, default 127.0.0.1:5432 as user postgres
// (trust auth). Without a server a test skips, except under CI=true, where a
// skip would hide that nothing was tested.
package pgtest

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

// DSNEnv names the variable that points the tests at another server.
const DSNEnv = "VEIL_TEST_POSTGRES"

const defaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=5"

// BaseDSN is the server's administrative connection string.
func BaseDSN() string {
	if dsn := os.Getenv(DSNEnv); dsn != "" {
		return dsn
	}
	return defaultDSN
}

// reach is checked once per test binary: one unreachable server need not
// cost every test a connect timeout.
var reach = sync.OnceValue(func() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, BaseDSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
})

// Need skips (or, under CI, fails) t when the server is not there.
func Need(t testing.TB) {
	t.Helper()
	err := reach()
	if err == nil {
		return
	}
	u := redacted(BaseDSN())
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL not reachable at %s: %v\n(CI=true: these tests must run, not skip; .ci/run starts the server with pg_ctlcluster)", u, err)
	}
	t.Skipf("PostgreSQL not reachable at %s (%v): start it, or point %s at a server where the user may CREATE DATABASE", u, err, DSNEnv)
}

func redacted(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable " + DSNEnv + ")"
	}
	return u.Redacted()
}

// FreshDB creates an empty database for t alone (dropped when t ends) and
// returns its DSN. extra are query parameters added to it, as name, value
// pairs (runtime settings, application_name).
func FreshDB(t testing.TB, extra ...string) string {
	t.Helper()
	Need(t)
	var b [6]byte
	rand.Read(b[:])
	name := "veil_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, BaseDSN())
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
		admin, err := pgx.Connect(ctx, BaseDSN())
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
	u, err := url.Parse(BaseDSN())
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
