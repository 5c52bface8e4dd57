package faultproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
)

// Fault is what an HTTP proxy does to the request it is armed for.
type Fault int

const (
	// AnswerLost forwards the request, lets the node act on it, and drops
	// the connection instead of its answer: the client sees the
	// connection end (EOF) with the node's state changed.
	AnswerLost Fault = iota + 1
	// RequestDropped drops the connection before the request reaches the
	// node: nothing changes there.
	RequestDropped
	// Hang holds the request, as a node that stopped answering does, until
	// Release: the client's connection is then dropped (it gave up
	// waiting) and only after that is the request forwarded, late, to the
	// node, which acts on it (a node that answered after the client's
	// time-out).
	Hang
)

// HTTP is a reverse proxy in front of one HTTP node (a JSON-RPC endpoint,
// Horizon) for the fault tests of payments: it forwards every request
// unchanged, except the first one that the armed fault's predicate
// selects, which it answers with the fault (once; later requests pass).
// Faults are explicit, never timed: a test arms one, waits on Hit for the
// request to arrive, and (for Hang) releases it.
type HTTP struct {
	srv *httptest.Server

	mu      sync.Mutex
	target  *url.URL
	match   func(r *http.Request, body []byte) bool
	fault   Fault
	hit     chan struct{}
	release chan struct{}
	done    chan struct{}
}

// NewHTTP starts a proxy to the node at target (its base URL).
func NewHTTP(target string) (*HTTP, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &HTTP{target: u}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p, nil
}

// URL is the proxy's base URL, to give the connector instead of the node's.
func (p *HTTP) URL() string { return p.srv.URL }

// SetTarget points the proxy at another node (one restarted elsewhere).
func (p *HTTP) SetTarget(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.target = u
	p.mu.Unlock()
	return nil
}

// Close stops the proxy.
func (p *HTTP) Close() { p.srv.Close() }

// Arm makes the next request that match selects (its body is read in
// full) meet fault f. It answers a channel closed when that request
// arrived, and one closed when the fault is over (the request forwarded,
// or dropped).
func (p *HTTP) Arm(f Fault, match func(r *http.Request, body []byte) bool) (hit, done <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.match = f, match
	p.hit, p.release, p.done = make(chan struct{}), make(chan struct{}), make(chan struct{})
	return p.hit, p.done
}

// Release ends a Hang: the client's connection drops, then the request
// goes to the node.
func (p *HTTP) Release() {
	p.mu.Lock()
	ch := p.release
	p.mu.Unlock()
	if ch != nil {
		close(ch)
	}
}

// BodyContains is a predicate for Arm: the request body holds s (a
// JSON-RPC method name, a form field).
func BodyContains(s string) func(*http.Request, []byte) bool {
	return func(_ *http.Request, body []byte) bool { return bytes.Contains(body, []byte(s)) }
}

func (p *HTTP) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	f, hit, release, done, target := Fault(0), p.hit, p.release, p.done, p.target
	if p.match != nil && p.match(r, body) {
		f, p.match = p.fault, nil
	}
	p.mu.Unlock()
	if f == 0 {
		p.forward(w, r, target, body)
		return
	}
	close(hit)
	defer close(done)
	switch f {
	case AnswerLost:
		p.forward(discard{}, r, target, body)
		drop(w)
	case RequestDropped:
		drop(w)
	case Hang:
		<-release
		drop(w)
		p.forward(discard{}, r, target, body)
	}
}

// forward sends the request to the node and copies its answer to w.
func (p *HTTP) forward(w http.ResponseWriter, r *http.Request, target *url.URL, body []byte) {
	u := *target
	u.Path = target.Path + r.URL.Path
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequest(r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The node is down (restarting): the client sees its connection
		// end, as it would dialling the node itself.
		drop(w)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// drop ends the client's connection without an answer.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// discard is a ResponseWriter that keeps nothing (the answer a fault loses).
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
