package webhook

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/veilhq/veil/internal/netguard"
)

// ErrForbiddenAddress: the target is not on the public internet
// (loopback, private, link-local, cloud metadata, ...). It is
// internal/netguard's, the one classifier of every outbound connection
// made on a user's behalf.
var ErrForbiddenAddress = netguard.ErrNotPublic

// NewClient returns the HTTP client deliveries go through: no proxy from
// the environment (the proxy would do the dialling), redirects not
// followed (a 3xx is a failed attempt), and, unless allowPrivate,
// netguard's dialer: a name's whole DNS answer must be public, and the
// checked addresses are dialled, not the name again.
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return newClient(&netguard.Dialer{AllowPrivate: allowPrivate, Timeout: timeout, KeepAlive: 30 * time.Second}, timeout)
}

func newClient(d *netguard.Dialer, timeout time.Duration) *http.Client {
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
// fragment, at most MaxURLLen. Unless allowPrivate, an IP-literal host
// that is not public (in any spelling, zoned or not) and a name for this
// machine are refused now (netguard.CheckHost); other names are checked
// when dialled.
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
		// The same rules as at dial time (netguard.Dialer): a literal in
		// any spelling, a zone, a name for this machine are judged now.
		if err := netguard.CheckHost(u.Hostname()); err != nil {
			return "", fmt.Errorf("%w: %v; webhooks go to public hosts only", ErrInvalid, err)
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
