package tools

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrPrivateAddress reports a fetch to an address that is not on the
// public internet (loopback, private, link-local, CGNAT, multicast,
// unspecified): the server's own network is not the agent's to browse.
var ErrPrivateAddress = errors.New("the address is not on the public internet")

// WebOptions configure NewWebClient.
type WebOptions struct {
	// AllowPrivate lets requests reach non-public addresses (tests and
	// devnets, whose servers listen on loopback).
	AllowPrivate bool
	// Timeout bounds one request, body included (default 30 s).
	Timeout time.Duration
}

// NewWebClient is fetch_paid's HTTP client when Env.HTTP is nil: it never
// follows a redirect
// (a payment header must not travel to a host the user did not name; the
// tool reports the 3xx), and unless AllowPrivate it refuses, at dial time
// (after DNS, so a name cannot point it inside), every address that is
// not public.
func NewWebClient(o WebOptions) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !o.AllowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
			}
			if !publicAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr())
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy: nil, DialContext: d.DialContext, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 20 * time.Second, MaxIdleConns: 16, IdleConnTimeout: 60 * time.Second,
	}
	return &http.Client{
		Transport: tr, Timeout: o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast() && !cgnat.Contains(a)
}

// withTimeout bounds ctx by d when it has no earlier deadline.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
