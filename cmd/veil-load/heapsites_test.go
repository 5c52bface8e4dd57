package main

import (
	goruntime "runtime"
	"strings"
	"testing"
)

var kept [][]byte

//go:noinline
func allocHeapTestObjects(n int) {
	for i := 0; i < n; i++ {
		kept = append(kept, make([]byte, 512))
	}
}

// The in-process summary finds what a function allocated and still holds,
// by site, per agent.
func TestHeapSitesAttributeLiveBytesToTheirSite(t *testing.T) {
	old := goruntime.MemProfileRate
	goruntime.MemProfileRate = 1 // every allocation: exact figures
	defer func() { goruntime.MemProfileRate = old }()
	kept = make([][]byte, 0, 1000)
	before := readHeapSites()
	allocHeapTestObjects(1000)
	after := readHeapSites()
	var site string
	for name := range after.sites {
		if strings.Contains(name, "allocHeapTestObjects") {
			site = name
		}
	}
	if site == "" {
		t.Fatalf("no allocHeapTestObjects site in %d sites", len(after.sites))
	}
	if got := after.sites[site] - before.sites[site]; got != 1000*512 {
		t.Fatalf("site %s holds %.0f bytes more, want %d", site, got, 1000*512)
	}
	if d := after.total - before.total; d < 1000*512 {
		t.Fatalf("total grew %.0f bytes, want at least %d", d, 1000*512)
	}
	var sum strings.Builder
	writeHeapSummary(&sum, 1000, before, after, 5)
	if !strings.Contains(sum.String(), "512  "+site) {
		t.Fatalf("summary does not give the site 512 B per agent:\n%s", sum.String())
	}
	goruntime.KeepAlive(kept)
}
