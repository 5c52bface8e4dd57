package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence/postgres/pgtest"
)

// Each test gets a database of its own (pgtest).
func freshDB(t testing.TB, extra ...string) string {
	t.Helper()
	return pgtest.FreshDB(t, extra...)
}

func baseDSN() string { return pgtest.BaseDSN() }

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
