package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgreSQL: the same arrangement as persistence/postgres's tests. Each
// test gets a database of its own; without a server the tests skip, except
// under CI=true, where a skip would hide that nothing was tested.
const (
	pgDSNEnv     = "VEIL_TEST_POSTGRES"
	pgDefaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable&connect_timeout=5"
)

func pgBaseDSN() string {
	if dsn := os.Getenv(pgDSNEnv); dsn != "" {
		return dsn
	}
	return pgDefaultDSN
}

var (
	pgReachOnce sync.Once
	pgReachErr  error
)

func needPostgres(t testing.TB) {
	t.Helper()
	pgReachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pgBaseDSN())
		if err != nil {
			pgReachErr = err
			return
		}
		pgReachErr = conn.Ping(ctx)
		conn.Close(ctx)
	})
	if pgReachErr == nil {
		return
	}
	u := "(unparsable " + pgDSNEnv + ")"
	if p, err := url.Parse(pgBaseDSN()); err == nil {
		u = p.Redacted()
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL not reachable at %s: %v\n(CI=true: these tests must run, not skip; .ci/run starts the server with pg_ctlcluster)", u, pgReachErr)
	}
	t.Skipf("PostgreSQL not reachable at %s (%v): start it, or point %s at a server where the user may CREATE DATABASE", u, pgReachErr, pgDSNEnv)
}

// freshDB creates an empty database for t alone and returns its DSN.
func freshDB(t testing.TB) string {
	t.Helper()
	needPostgres(t)
	var b [6]byte
	rand.Read(b[:])
	name := "veil_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgBaseDSN())
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
		admin, err := pgx.Connect(ctx, pgBaseDSN())
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		// FORCE: a veild a failed test left running must not keep it.
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(pgBaseDSN())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// leaseRows lists the lease records in the database at dsn.
func leaseRows(t *testing.T, dsn string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT rkey FROM veil_records WHERE tbl = 'leases'::bytea")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		names = append(names, string(k))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// veild on PostgreSQL: apikey create (from env) and serve (from flags)
// share the database, commits reach the same metrics as on bbolt, the
// scanners and the reminder run under leases in the store, and a clean
// stop gives the leases back.
func TestServeOnPostgres(t *testing.T) {
	dsn := freshDB(t)
	cmd := exec.Command(veildBin, "apikey", "create", "--account", "acme")
	cmd.Env = append(os.Environ(), "VEIL_STORE=postgres", "VEIL_POSTGRES_DSN="+dsn)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("apikey create on postgres: %v", err)
	}
	key := strings.TrimSpace(string(out))
	if !keyRE.MatchString(key) {
		t.Fatalf("stdout = %q, want a key", out)
	}

	p := start(t, t.TempDir(), "--store", "postgres", "--postgres-dsn", dsn)
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/agents", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("key created in PostgreSQL rejected: %d", resp.StatusCode)
	}
	if f := scrape(t, p.metrics)["veil_store_commit_batches"]; f == nil || f.Metric[0].GetHistogram().GetSampleCount() == 0 {
		t.Fatal("no store commits observed in the metrics")
	}

	want := []string{"reminder", "scanner/base", "scanner/ethereum", "scanner/horizen", "scanner/polygon", "scanner/solana", "scanner/stellar"}
	deadline := time.Now().Add(30 * time.Second)
	for got := leaseRows(t, dsn); strings.Join(got, ",") != strings.Join(want, ","); got = leaseRows(t, dsn) {
		if time.Now().After(deadline) {
			t.Fatalf("leases %v, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	logs := p.stop(t, syscall.SIGTERM)
	if n := strings.Count(logs, "lease: released"); n != len(want) {
		t.Fatalf("%d leases released at stop, want %d:\n%s", n, len(want), logs)
	}
	if got := leaseRows(t, dsn); len(got) != 0 {
		t.Fatalf("leases left after a clean stop: %v", got)
	}

	bad := exec.Command(veildBin, "serve", "--store", "postgres", "--data", t.TempDir())
	msg, err := bad.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(msg), "--postgres-dsn") {
		t.Fatalf("--store postgres without a DSN: %v %s", err, msg)
	}
}
