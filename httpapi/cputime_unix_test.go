//go:build unix

package httpapi_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, user and system: the
// benchmarks' cost per request that does not depend on how busy the
// machine's other work keeps the cores (latency and throughput do).
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
