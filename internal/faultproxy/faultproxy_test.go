package faultproxy_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/veilhq/veil/internal/faultproxy"
)

// echo serves lines back on an address it bound itself.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A cut holds the bytes of the selected sources until it heals; other
// sources flow; a changed target takes new connections.
func TestCutHoldsTrafficUntilHealed(t *testing.T) {
	p, err := faultproxy.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetTarget(echo(t))
	dial := func(from string) (net.Conn, *bufio.Reader) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	roundTrip := func(c net.Conn, r *bufio.Reader, line string, wait time.Duration) (string, error) {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			return "", err
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		return r.ReadString('\n')
	}
	a, ar := dial("127.0.0.21")
	b, br := dial("127.0.0.22")
	if got, err := roundTrip(a, ar, "one", 30*time.Second); err != nil || got != "one\n" {
		t.Fatalf("before the cut: %q %v", got, err)
	}
	p.Cut(func(src net.IP) bool { return src.Equal(net.ParseIP("127.0.0.21")) })
	// Silence for the cut source (a short read deadline: the assertion is
	// that nothing arrives, so waiting longer cannot make it pass wrongly).
	if got, err := roundTrip(a, ar, "two", 300*time.Millisecond); err == nil {
		t.Fatalf("cut connection answered %q", got)
	}
	if got, err := roundTrip(b, br, "three", 30*time.Second); err != nil || got != "three\n" {
		t.Fatalf("uncut source: %q %v", got, err)
	}
	p.Heal()
	_ = a.SetReadDeadline(time.Now().Add(30 * time.Second))
	if got, err := ar.ReadString('\n'); err != nil || got != "two\n" {
		t.Fatalf("after healing, the held line: %q %v", got, err)
	}
	p.SetTarget(echo(t))
	c, cr := dial("127.0.0.23")
	if got, err := roundTrip(c, cr, "four", 30*time.Second); err != nil || got != "four\n" {
		t.Fatalf("new target: %q %v", got, err)
	}
}
