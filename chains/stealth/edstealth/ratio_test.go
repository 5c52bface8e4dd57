package edstealth

import (
	"crypto/ecdh"
	"runtime"
	"slices"
	"testing"
	"time"

	"filippo.io/edwards25519"
)

// BenchmarkBoundRatio: as in the secp256k1 package — interleaved rounds on
// one core of: the bound (one X25519), the fixed-base multiplication of a
// tag hit, and one-key scans per announcement (miss, hit).
func BenchmarkBoundRatio(b *testing.B) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	me := randKeys(b, Stellar)
	s1, _ := NewScanner([]ViewKeyEntry{{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend}})
	const n = 64
	miss, hit := annPools(b, me, n)
	sc, _ := edwards25519.NewScalar().SetCanonicalBytes(me.SpendScalar[:])
	P := new(edwards25519.Point)
	var bound, std, base, m1, h1 []float64
	xpriv, _ := ecdh.X25519().NewPrivateKey(me.ViewPriv[:])
	xpubs := make([]*ecdh.PublicKey, n)
	for i := range xpubs {
		xpubs[i], _ = ecdh.X25519().NewPublicKey(miss[i].EphemeralPub[:])
	}
	var out [32]byte
	per := func(start time.Time, count int) float64 {
		return float64(time.Since(start).Nanoseconds()) / float64(count)
	}
	for b.Loop() {
		t := time.Now()
		for i := range miss {
			x25519(&out, &me.ViewPriv, &miss[i].EphemeralPub)
		}
		bound = append(bound, per(t, n))
		t = time.Now()
		for i := range xpubs {
			xpriv.ECDH(xpubs[i])
		}
		std = append(std, per(t, n))
		t = time.Now()
		for range n {
			P.ScalarBaseMult(sc)
		}
		base = append(base, per(t, n))
		t = time.Now()
		s1.Scan(miss)
		m1 = append(m1, per(t, n))
		t = time.Now()
		s1.Scan(hit)
		h1 = append(h1, per(t, n))
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	B, G, M, H := med(bound), med(base), med(m1), med(h1)
	b.ReportMetric(B, "bound-ns")
	b.ReportMetric(med(std), "crypto-ecdh-ns")
	b.ReportMetric(G, "basemult-ns")
	b.ReportMetric(M, "miss-ns/check")
	b.ReportMetric(H, "hit-ns/check")
	b.ReportMetric(100*B/M, "miss-%bound")
	b.ReportMetric(100*(B+G)/H, "hit-%(bound+basemult)")
	b.ReportMetric(100*B/H, "hit-%bound")
}
