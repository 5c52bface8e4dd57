package main

import (
	"os"
	"runtime"
	"testing"
)

func TestStoreProcs(t *testing.T) {
	for _, c := range []struct {
		name        string
		holdsP      bool
		envSet      bool
		procs, ncpu int
		want        int
	}{
		{"a sync that holds a P, one CPU", true, false, 1, 1, 2},
		{"a sync that holds a P, 8 CPUs", true, false, 8, 8, 9},
		{"a sync that holds none (AIO, PostgreSQL)", false, false, 8, 8, 0},
		{"GOMAXPROCS set by the operator", true, true, 4, 8, 0},
		{"GOMAXPROCS set to the CPUs", true, true, 8, 8, 0},
		{"a CPU quota below the CPUs", true, false, 2, 16, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := storeProcs(c.holdsP, c.envSet, c.procs, c.ncpu); got != c.want {
				t.Fatalf("storeProcs(%v, %v, %d, %d) = %d, want %d", c.holdsP, c.envSet, c.procs, c.ncpu, got, c.want)
			}
		})
	}
}

// TestServeSetsGOMAXPROCS starts veild on bbolt three times: an
// operator's GOMAXPROCS wins; by default the log syncs by AIO, which holds
// no P, and veild runs one P per CPU; with --store-log-aio=false the
// fdatasync holds one, and veild runs one more.
func TestServeSetsGOMAXPROCS(t *testing.T) {
	gomaxprocs := func(p *proc) float64 {
		t.Helper()
		f := scrape(t, p.metrics)["go_sched_gomaxprocs_threads"]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("go_sched_gomaxprocs_threads: %v", f)
		}
		return f.Metric[0].GetGauge().GetValue()
	}
	if got := gomaxprocs(startEnv(t, t.TempDir(), []string{"GOMAXPROCS=1"})); got != 1 {
		t.Errorf("GOMAXPROCS=1: veild runs %v", got)
	}
	// The runtime's own choice is below NumCPU under a CPU quota, where
	// veild leaves it (TestStoreProcs).
	if _, set := os.LookupEnv("GOMAXPROCS"); set || runtime.GOMAXPROCS(0) != runtime.NumCPU() {
		t.Skipf("GOMAXPROCS %d of %d CPUs here (set: %v): veild's own choice is not checked", runtime.GOMAXPROCS(0), runtime.NumCPU(), set)
	}
	for _, c := range []struct {
		env  []string
		want int
	}{
		{nil, runtime.NumCPU()},
		{[]string{"VEIL_STORE_LOG_AIO=false"}, runtime.NumCPU() + 1},
		{[]string{"VEIL_STORE_LOG=false"}, runtime.NumCPU() + 1},
	} {
		p := startEnv(t, t.TempDir(), c.env)
		if got := gomaxprocs(p); got != float64(c.want) {
			t.Errorf("%v: veild runs GOMAXPROCS %v on %d CPUs, want %d; stderr: %s", c.env, got, runtime.NumCPU(), c.want, p.stderr.all.String())
		}
	}
}
