// Package netguard is the one address classifier for every outbound
// connection the server makes on a user's behalf (webhook deliveries,
// pay_invoice's payment links and claims, fetch_paid): it says whether an
// address is on the public internet, parses the host of a URL the way the
// classifier needs it (odd IPv4 spellings, zones, trailing dots), and dials
// only addresses it has checked (docs/webhooks.md, "Which addresses").
//
// Decision: an address is public only when it is outside every range of
// IANA's IPv4 and IPv6 special-purpose registries and the multicast
// blocks, and an IPv6 address also lies in 2000::/3, the only block IANA
// allocates for global unicast. Addresses that carry an IPv4 address a
// network translates to (IPv4-mapped, NAT64's well-known prefix, 6to4) are
// judged by that IPv4 address; IPv4-compatible (::a.b.c.d, deprecated),
// Teredo and local-use NAT64 are refused whole. A zoned address (fe80::1%lo)
// names an interface of this machine and is never public.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrNotPublic: the address (or a name's answer) is not on the public
// internet. Errors of this package wrap it.
var ErrNotPublic = errors.New("the address is not on the public internet")

// Error says which address was refused and why.
type Error struct {
	// Addr is the address judged (for an embedded IPv4 address, the IPv6
	// address that carries it).
	Addr netip.Addr
	// Host is the name or spelling it came from, if any.
	Host string
	// Why names the range or the rule (e.g. "loopback 127.0.0.0/8").
	Why string
}

func (e *Error) Error() string {
	what := e.Addr.String()
	if !e.Addr.IsValid() {
		what = fmt.Sprintf("%q", e.Host)
	} else if e.Host != "" && e.Host != what {
		what = fmt.Sprintf("%s (%s)", e.Host, what)
	}
	return fmt.Sprintf("%v: %s is %s", ErrNotPublic, what, e.Why)
}

func (e *Error) Unwrap() error { return ErrNotPublic }

// special is a range that is not public, with its name for messages.
type special struct {
	p    netip.Prefix
	name string
}

func mk(rows ...string) []special {
	out := make([]special, 0, len(rows)/2)
	for i := 0; i < len(rows); i += 2 {
		out = append(out, special{netip.MustParsePrefix(rows[i]), rows[i+1]})
	}
	return out
}

// v4 is IANA's IPv4 special-purpose registry (RFC 6890 and later) plus
// multicast, most specific first so a message names the narrowest range.
var v4 = mk(
	"255.255.255.255/32", "the limited broadcast address",
	"0.0.0.0/32", "the unspecified address",
	"192.0.0.0/29", "an IPv4 service continuity prefix",
	"192.0.0.8/32", "an IPv4 dummy address",
	"192.0.0.9/32", "a port control protocol anycast address",
	"192.0.0.10/32", "a TURN anycast address",
	"192.0.0.170/31", "a NAT64/DNS64 discovery address",
	"0.0.0.0/8", `"this network" 0.0.0.0/8`,
	"10.0.0.0/8", "private (10.0.0.0/8)",
	"100.64.0.0/10", "carrier-grade NAT (100.64.0.0/10)",
	"127.0.0.0/8", "loopback (127.0.0.0/8)",
	"169.254.0.0/16", "link-local (169.254.0.0/16, cloud metadata)",
	"172.16.0.0/12", "private (172.16.0.0/12)",
	"192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)",
	"192.0.2.0/24", "documentation (192.0.2.0/24)",
	"192.31.196.0/24", "AS112 (192.31.196.0/24)",
	"192.52.193.0/24", "AMT (192.52.193.0/24)",
	"192.88.99.0/24", "the deprecated 6to4 relay anycast (192.88.99.0/24)",
	"192.168.0.0/16", "private (192.168.0.0/16)",
	"192.175.48.0/24", "AS112 direct delegation (192.175.48.0/24)",
	"198.18.0.0/15", "benchmarking (198.18.0.0/15)",
	"198.51.100.0/24", "documentation (198.51.100.0/24)",
	"203.0.113.0/24", "documentation (203.0.113.0/24)",
	"224.0.0.0/4", "multicast (224.0.0.0/4)",
	"240.0.0.0/4", "reserved (240.0.0.0/4)",
)

// v6 is IANA's IPv6 special-purpose registry plus multicast and the
// blocks outside 2000::/3 this package names (the rest of what lies
// outside 2000::/3 is "not global unicast"). IPv4-mapped, NAT64's
// well-known prefix and 6to4 are handled before this list.
var v6 = mk(
	"::/128", "the unspecified address",
	"::1/128", "loopback (::1)",
	"::/96", "IPv4-compatible (::/96, deprecated)",
	"64:ff9b:1::/48", "local-use NAT64 (64:ff9b:1::/48)",
	"100::/64", "discard-only (100::/64)",
	"100:0:0:1::/64", "a dummy prefix (100:0:0:1::/64)",
	"2001::/32", "Teredo (2001::/32)",
	"2001::/23", "an IETF protocol assignment (2001::/23)",
	"2001:db8::/32", "documentation (2001:db8::/32)",
	"2620:4f:8000::/48", "AS112 direct delegation (2620:4f:8000::/48)",
	"3fff::/20", "documentation (3fff::/20)",
	"5f00::/16", "segment routing (5f00::/16)",
	"fc00::/7", "unique local (fc00::/7, e.g. the AWS metadata fd00:ec2::254)",
	"fe80::/10", "link-local (fe80::/10)",
	"fec0::/10", "site-local (fec0::/10, deprecated)",
	"ff00::/8", "multicast (ff00::/8)",
)

var (
	mapped      = netip.MustParsePrefix("::ffff:0:0/96")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
	globalAlloc = netip.MustParsePrefix("2000::/3")
)

// Check answers nil when a is on the public internet, and an *Error
// (wrapping ErrNotPublic) naming the range otherwise.
func Check(a netip.Addr) error {
	if why := classify(a); why != "" {
		return &Error{Addr: a, Why: why}
	}
	return nil
}

// Public says whether a is on the public internet (Check is nil).
func Public(a netip.Addr) bool { return classify(a) == "" }

// classify is "" for a public address, else why it is not.
func classify(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "not an IP address"
	case a.Zone() != "":
		// netip.Prefix.Contains is false for every zoned address, so a
		// zone must be judged before any range: it names an interface
		// of this machine, which no outside service needs.
		return fmt.Sprintf("scoped to the interface %q of this machine", a.Zone())
	case a.Is4():
		return in(v4, a)
	}
	b := a.As16()
	embedded := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case mapped.Contains(a):
		return via("IPv4-mapped", embedded)
	case nat64.Contains(a):
		return via("NAT64", embedded)
	case sixToFour.Contains(a):
		return via("6to4", netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	if why := in(v6, a); why != "" {
		return why
	}
	if !globalAlloc.Contains(a) {
		return "outside 2000::/3, the only IPv6 block allocated for global unicast"
	}
	return ""
}

func in(ranges []special, a netip.Addr) string {
	for _, s := range ranges {
		if s.p.Contains(a) {
			return s.name
		}
	}
	return ""
}

// via judges an IPv4 address carried inside an IPv6 one.
func via(how string, inner netip.Addr) string {
	if why := in(v4, inner); why != "" {
		return fmt.Sprintf("%s %s, which is %s", how, inner, why)
	}
	return ""
}
