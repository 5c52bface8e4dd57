package secp256k1

import (
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	dcr "github.com/decred/dcrd/dcrec/secp256k1/v4"
	gethsecp "github.com/ethereum/go-ethereum/crypto/secp256k1"

	"github.com/veilhq/veil/chains/stealth"
)

func TestScannerMatchesCheck(t *testing.T) {
	keys := make([]Keys, 7)
	entries := make([]ViewKeyEntry, len(keys))
	for i := range keys {
		keys[i] = randKeys(t)
		entries[i] = ViewKeyEntry{ViewPriv: keys[i].ViewPriv, SpendPub: keys[i].Meta.Spend}
	}
	s, err := NewScanner(entries)
	if err != nil {
		t.Fatal(err)
	}
	var anns []Announcement
	var want []Match
	for i := range 60 {
		var a Announcement
		switch {
		case i%5 == 0: // for nobody we know
			a, _ = Generate(randKeys(t).Meta, rand.Reader)
		case i%11 == 0: // invalid ephemeral key
			a = Announcement{EphemeralPub: [33]byte{2, 1}}
		default:
			k := i % len(keys)
			a, _ = Generate(keys[k].Meta, rand.Reader)
			want = append(want, Match{Announcement: i, Key: k})
		}
		anns = append(anns, a)
	}
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		got := s.Scan(anns)
		runtime.GOMAXPROCS(prev)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("GOMAXPROCS=%d: got %v\nwant %v", procs, got, want)
		}
	}
	// brute force with Check agrees
	for ai, a := range anns {
		for ki, k := range keys {
			ok, _ := Check(k.ViewPriv, k.Meta.Spend, a)
			found := false
			for _, m := range want {
				found = found || m == Match{Announcement: ai, Key: ki}
			}
			if ok != found {
				t.Fatalf("Check(%d,%d) = %v", ai, ki, ok)
			}
		}
	}
	if _, err := NewScanner([]ViewKeyEntry{{}}); err == nil {
		t.Fatal("zero key accepted")
	}
	if m := s.Scan(nil); m != nil {
		t.Fatal("matches in nothing")
	}
}

// TestScanNoAllocPerAnnouncement: the allocations of a Scan do not grow
// with the number of announcements (they are per call and per match only),
// and one check allocates nothing.
func TestScanNoAllocPerAnnouncement(t *testing.T) {
	me := randKeys(t)
	s, _ := NewScanner([]ViewKeyEntry{{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend}})
	other := randKeys(t)
	var many []Announcement
	for range 64 {
		a, _ := Generate(other.Meta, rand.Reader)
		many = append(many, a)
	}
	few := testing.AllocsPerRun(5, func() { s.Scan(many[:1]) })
	all := testing.AllocsPerRun(5, func() { s.Scan(many) })
	t.Logf("allocs per Scan: 1 announcement %.0f, 64 announcements %.0f", few, all)
	if all > few+float64(runtime.GOMAXPROCS(0))*3 {
		t.Fatalf("allocations grow with announcements: %v vs %v", few, all)
	}
	c := newChecker()
	hit, _ := Generate(me.Meta, rand.Reader)
	var eph [64]byte
	decompress(&many[0].EphemeralPub, &eph)
	key, err := NewScanKey(ViewKeyEntry{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend})
	if err != nil {
		t.Fatal(err)
	}
	var heph [64]byte
	decompress(&hit.EphemeralPub, &heph)
	if n := testing.AllocsPerRun(20, func() { c.check(&eph, key, &many[0]) }); n != 0 {
		t.Fatalf("check (miss) allocates %v", n)
	}
	if n := testing.AllocsPerRun(20, func() {
		if ok, _ := c.check(&heph, key, &hit); !ok {
			panic("no hit")
		}
	}); n != 0 {
		t.Fatalf("check (hit) allocates %v", n)
	}
	// ScanKey.Check takes its checker from a sync.Pool, which the race
	// detector empties at random (a quarter of the puts): only a build
	// without it can tell (a fresh-clone CI run saw "allocates 1").
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(20, func() {
		if ok, err := key.Check(hit); !ok || err != nil {
			panic("no hit")
		}
	}); n != 0 {
		t.Fatalf("ScanKey.Check allocates %v", n)
	}
}

// TestScanKeyRejectsBadKeys: a bad key fails when parsed, with the kind
// callers test for, and the batch scanner says which entry.
func TestScanKeyRejectsBadKeys(t *testing.T) {
	me := randKeys(t)
	n := [32]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
		0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41}
	notOnCurve := me.Meta.Spend
	notOnCurve[0] = 4
	for _, tc := range []struct {
		name string
		e    ViewKeyEntry
		want error
	}{
		{"zero view key", ViewKeyEntry{SpendPub: me.Meta.Spend}, stealth.ErrZeroScalar},
		{"view key = n", ViewKeyEntry{ViewPriv: n, SpendPub: me.Meta.Spend}, stealth.ErrZeroScalar},
		{"zero spend key", ViewKeyEntry{ViewPriv: me.ViewPriv}, stealth.ErrInvalidPoint},
		{"spend key with a bad prefix", ViewKeyEntry{ViewPriv: me.ViewPriv, SpendPub: notOnCurve}, stealth.ErrInvalidPoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if k, err := NewScanKey(tc.e); !errors.Is(err, tc.want) || k != nil {
				t.Errorf("NewScanKey = %v, %v; want %v", k, err, tc.want)
			}
			good := ViewKeyEntry{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend}
			_, err := NewScanner([]ViewKeyEntry{good, tc.e})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "key 1:") {
				t.Errorf("NewScanner = %v; want %v naming key 1", err, tc.want)
			}
		})
	}
}

