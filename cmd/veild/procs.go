package main

import (
	"log/slog"
	"os"
	"runtime"

	"github.com/veilhq/veil/persistence"
)

// storeProcs is the GOMAXPROCS veild runs with, or 0 to leave the
// runtime's choice (docs/operations.md, "CPUs and GOMAXPROCS").
//
// holdsP says whether the store's committer holds one of Go's Ps while
// the disk syncs. A plain fdatasync does: Go keeps a P with a goroutine
// in a system call until sysmon takes it back (one of its ticks at
// least: 20 µs, more on a busy or virtual machine). On P cores that
// leaves fewer than P running Go code while the disk syncs, and on one
// core nothing runs: no request reaches the store while a group syncs,
// so the next group holds one or two batches (scale-bench on one core:
// 1.15 batches per commit, veild 0.63 of its core busy). One P more than
// the CPUs lets the sync hold the spare one (docs/BENCHMARKS.md, "One P
// more than the CPUs"). The bbolt store's log syncs through Linux AIO
// instead, its committer parked in the network poller, as PostgreSQL's
// commits wait there: neither holds a P, and an extra P then only adds a
// thread competing for the cores (its GET p99 +36% on two cores;
// "The log's sync without a P").
//
// It leaves the choice alone where an operator set GOMAXPROCS, and where
// the runtime chose fewer than NumCPU: a CPU quota of the container
// (cgroup) is in force, and a P beyond it would run the process into the
// quota's throttling. NumCPU counts the CPUs of the process's affinity
// mask, so veild pinned to P cores (taskset) runs P+1 when it adds one.
func storeProcs(holdsP, envSet bool, procs, ncpu int) int {
	if envSet || !holdsP || procs < ncpu {
		return 0
	}
	return ncpu + 1
}

// syncHolder is a store that knows whether its commits' disk syncs hold a
// P (persistence.Bolt).
type syncHolder interface{ CommitSyncHoldsP() bool }

// setStoreProcs applies storeProcs to this process for the opened store,
// and says what it chose. It decides once, at start: a log whose file
// refuses the AIO sync at its first write (the kernel takes it for any
// file with an fsync operation, which every disk file system has) falls
// back to fdatasync without the spare P.
func setStoreProcs(store persistence.Store, log *slog.Logger) {
	h, ok := store.(syncHolder)
	holdsP := ok && h.CommitSyncHoldsP()
	_, envSet := os.LookupEnv("GOMAXPROCS")
	procs, ncpu := runtime.GOMAXPROCS(0), runtime.NumCPU()
	n := storeProcs(holdsP, envSet, procs, ncpu)
	if n == 0 {
		log.Debug("GOMAXPROCS left as the runtime chose", slog.Int("gomaxprocs", procs), slog.Int("cpus", ncpu), slog.Bool("env", envSet), slog.Bool("sync_holds_p", holdsP))
		return
	}
	runtime.GOMAXPROCS(n)
	log.Info("GOMAXPROCS set to one more than the CPUs: the store's disk syncs hold one (fdatasync without AIO; set GOMAXPROCS to choose)", slog.Int("gomaxprocs", n), slog.Int("cpus", ncpu))
}
