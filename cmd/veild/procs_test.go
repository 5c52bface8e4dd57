package main

import (
	"os"
	"runtime"
	"testing"
)

func TestStoreProcs(t *testing.T) {
	for _, c := range []struct {
		name        string
		store       string
		envSet      bool
		procs, ncpu int
		want        int
	}{
		{"bbolt on one CPU", "bolt", false, 1, 1, 2},
		{"bbolt, the default store name", "", false, 8, 8, 9},
		{"GOMAXPROCS set by the operator", "bolt", true, 4, 8, 0},
		{"GOMAXPROCS set to the CPUs", "bolt", true, 8, 8, 0},
		{"PostgreSQL", "postgres", false, 8, 8, 0},
		{"a CPU quota below the CPUs", "bolt", false, 2, 16, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := storeProcs(c.store, c.envSet, c.procs, c.ncpu); got != c.want {
				t.Fatalf("storeProcs(%q, %v, %d, %d) = %d, want %d", c.store, c.envSet, c.procs, c.ncpu, got, c.want)
			}
		})
	}
}

// TestServeSetsGOMAXPROCS starts veild on bbolt twice: without GOMAXPROCS
// it runs one P more than its CPUs, and an operator's GOMAXPROCS wins.
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
	p := start(t, t.TempDir())
	if got, want := gomaxprocs(p), float64(runtime.NumCPU()+1); got != want {
		t.Errorf("veild runs GOMAXPROCS %v on %d CPUs, want %v; stderr: %s", got, runtime.NumCPU(), want, p.stderr.all.String())
	}
}
