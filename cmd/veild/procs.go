package main

import (
	"log/slog"
	"os"
	"runtime"
)

// storeProcs is the GOMAXPROCS veild runs with on the bbolt store, or 0 to
// leave the runtime's choice (docs/operations.md, "CPUs and GOMAXPROCS").
//
// The bbolt store's committer spends most of its time in fdatasync, and Go
// keeps a P with a goroutine in a system call until sysmon takes it back
// (one of its ticks at least: 20 µs, more on a busy or virtual machine).
// On P cores that leaves fewer than P running Go code while the disk
// syncs, and on one core nothing runs: no request reaches the store while
// a group syncs, so the next group holds one or two batches (scale-bench
// on one core: 1.15 batches per commit, veild 0.63 of its core busy).
// One P more than the CPUs lets the sync hold the spare one
// (docs/BENCHMARKS.md, "One P more than the CPUs": on one core chat ran
// 2.1× as fast, on two BenchmarkChat 14–24% faster; a second extra P added
// nothing).
//
// It leaves the choice alone where an operator set GOMAXPROCS, where the
// store is PostgreSQL (its commits wait in the network poller, which holds
// no P), and where the runtime chose fewer than NumCPU: a CPU quota of the
// container (cgroup) is in force, and a P beyond it would run the process
// into the quota's throttling. NumCPU counts the CPUs of the process's
// affinity mask, so veild pinned to P cores (taskset) runs P+1.
func storeProcs(store string, envSet bool, procs, ncpu int) int {
	if envSet || !isBolt(store) || procs < ncpu {
		return 0
	}
	return ncpu + 1
}

// setStoreProcs applies storeProcs to this process and says what it chose.
func setStoreProcs(store string, log *slog.Logger) {
	_, envSet := os.LookupEnv("GOMAXPROCS")
	procs, ncpu := runtime.GOMAXPROCS(0), runtime.NumCPU()
	n := storeProcs(store, envSet, procs, ncpu)
	if n == 0 {
		log.Debug("GOMAXPROCS left as the runtime chose", slog.Int("gomaxprocs", procs), slog.Int("cpus", ncpu), slog.Bool("env", envSet))
		return
	}
	runtime.GOMAXPROCS(n)
	log.Info("GOMAXPROCS set to one more than the CPUs, for the store's disk syncs (set GOMAXPROCS to choose)", slog.Int("gomaxprocs", n), slog.Int("cpus", ncpu))
}
