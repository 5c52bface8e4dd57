package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veilhq/veil/persistence/postgres/pgtest"
)

// freshDB is an empty PostgreSQL database for t alone (pgtest).
func freshDB(t testing.TB) string {
	t.Helper()
	return pgtest.FreshDB(t)
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
// scanners, the reminder and the webhook deliverer run under leases in
// the store, and a clean stop gives the leases back.
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
	want := []string{"reminder", "scanner/base", "scanner/ethereum", "scanner/horizen", "scanner/polygon", "scanner/solana", "scanner/stellar", "webhooks"}
	deadline := time.Now().Add(30 * time.Second)
	for got := leaseRows(t, dsn); strings.Join(got, ",") != strings.Join(want, ","); got = leaseRows(t, dsn) {
		if time.Now().After(deadline) {
			t.Fatalf("leases %v, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The process's own commits (the lease takes above) run on background
	// goroutines, and the store reports a commit to the metrics after it
	// has answered the writer: wait for the sample rather than read once.
	deadline = time.Now().Add(30 * time.Second)
	for f := scrape(t, p.metrics)["veil_store_commit_batches"]; f == nil || f.Metric[0].GetHistogram().GetSampleCount() == 0; f = scrape(t, p.metrics)["veil_store_commit_batches"] {
		if time.Now().After(deadline) {
			t.Fatal("no store commits observed in the metrics")
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
