package tools

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"

	"github.com/veilhq/veil/internal/netguard"
)

// ErrPrivateAddress reports a fetch to an address that is not on the
// public internet (loopback, private, link-local, CGNAT, multicast,
// unspecified, ...): the server's own network is not the agent's to browse.
// It is internal/netguard's, the one classifier of every outbound
// connection made on a user's behalf.
var ErrPrivateAddress = netguard.ErrNotPublic

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
// unless AllowPrivate it dials through netguard.Dialer: a literal host in
// any spelling is judged, a name's whole DNS answer must be public, and
// the checked addresses are dialled, not the name again.
func NewWebClient(o WebOptions) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	d := &netguard.Dialer{AllowPrivate: o.AllowPrivate, Timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy: nil, DialContext: d.DialContext, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 20 * time.Second, MaxIdleConns: 16, IdleConnTimeout: 60 * time.Second,
	}
	return &http.Client{
		Transport: tr, Timeout: o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
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
