package host

import (
	"runtime/metrics"
	"time"
)

// heapMetric is the live heap, which metrics.Read samples cheaply (no
// stop-the-world, unlike runtime.ReadMemStats).
const heapMetric = "/memory/classes/heap/objects:bytes"

// monitorMemory sheds agents while the heap is above MemoryLimit.
func (h *Host) monitorMemory() {
	defer h.bg.Done()
	sample := []metrics.Sample{{Name: heapMetric}}
	t := time.NewTicker(h.cfg.MemoryCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-h.bgStop:
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 || sample[0].Value.Uint64() <= h.cfg.MemoryLimit {
			continue
		}
		h.log.Warn("heap above the memory limit: passivating the least recently used agents",
			"heap_bytes", sample[0].Value.Uint64(), "limit_bytes", h.cfg.MemoryLimit, "active", h.Active())
		h.Shed()
	}
}

// Shed asks every shard to passivate its least recently used tenth.
func (h *Host) Shed() {
	for _, pid := range h.shards {
		h.system.Root.Send(pid, shed{})
	}
}
