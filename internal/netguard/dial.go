package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Resolver answers a name's addresses (*net.Resolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects only to public addresses. It resolves a name itself,
// refuses the whole answer when any address in it is not public (a name
// that answers both a public and a private address must not get a second
// chance at the private one), and dials the addresses it checked, never
// the name, so nothing is resolved twice. A control hook judges the
// socket's address once more, so no path around the checks reaches a
// private address.
type Dialer struct {
	// AllowPrivate turns the checks off (tests and devnets, whose servers
	// listen on loopback).
	AllowPrivate bool
	// Timeout bounds one connection attempt; KeepAlive is the TCP
	// keep-alive period (net.Dialer's meaning for both).
	Timeout, KeepAlive time.Duration
	// Resolver answers names; nil is net.DefaultResolver.
	Resolver Resolver
}

// DialContext is http.Transport's DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	nd := &net.Dialer{Timeout: d.Timeout, KeepAlive: d.KeepAlive}
	if d.AllowPrivate {
		return nd.DialContext(ctx, network, address)
	}
	nd.Control = control
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := d.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := nd.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// resolve answers the checked addresses of host: a literal by itself
// (CheckHost's rules), a name by its DNS answer, all of it public.
func (d *Dialer) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if _, isIP, _ := Literal(host); isIP || isLocalName(host) {
		if err := CheckHost(host); err != nil {
			return nil, err
		}
		a, _, _ := Literal(host)
		return []netip.Addr{a}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	ipnet := "ip"
	switch network {
	case "tcp4", "udp4":
		ipnet = "ip4"
	case "tcp6", "udp6":
		ipnet = "ip6"
	}
	addrs, err := r.LookupNetIP(ctx, ipnet, strings.TrimSuffix(host, "."))
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	for _, a := range addrs {
		if why := classify(a); why != "" {
			if len(addrs) > 1 {
				why += fmt.Sprintf(" (one of its %d addresses: every one must be public, so none is dialled)", len(addrs))
			}
			return nil, &Error{Host: host, Addr: a, Why: why}
		}
	}
	return addrs, nil
}

// control judges the address a socket is about to connect to.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &Error{Host: address, Why: "not an IP address and port"}
	}
	return Check(ap.Addr())
}
