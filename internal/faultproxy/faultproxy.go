// Package faultproxy is a TCP proxy for fault tests: it listens on an
// address it binds itself (so a test never reuses a port it let go of),
// forwards every connection to a target that can change (a member that
// restarted elsewhere), and can cut traffic the way a network partition
// does: the bytes of the connections it cuts stop flowing in both
// directions (nothing is refused or reset; peers only see silence until
// their own timeouts), and flow again, buffered data first, when the cut
// heals. Cuts select connections by the client's source IP, so processes
// that dial from distinct loopback addresses (127.0.0.11, .12, ...) can be
// partitioned from some peers and not others.
//
// HTTP (http.go) is the request-level counterpart, between a chain
// connector and its node: it loses the node's answer to one chosen
// request, drops the request, or holds it until released.
package faultproxy

import (
	"net"
	"sync"
)

// Proxy is one listening address and its forwarding rules.
type Proxy struct {
	ln net.Listener

	mu     sync.Mutex
	target string
	cut    func(src net.IP) bool // nil: nothing cut
	healed chan struct{}         // closed and replaced when the cut changes
	conns  map[net.Conn]struct{}
	closed bool
}

// Listen starts a proxy on addr (host:0 picks a free port, kept until
// Close). Connections are refused (closed) until SetTarget.
func Listen(addr string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, healed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is the proxy's own address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetTarget sets where new connections go. Connections already forwarded
// keep their target.
func (p *Proxy) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// Cut stops the traffic of every connection (open or new) whose client
// source IP drop selects; nil heals. A new Cut replaces the previous one.
func (p *Proxy) Cut(drop func(src net.IP) bool) {
	p.mu.Lock()
	p.cut = drop
	close(p.healed)
	p.healed = make(chan struct{})
	p.mu.Unlock()
}

// CutAll cuts every connection.
func (p *Proxy) CutAll() { p.Cut(func(net.IP) bool { return true }) }

// Heal lets all traffic flow again.
func (p *Proxy) Heal() { p.Cut(nil) }

// Reset closes every connection open now, both sides, as a peer process
// that dies does, and goes on accepting new ones.
func (p *Proxy) Reset() {
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	return p.ln.Close()
}

// wait blocks while traffic from src is cut; false when the proxy closed.
func (p *Proxy) wait(src net.IP) bool {
	for {
		p.mu.Lock()
		cut, healed, closed := p.cut, p.healed, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		if cut == nil || !cut(src) {
			return true
		}
		<-healed
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *Proxy) handle(client net.Conn) {
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	var src net.IP
	if a, ok := client.RemoteAddr().(*net.TCPAddr); ok {
		src = a.IP
	}
	// A connection opened during a cut waits for the heal, as a SYN
	// retransmitted through a partition does.
	if !p.wait(src) {
		return
	}
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	if target == "" {
		return
	}
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, client, src); done <- struct{}{} }()
	go func() { p.pipe(client, server, src); done <- struct{}{} }()
	<-done // either side closed: close both
}

// pipe copies from→to, holding each chunk while the connection is cut.
func (p *Proxy) pipe(to, from net.Conn, src net.IP) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			if !p.wait(src) {
				return
			}
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: the caller closes both
		}
	}
}
