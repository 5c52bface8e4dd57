package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// parseWithEnv parses args as veild serve does, with the variable name
// set to value, or unset when value is "".
func parseWithEnv(t *testing.T, name, value string, args []string) config {
	t.Helper()
	if value != "" {
		t.Setenv(name, value)
	} else {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	var cfg config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cfg.bindFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// --store-log (and VEIL_STORE_LOG) choose whether bbolt commits through
// its write-ahead log: with it the data file has a log directory and the
// applier's observer hears of the write; without it neither, and the
// commit observer still does.
func TestStoreLogFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     string // VEIL_STORE_LOG, "" unset
		wantLog bool
	}{
		{"default", nil, "", true},
		{"flag off", []string{"--store-log=false"}, "", false},
		{"env off", nil, "false", false},
		{"flag wins over env", []string{"--store-log=true"}, "false", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseWithEnv(t, "VEIL_STORE_LOG", tc.env, tc.args)
			if cfg.StoreLog != tc.wantLog {
				t.Fatalf("StoreLog = %v, want %v", cfg.StoreLog, tc.wantLog)
			}
			dir := t.TempDir()
			var commits, applied atomic.Int64
			st, err := openStore(context.Background(), "bolt", dir, "", storeOptions{
				observe:      func(n int, _ time.Duration) { commits.Add(int64(n)) },
				observeApply: func(g int, _ time.Duration) { applied.Add(int64(g)) },
				noLog:        !cfg.StoreLog,
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Apply(context.Background(), persistence.Put("t", "k", []byte("v"), persistence.Absent())); err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(persistence.LogDir(filepath.Join(dir, dbFile)))
			if hasLog := statErr == nil; hasLog != tc.wantLog {
				t.Fatalf("log directory present = %v (%v), want %v", hasLog, statErr, tc.wantLog)
			}
			// Close applies what the log holds, and reports it first.
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if commits.Load() != 1 {
				t.Fatalf("commit observer saw %d batches, want 1", commits.Load())
			}
			if want := map[bool]int64{true: 1, false: 0}[tc.wantLog]; applied.Load() != want {
				t.Fatalf("apply observer saw %d groups, want %d", applied.Load(), want)
			}
		})
	}
}

// --store-apply-delay (and VEIL_STORE_APPLY_DELAY) set the bbolt log
// applier's delay; 0 turns it off, which BoltOptions spells as negative
// (its 0 is the default).
func TestStoreApplyDelayFlag(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		env      string // VEIL_STORE_APPLY_DELAY, "" unset
		wantFlag time.Duration
		wantOpt  time.Duration // what OpenBolt gets
	}{
		{"default", nil, "", persistence.DefaultApplyDelay, persistence.DefaultApplyDelay},
		{"flag", []string{"--store-apply-delay=250ms"}, "", 250 * time.Millisecond, 250 * time.Millisecond},
		{"off", []string{"--store-apply-delay=0"}, "", 0, -1},
		{"env", nil, "20ms", 20 * time.Millisecond, 20 * time.Millisecond},
		{"env off", nil, "0s", 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseWithEnv(t, "VEIL_STORE_APPLY_DELAY", tc.env, tc.args)
			if cfg.StoreApplyDelay != tc.wantFlag {
				t.Fatalf("StoreApplyDelay = %v, want %v", cfg.StoreApplyDelay, tc.wantFlag)
			}
			if got := persistence.ApplyDelaySetting(cfg.StoreApplyDelay); got != tc.wantOpt {
				t.Fatalf("BoltOptions.ApplyDelay = %v, want %v", got, tc.wantOpt)
			}
		})
	}
}
