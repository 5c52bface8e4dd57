package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// NewWebClient is the tools' HTTP client when Env.HTTP is nil
// (webClient): it never follows a redirect (a payment header must not
// travel to a host the user did not name; the tool reports the 3xx), and
// unless AllowPrivate it refuses, at dial time (after DNS, so a name
// cannot point it inside), every address that is not public.
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

// fetchTimeout bounds one request a tool sends to another server, its
// answer included.
const fetchTimeout = 15 * time.Second

// webClient is the HTTP client of a tool that talks to another server:
// Env.HTTP, or a NewWebClient (no redirect: the link's server answers for
// itself or not at all; public addresses only) bounded by fetchTimeout.
func (env *Env) webClient() *http.Client {
	if env.HTTP != nil {
		return env.HTTP
	}
	return NewWebClient(WebOptions{Timeout: fetchTimeout})
}

// webRequest is one request a tool sends to another server (pay_invoice's
// payment link and claim, fetch_paid's URL).
type webRequest struct {
	method, url string
	header      map[string]string
	body        []byte // nil: none
	// limit caps the bytes of the answer's body that are read.
	limit int
}

// webAnswer is the answer to a webRequest.
type webAnswer struct {
	status int
	header http.Header
	// body is at most the request's limit; truncated says the server sent
	// more.
	body      []byte
	truncated bool
}

// send sends r with client within fetchTimeout (or ctx's earlier
// deadline) and reads the answer. On failure, answered tells the two
// failures apart for the caller's words: the server did not answer (or
// the request could not be made), or its answer broke off.
func (r webRequest) send(ctx context.Context, client *http.Client) (ans webAnswer, answered bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return webAnswer{}, false, err
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return webAnswer{}, false, err
	}
	defer resp.Body.Close()
	ans = webAnswer{status: resp.StatusCode, header: resp.Header}
	if ans.body, err = io.ReadAll(io.LimitReader(resp.Body, int64(r.limit)+1)); err != nil {
		return webAnswer{}, true, err
	}
	if len(ans.body) > r.limit {
		ans.body, ans.truncated = ans.body[:r.limit], true
	}
	return ans, true, nil
}
