package netguard

import (
	"bufio"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// TestCheck: every class of address the classifier must refuse, with a
// word its message must contain, and public addresses it must let through.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		want string // "" public; else a word of the reason
	}{
		{"127.0.0.1", "loopback"},
		{"127.9.9.9", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"169.254.169.254", "link-local"}, // AWS, GCP, Azure metadata
		{"100.64.0.1", "carrier-grade"},
		{"100.100.100.200", "carrier-grade"}, // Alibaba metadata
		{"100.127.255.255", "carrier-grade"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"255.255.255.255", "broadcast"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"192.0.2.1", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"192.0.0.170", "NAT64/DNS64"},
		{"192.88.99.1", "6to4 relay"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fe80::1", "link-local"},
		{"fd00:ec2::254", "unique local"}, // AWS IPv6 metadata
		{"fc00::1", "unique local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff0e::1", "multicast"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"100::1", "discard"},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"::ffff:169.254.169.254", "IPv4-mapped"},
		{"::ffff:0.0.0.0", "IPv4-mapped"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::8.8.8.8", "IPv4-compatible"},
		{"64:ff9b::a9fe:a9fe", "NAT64"}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", "NAT64"},
		{"64:ff9b:1::808:808", "local-use NAT64"},
		{"2002:7f00:1::", "6to4"},     // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", "6to4"}, // 6to4 of the metadata address
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2001:2::1", "IETF protocol"},
		{"5f00::1", "segment routing"},
		{"4000::1", "outside 2000::/3"},
		{"::1%lo", "interface"},
		{"fe80::1%lo", "interface"},
		{"fd00:ec2::254%lo", "interface"},
		{"2606:4700:4700::1111%eth0", "interface"}, // a zone on a public address too
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"198.20.0.1", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:82a::200e", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", ""},  // 6to4 of 8.8.8.8
	} {
		a := netip.MustParseAddr(tc.ip)
		err := Check(a)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%s) = %v, want public", tc.ip, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrNotPublic) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Check(%s) = %v, want an ErrNotPublic naming %q", tc.ip, err, tc.want)
		}
		if Public(a) != (tc.want == "") {
			t.Errorf("Public(%s) = %v", tc.ip, Public(a))
		}
	}
	if Check(netip.Addr{}) == nil {
		t.Error("the zero Addr is public")
	}
}

// TestCheckHost: the host of a URL in every spelling that reaches an
// address, judged before anything is sent.
func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		want string // "" allowed; else a word of the reason
	}{
		{"example.com", ""},
		{"example.com.", ""},
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.0.0.1.", "loopback"}, // trailing dot
		{"2130706433", "loopback"}, // decimal 127.0.0.1
		{"0177.0.0.1", "loopback"}, // octal
		{"0x7f.1", "loopback"},     // hex, two parts
		{"0X7F000001", "loopback"},
		{"127.1", "loopback"},
		{"0x7f.0.0.1.", "loopback"},
		{"017700000001", "loopback"},
		{"0xa9.0xfe.0xa9.0xfe", "link-local"},
		{"0", "unspecified"},
		{"134744072", "unusual spelling"}, // 8.8.8.8 in decimal: public, still refused
		{"010.8.8.8", "unusual spelling"}, // 8.8.8.8 to inet_aton, 10.8.8.8 to others
		{"256.1.1.1", "not a valid IP"},
		{"08.1.1.1", "not a valid IP"},
		{"1.2.3.4.5", "not a valid IP"},
		{"example.123", "not a valid IP"},
		{"0x100000000", "not a valid IP"},
		{"localhost", "this machine"},
		{"LOCALHOST.", "this machine"},
		{"api.localhost", "this machine"},
		{"::1", "loopback"},
		{"::1%lo", "interface"},
		{"::1%1", "interface"},
		{"fe80::1%lo", "interface"},
		{"fd00:ec2::254%lo", "interface"},
		{"::ffff:7f00:1", "IPv4-mapped"},
		{"[::1]", "not a valid IP"},
		{"", "empty"},
	} {
		err := CheckHost(tc.host)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckHost(%q) = %v, want allowed", tc.host, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrNotPublic) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckHost(%q) = %v, want an ErrNotPublic naming %q", tc.host, err, tc.want)
		}
	}
}

func TestLiteral(t *testing.T) {
	for _, tc := range []struct {
		host            string
		want            string // "" no valid address
		isIP, canonical bool
	}{
		{"1.2.3.4", "1.2.3.4", true, true},
		{"1.2.3.4.", "1.2.3.4", true, false},
		{"16909060", "1.2.3.4", true, false},
		{"1.131844", "1.2.3.4", true, false},
		{"1.2.772", "1.2.3.4", true, false},
		{"0x1.0x2.0x3.0x4", "1.2.3.4", true, false},
		{"01.02.03.04", "1.2.3.4", true, false},
		{"0x", "0.0.0.0", true, false},
		{"4294967295", "255.255.255.255", true, false},
		{"4294967296", "", true, false},
		{"1.256.1.1", "", true, false},
		{"09", "", true, false},
		{"example.com", "", false, false},
		{"1.2.3.example", "", false, false},
		{"0xg", "", false, false},
		{"::1", "::1", true, true},
		{"fe80::1%eth0", "fe80::1%eth0", true, false},
		{"::zz", "", true, false},
	} {
		a, isIP, canonical := Literal(tc.host)
		got := ""
		if a.IsValid() {
			got = a.String()
		}
		if got != tc.want || isIP != tc.isIP || canonical != tc.canonical {
			t.Errorf("Literal(%q) = %q, %v, %v; want %q, %v, %v", tc.host, got, isIP, canonical, tc.want, tc.isIP, tc.canonical)
		}
	}
}

