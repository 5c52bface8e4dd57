package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"syscall"
	"time"
)

// ErrForbiddenAddress: the target resolves to an address webhooks may not
// reach (loopback, private, link-local, cloud metadata, ...).
var ErrForbiddenAddress = errors.New("webhook target address is not allowed")

// blocked are the ranges a webhook may not reach unless private targets are
// allowed: everything that is not the public internet. Link-local covers
// the cloud metadata endpoints 169.254.169.254 and fd00:ec2::254 is in
// fc00::/7.
var blocked = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"fc00::/7",        // unique local (incl. AWS metadata fd00:ec2::254)
		"fe80::/10",       // link-local
		"ff00::/8",        // multicast
		"2001:db8::/32",   // documentation
		"100::/64",        // discard
		"64:ff9b:1::/48",  // local-use NAT64
		"::ffff:0:0/96",   // IPv4-mapped: checked through Unmap first
		"2001::/23",       // IETF protocol assignments (Teredo etc.)
		"fec0::/10",       // deprecated site-local
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Forbidden says whether ip is one a webhook may not reach, and why.
func Forbidden(ip netip.Addr) (bool, string) {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return true, "not an IP address"
	}
	// NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address that
	// the network translates to: judge that one.
	if ip.Is6() {
		b := ip.As16()
		if nat64.Contains(ip) {
			return Forbidden(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
		if sixToFour.Contains(ip) {
			return Forbidden(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		}
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return true, p.String()
		}
	}
	return false, ""
}

// control is the dialer's Control hook: it runs after DNS, on the address
// actually dialled, so a name that resolves (or re-resolves) to a private
// address is refused.
func control(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, address)
	}
	if bad, why := Forbidden(ip); bad {
		return fmt.Errorf("%w: %s is in %s (private, loopback, link-local or reserved)", ErrForbiddenAddress, ip, why)
	}
	return nil
}

// NewClient returns the HTTP client deliveries go through: no proxy from
// the environment (the proxy would do the dialling), redirects not
// followed (a 3xx is a failed attempt), and, unless allowPrivate, a dialer
// that refuses every non-public address after DNS.
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = control
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// CheckURL validates a webhook URL: absolute http or https with a host, no
// fragment, at most MaxURLLen. An IP-literal host in a refused range is
// refused now (unless allowPrivate); names are checked when dialled.
func CheckURL(raw string, allowPrivate bool) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("%w: url is required: give the https URL that should receive events", ErrInvalid)
	}
	if len(raw) > MaxURLLen {
		return "", fmt.Errorf("%w: url is longer than %d characters", ErrInvalid, MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("%w: url must be an absolute http or https URL such as https://example.com/veil-events", ErrInvalid)
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", fmt.Errorf("%w: url scheme %q is not allowed: use http or https", ErrInvalid, u.Scheme)
	}
	if u.Fragment != "" {
		return "", fmt.Errorf("%w: url must not have a #fragment", ErrInvalid)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("%w: url has no host", ErrInvalid)
	}
	if !allowPrivate {
		if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
			if bad, why := Forbidden(ip); bad {
				return "", fmt.Errorf("%w: %s is a private, loopback, link-local or reserved address (%s); webhooks go to public hosts only", ErrInvalid, ip, why)
			}
		} else if h := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			return "", fmt.Errorf("%w: %s is this machine; webhooks go to public hosts only", ErrInvalid, u.Hostname())
		}
	}
	u.Scheme = scheme
	return u.String(), nil
}

func sortByCreated(ws []Webhook) {
	sort.SliceStable(ws, func(i, j int) bool {
		if !ws[i].CreatedAt.Equal(ws[j].CreatedAt) {
			return ws[i].CreatedAt.Before(ws[j].CreatedAt)
		}
		return ws[i].ID < ws[j].ID
	})
}
