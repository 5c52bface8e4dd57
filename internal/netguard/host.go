package netguard

import (
	"net/netip"
	"strconv"
	"strings"
)

// Literal parses host (a URL's Hostname(), without brackets) as an IP
// address in every spelling some resolver accepts: dotted decimal, an
// IPv6 literal (with or without a zone), and the inet_aton forms that
// browsers and C libraries take (2130706433, 0177.0.0.1, 0x7f.1, 127.1),
// with one trailing dot allowed. isIP is false for a name. canonical is
// true only for plain dotted decimal (a.b.c.d, no leading zeros) and IPv6
// without a zone. A host whose last label is a number but that is no
// valid address (256.1.1.1, 08.1.1.1) is isIP with an invalid address:
// no name ends in a number, and such a host means different things to
// different parsers.
func Literal(host string) (a netip.Addr, isIP, canonical bool) {
	if strings.Contains(host, ":") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, true, false
		}
		return a, true, a.Zone() == ""
	}
	h := strings.TrimSuffix(host, ".")
	parts := strings.Split(h, ".")
	if h == "" || !isNumber(parts[len(parts)-1]) {
		return netip.Addr{}, false, false
	}
	a, ok := inetAton(parts)
	if !ok {
		return netip.Addr{}, true, false
	}
	_, err := netip.ParseAddr(host)
	return a, true, err == nil
}

// isNumber is the WHATWG URL standard's "ends in a number" test for a
// label: all decimal digits, or 0x followed by hex digits.
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		return strings.Trim(s[2:], "0123456789abcdefABCDEF") == ""
	}
	return strings.Trim(s, "0123456789") == ""
}

// inetAton is the WHATWG IPv4 parser (as inet_aton): up to four parts,
// each decimal, octal (leading 0) or hex (0x); the last part fills the
// remaining bytes.
func inetAton(parts []string) (netip.Addr, bool) {
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var n [4]uint64
	for i, p := range parts {
		base, digits := 10, p
		switch {
		case strings.HasPrefix(p, "0x") || strings.HasPrefix(p, "0X"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 64)
		if p == "" || err != nil {
			return netip.Addr{}, false
		}
		n[i] = v
	}
	last := len(parts) - 1
	var v uint64
	for i := 0; i < last; i++ {
		if n[i] > 255 {
			return netip.Addr{}, false
		}
		v |= n[i] << (8 * (3 - i))
	}
	if n[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= n[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// isLocalName says whether name (trailing dot removed) is one RFC 6761
// reserves for this machine.
func isLocalName(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// CheckHost judges the host of a URL before anything is sent (a webhook
// at creation, a link before it is fetched). An IP literal is judged now:
// a zone or an unusual IPv4 spelling is refused whatever it names (it
// would be read differently by different parsers); a name reserved for
// this machine (localhost, *.localhost) is refused. Any other name is
// left to Dialer, which judges its DNS answer at dial time.
func CheckHost(host string) error {
	if host == "" {
		return &Error{Host: host, Why: "empty: the URL has no host"}
	}
	a, isIP, canonical := Literal(host)
	switch {
	case !isIP:
		if isLocalName(host) {
			return &Error{Host: host, Why: "a name for this machine"}
		}
		return nil
	case !a.IsValid():
		return &Error{Host: host, Why: "not a valid IP address (a host that ends in a number must be one)"}
	case !canonical && a.Zone() == "":
		why := "an IPv4 address in an unusual spelling (decimal, octal or hex): write it as " + a.String()
		if w := classify(a); w != "" {
			why = w + ", in an unusual spelling"
		}
		return &Error{Host: host, Addr: a, Why: why}
	}
	return Check(a)
}
