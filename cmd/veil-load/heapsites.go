package main

import (
	"fmt"
	"io"
	"math"
	goruntime "runtime"
	"sort"
	"strings"
)

// recordFunc is the function whose allocations are an agent's record, the
// part of an active agent that is its state rather than the actor.
const recordFunc = "github.com/veilhq/veil/actors/agent.decodeRecord"

// heapSites is the live heap by allocation site as of a fresh GC, read in
// process from the runtime's sampled heap profile (the samples a heap
// profile file holds) and scaled as pprof scales them, so that the
// per-agent figures need no go tool pprof: a static veil-load prints them.
type heapSites struct {
	total  float64
	record float64            // allocated under recordFunc
	sites  map[string]float64 // the rest, by the first function outside the runtime
}

func readHeapSites() heapSites {
	goruntime.GC() // the profile is as of the last completed GC
	var recs []goruntime.MemProfileRecord
	n, _ := goruntime.MemProfile(nil, true)
	for {
		recs = make([]goruntime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = goruntime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	rate := int64(goruntime.MemProfileRate)
	h := heapSites{sites: map[string]float64{}}
	type class struct {
		site   string
		record bool
	}
	seen := map[[32]uintptr]class{}
	for i := range recs {
		r := &recs[i]
		b := scaleHeapSample(r.InUseObjects(), r.InUseBytes(), rate)
		if b == 0 {
			continue
		}
		cl, ok := seen[r.Stack0]
		if !ok {
			cl.site, cl.record = classifyStack(r.Stack())
			seen[r.Stack0] = cl
		}
		h.total += b
		if cl.record {
			h.record += b
		} else {
			h.sites[cl.site] += b
		}
	}
	return h
}

// scaleHeapSample is runtime/pprof's: a site's sampled bytes over the
// probability that an allocation of its average size was sampled.
func scaleHeapSample(count, size, rate int64) float64 {
	if count == 0 || size == 0 {
		return 0
	}
	if rate <= 1 {
		return float64(size)
	}
	avg := float64(size) / float64(count)
	return float64(size) / (1 - math.Exp(-avg/float64(rate)))
}

// classifyStack names an allocation's site (the first caller outside the
// runtime and its internal packages (maps: the map's user), then its
// caller, without module paths) and tells whether
// recordFunc is on the stack.
func classifyStack(stack []uintptr) (site string, record bool) {
	frames := goruntime.CallersFrames(stack)
	var names []string
	for {
		f, more := frames.Next()
		if f.Function == recordFunc {
			record = true
		}
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "internal/") && len(names) < 2 {
			names = append(names, shortFunc(f.Function))
		}
		if !more {
			break
		}
	}
	if len(names) == 0 {
		return "runtime", record
	}
	return strings.Join(names, " ← "), record
}

func shortFunc(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	return fn
}

// writeHeapSummary prints the per-agent figures of one activation count
// from the heap sites before and after it: the total, the record's part
// and what is beyond it, then the sites beyond the record.
func writeHeapSummary(w io.Writer, k int, before, after heapSites, top int) {
	per := func(v float64) float64 { return v / float64(k) }
	total, record := per(after.total-before.total), per(after.record-before.record)
	fmt.Fprintf(w, "heap profile, %d active agents (inuse_space after − before, sampled every %d B):\n", k, goruntime.MemProfileRate)
	fmt.Fprintf(w, "  per active agent %.0f B; its record (agent.decodeRecord) %.0f B; beyond its record %.0f B\n", total, record, total-record)
	type site struct {
		name  string
		bytes float64
	}
	var sites []site
	for name, b := range after.sites {
		if d := per(b - before.sites[name]); math.Abs(d) >= 0.5 {
			sites = append(sites, site{name, d})
		}
	}
	for name, b := range before.sites {
		if _, ok := after.sites[name]; !ok && per(b) >= 0.5 {
			sites = append(sites, site{name, -per(b)})
		}
	}
	sort.Slice(sites, func(i, j int) bool { return math.Abs(sites[i].bytes) > math.Abs(sites[j].bytes) })
	fmt.Fprintf(w, "  beyond its record, by site (B per agent, largest %d):\n", top)
	for i, s := range sites {
		if i == top {
			break
		}
		fmt.Fprintf(w, "    %6.0f  %s\n", s.bytes, s.name)
	}
}