// reference is the independent judge: the CIDRs of testdata, matched
// with net.IPNet.Contains over 16-byte forms (not netip).
type reference struct{ nets []*net.IPNet }

func loadReference(t testing.TB) *reference {
	f, err := os.Open("testdata/special-purpose.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref := &reference{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		_, n, err := net.ParseCIDR(line)
		if err != nil {
			t.Fatalf("testdata: %q: %v", line, err)
		}
		ref.nets = append(ref.nets, n)
	}
	if len(ref.nets) < 40 {
		t.Fatalf("testdata holds %d ranges; the reference is not loaded", len(ref.nets))
	}
	return ref
}

var (
	_, refNAT64, _  = net.ParseCIDR("64:ff9b::/96")
	_, ref6to4, _   = net.ParseCIDR("2002::/16")
	_, refGlobal, _ = net.ParseCIDR("2000::/3")
)

// public judges a 16-byte address (an IPv4 one in its mapped form when
// is4).
func (r *reference) public(ip net.IP, is4 bool) bool {
	ip = ip.To16()
	if !is4 {
		switch {
		case ip.To4() != nil:
			// IPv4-mapped (::ffff:0:0/96): net.IPNet.Contains turns a
			// mapped address into IPv4 before matching, so it cannot
			// match this IPv6 prefix; To4 is the test.
			return r.public(net.IPv4(ip[12], ip[13], ip[14], ip[15]), true)
		case refNAT64.Contains(ip):
			return r.public(net.IPv4(ip[12], ip[13], ip[14], ip[15]), true)
		case ref6to4.Contains(ip):
			return r.public(net.IPv4(ip[2], ip[3], ip[4], ip[5]), true)
		case !refGlobal.Contains(ip):
			return false
		}
	}
	for _, n := range r.nets {
		if (len(n.IP) == net.IPv4len) == is4 && n.Contains(ip) {
			return false
		}
	}
	return true
}

// addrOf makes the netip form of b: 4 bytes an IPv4 address, 16 an IPv6
// one (a mapped IPv6 address stays IPv6).
func addrOf(b []byte) (netip.Addr, net.IP, bool) {
	if len(b) >= 16 {
		var a [16]byte
		copy(a[:], b)
		return netip.AddrFrom16(a), net.IP(a[:]), false
	}
	var a [4]byte
	copy(a[:], b)
	return netip.AddrFrom4(a), net.IPv4(a[0], a[1], a[2], a[3]), true
}

// TestReferenceBoundaries: the first and last address of every reference
// range, and the addresses just outside it, are judged alike by both.
func TestReferenceBoundaries(t *testing.T) {
	ref := loadReference(t)
	n := 0
	for _, nw := range ref.nets {
		first := append(net.IP(nil), nw.IP...)
		last := append(net.IP(nil), nw.IP...)
		for i := range last {
			last[i] |= ^nw.Mask[i]
		}
		for _, ip := range []net.IP{first, last, step(first, -1), step(last, 1)} {
			a, refIP, is4 := addrOf(ip)
			if got, want := Public(a), ref.public(refIP, is4); got != want {
				t.Errorf("%s (edge of %s): Public = %v, reference %v (%v)", a, nw, got, want, Check(a))
			}
			// Every IPv4 address in its mapped, NAT64 and 6to4 forms.
			if is4 {
				v := a.As4()
				for _, s := range [][16]byte{
					{10: 0xff, 11: 0xff, 12: v[0], 13: v[1], 14: v[2], 15: v[3]},
					{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: v[0], 13: v[1], 14: v[2], 15: v[3]},
					{0: 0x20, 1: 0x02, 2: v[0], 3: v[1], 4: v[2], 5: v[3], 15: 1},
				} {
					a6, ip6, _ := addrOf(s[:])
					if got, want := Public(a6), ref.public(ip6, false); got != want {
						t.Errorf("%s (carries %s): Public = %v, reference %v (%v)", a6, a, got, want, Check(a6))
					}
				}
			}
			n++
		}
	}
	if n < 160 {
		t.Fatalf("checked %d addresses", n)
	}
}

// step adds d (±1) to ip, wrapping.
func step(ip net.IP, d int) net.IP {
	out := append(net.IP(nil), ip...)
	for i := len(out) - 1; i >= 0; i-- {
		if d > 0 {
			out[i]++
			if out[i] != 0 {
				break
			}
		} else {
			out[i]--
			if out[i] != 0xff {
				break
			}
		}
	}
	return out
}

// FuzzMatchesReference: for any address the classifier agrees with the
// reference list.
func FuzzMatchesReference(f *testing.F) {
	ref := loadReference(f)
	for _, s := range []string{
		"127.0.0.1", "8.8.8.8", "100.63.255.255", "100.64.0.0", "::ffff:10.0.0.1", "64:ff9b::808:808",
		"2002:c0a8:101::1", "2001::1", "2001:4860::1", "fe80::1", "3fff:fff::1", "2620:4f:8000::1", "::8.8.8.8",
	} {
		a := netip.MustParseAddr(s)
		f.Add(a.AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 4 && len(b) != 16 {
			return
		}
		a, ip, is4 := addrOf(b)
		if got, want := Public(a), ref.public(ip, is4); got != want {
			t.Fatalf("%s: Public = %v, reference %v (%v)", a, got, want, Check(a))
		}
	})
}