// annPools returns announcements that miss me's view tag and that pay me.
func annPools(b testing.TB, me Keys, n int) (miss, hit []Announcement) {
	other := randKeys(b)
	c := newChecker()
	for len(miss) < n {
		a, _ := Generate(other.Meta, rand.Reader)
		var eph [64]byte
		decompress(&a.EphemeralPub, &eph)
		c.sharedHash(&eph, &me.ViewPriv)
		if c.sh[0] != a.ViewTag {
			miss = append(miss, a)
		}
	}
	for len(hit) < n {
		a, _ := Generate(me.Meta, rand.Reader)
		hit = append(hit, a)
	}
	return
}

// BenchmarkBound is the cost of the one variable-base scalar multiplication
// every check performs (libsecp256k1's constant-time ecmult_const, affine in
// and out, through our cgo call), next to the alternatives measured.
func BenchmarkBound(b *testing.B) {
	k := randKeys(b)
	var xy [64]byte
	decompress(&k.Meta.View, &xy)
	b.Run("ecdh-"+backendShort(), func(b *testing.B) {
		var out [33]byte
		for b.Loop() {
			ecdh(&xy, &k.SpendPriv, &out)
		}
	})
	b.Run("decred-ScalarMultNonConst+ToAffine", func(b *testing.B) {
		var out [33]byte
		for b.Loop() {
			pgECDH(&xy, &k.SpendPriv, &out)
		}
	})
	b.Run("geth-cgo-S256.ScalarMult", func(b *testing.B) {
		pub, _ := dcr.ParsePubKey(k.Meta.View[:])
		x, y := pub.X(), pub.Y()
		curve := gethsecp.S256()
		b.ReportAllocs()
		for b.Loop() {
			curve.ScalarMult(x, y, k.SpendPriv[:])
		}
	})
	b.Run("basemult-"+backendShort(), func(b *testing.B) {
		for b.Loop() {
			baseMult(&k.SpendPriv, &xy)
		}
	})
	b.Run("decompress-"+backendShort(), func(b *testing.B) {
		for b.Loop() {
			decompress(&k.Meta.View, &xy)
		}
	})
}

func backendShort() string {
	if backendName[0] == 'l' {
		return "libsecp256k1"
	}
	return "decred"
}

// BenchmarkCheck measures announcements checked per second on one core
// (GOMAXPROCS=1, one key): a Scan of 256 announcements per op.
func BenchmarkCheck(b *testing.B) {
	me := randKeys(b)
	s, _ := NewScanner([]ViewKeyEntry{{ViewPriv: me.ViewPriv, SpendPub: me.Meta.Spend}})
	miss, hit := annPools(b, me, 256)
	for _, tc := range []struct {
		name string
		anns []Announcement
		want int
	}{{"tag-miss", miss, 0}, {"tag-hit", hit, 256}} {
		b.Run(tc.name, func(b *testing.B) {
			prev := runtime.GOMAXPROCS(1)
			defer runtime.GOMAXPROCS(prev)
			b.ReportAllocs()
			for b.Loop() {
				if m := s.Scan(tc.anns); len(m) != tc.want {
					b.Fatalf("%d matches", len(m))
				}
			}
			perCheck := b.Elapsed().Seconds() / float64(b.N*len(tc.anns))
			b.ReportMetric(perCheck*1e9, "ns/check")
			b.ReportMetric(1/perCheck, "checks/s")
		})
	}
}

// BenchmarkScan: the batch scanner with every core: 128 announcements
// (one in 16 for one of the agents) against 32 agents' keys.
func BenchmarkScan(b *testing.B) {
	var entries []ViewKeyEntry
	var keys []Keys
	for range 32 {
		k := randKeys(b)
		keys = append(keys, k)
		entries = append(entries, ViewKeyEntry{ViewPriv: k.ViewPriv, SpendPub: k.Meta.Spend})
	}
	s, _ := NewScanner(entries)
	other := randKeys(b)
	var anns []Announcement
	for i := range 128 {
		meta := other.Meta
		if i%16 == 0 {
			meta = keys[i%32].Meta
		}
		a, _ := Generate(meta, rand.Reader)
		anns = append(anns, a)
	}
	b.ReportAllocs()
	for b.Loop() {
		if m := s.Scan(anns); len(m) != 8 {
			b.Fatalf("%d matches", len(m))
		}
	}
	pairs := float64(b.N * len(anns) * len(entries))
	b.ReportMetric(pairs/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
}
