package secp256k1

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkBoundRatio measures, interleaved in rounds of 64 (so that load
// from other processes hits all series alike), on one core:
//   - bound: one ECDH scalar multiplication (the physical limit of a check),
//   - basemult: one fixed-base multiplication (the extra work of a tag hit),
//   - miss/hit: a one-key Scan, per announcement (includes decompressing
//     the ephemeral key, Keccak, and on a hit the one-time address),
//   - miss8: per (announcement, key) pair with 8 keys (decompression is
//     shared by the 8 keys: the batch scanner's steady state),
//   - check: ScanKey.Check of one announcement at a time (tag miss), the
//     call a caller makes outside the batch scanner, key parsed once,
//   - check-parse: the package function Check, which parses the keys on
//     every call (what ScanKey saves).
//
// It reports the medians and the share of the bound reached.
func BenchmarkBoundRatio(b *testing.B) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	me := randKeys(b)
	s1, _ := NewScanner([]ViewKeyEntry{{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend}})
	e8 := make([]ViewKeyEntry, 8)
	for i := range e8 {
		k := randKeys(b)
		e8[i] = ViewKeyEntry{ViewPriv: k.ViewPriv, SpendPub: k.Meta.Spend}
	}
	s8, _ := NewScanner(e8)
	key, err := NewScanKey(ViewKeyEntry{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend})
	if err != nil {
		b.Fatal(err)
	}
	const n = 64
	miss, hit := annPools(b, me, n)
	ephs := make([][64]byte, n)
	for i := range ephs {
		decompress(&miss[i].EphemeralPub, &ephs[i])
	}
	var bound, base, m1, h1, m8, c1, cp []float64
	var out [33]byte
	var xy [64]byte
	per := func(start time.Time, count int) float64 {
		return float64(time.Since(start).Nanoseconds()) / float64(count)
	}
	for b.Loop() {
		t := time.Now()
		for i := range ephs {
			ecdh(&ephs[i], &me.ViewPriv, &out)
		}
		bound = append(bound, per(t, n))
		t = time.Now()
		for range n {
			baseMult(&me.SpendPriv, &xy)
		}
		base = append(base, per(t, n))
		t = time.Now()
		s1.Scan(miss)
		m1 = append(m1, per(t, n))
		t = time.Now()
		s1.Scan(hit)
		h1 = append(h1, per(t, n))
		t = time.Now()
		s8.Scan(miss[:8])
		m8 = append(m8, per(t, 64))
		t = time.Now()
		for i := range miss {
			if ok, err := key.Check(miss[i]); ok || err != nil {
				b.Fatalf("ScanKey.Check = %v, %v", ok, err)
			}
		}
		c1 = append(c1, per(t, n))
		t = time.Now()
		for i := range miss {
			if ok, err := Check(me.ViewPriv, me.Meta.Spend, miss[i]); ok || err != nil {
				b.Fatalf("Check = %v, %v", ok, err)
			}
		}
		cp = append(cp, per(t, n))
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	B, G, M, H, M8, C := med(bound), med(base), med(m1), med(h1), med(m8), med(c1)
	CP := med(cp)
	b.ReportMetric(B, "bound-ns")
	b.ReportMetric(G, "basemult-ns")
	b.ReportMetric(M, "miss-ns/check")
	b.ReportMetric(H, "hit-ns/check")
	b.ReportMetric(M8, "miss8-ns/pair")
	b.ReportMetric(100*B/M, "miss-%bound")
	b.ReportMetric(100*B/M8, "miss8-%bound")
	b.ReportMetric(C, "check-ns")
	b.ReportMetric(100*B/C, "check-%bound")
	b.ReportMetric(CP, "check-parse-ns")
	b.ReportMetric(100*B/CP, "check-parse-%bound")
	b.ReportMetric(100*(B+G)/H, "hit-%(bound+basemult)")
	b.ReportMetric(100*B/H, "hit-%bound")
}
