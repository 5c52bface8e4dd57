package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// fakeResolver answers from a map and counts its calls.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	calls   map[string]int
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int{}
	}
	r.calls[host]++
	var out []netip.Addr
	for _, s := range r.answers[host] {
		out = append(out, netip.MustParseAddr(s))
	}
	if out == nil {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// TestDialerRefuses: over real HTTP to a loopback server, every way of
// naming a non-public address is refused before a connection is made, a
// DNS answer that mixes public and private addresses is refused whole,
// and nothing reaches the server.
func TestDialerRefuses(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	res := &fakeResolver{answers: map[string][]string{
		"loop.test":     {"127.0.0.1"},
		"mixed.test":    {"8.8.8.8", "127.0.0.1"},
		"mixed6.test":   {"2606:4700:4700::1111", "::1"},
		"metadata.test": {"169.254.169.254"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"zoned.test":    {"fe80::1%lo"},
		"nat64.test":    {"64:ff9b::7f00:1"},
	}}
	d := &Dialer{Resolver: res}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext}}
	for _, host := range []string{
		"127.0.0.1", "127.0.0.1.", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "[::1]", "[::1%25lo]",
		"[::ffff:127.0.0.1]", "localhost", "localhost.", "loop.test", "loop.test.", "mixed.test", "mixed6.test",
		"metadata.test", "mapped.test", "zoned.test", "nat64.test",
	} {
		resp, err := client.Get("http://" + host + ":" + port + "/")
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: reached the loopback server (%d)", host, resp.StatusCode)
			continue
		}
		if !errors.Is(err, ErrNotPublic) {
			t.Errorf("%s: %v, want ErrNotPublic", host, err)
		}
	}
	mu.Lock()
	if hits != 0 {
		t.Errorf("the server got %d requests", hits)
	}
	mu.Unlock()

	// Allowed: the same server is reached.
	open := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&Dialer{AllowPrivate: true}).DialContext}}
	resp, err := open.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestDialerDialsTheCheckedAddress: a name is resolved once, and the
// connection goes to the address that was checked (its literal is in the
// dial error), never to the name.
func TestDialerDialsTheCheckedAddress(t *testing.T) {
	res := &fakeResolver{answers: map[string][]string{"public.test": {"192.88.98.1"}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no packet leaves this machine: the dial fails at once
	_, err := (&Dialer{Resolver: res}).DialContext(ctx, "tcp", "public.test:9")
	if err == nil || errors.Is(err, ErrNotPublic) || !strings.Contains(err.Error(), "192.88.98.1:9") {
		t.Fatalf("dial error %v: want a failed dial of 192.88.98.1:9", err)
	}
	if res.calls["public.test"] != 1 {
		t.Fatalf("resolved %d times", res.calls["public.test"])
	}
	if _, err := (&Dialer{Resolver: res}).DialContext(context.Background(), "tcp", "nowhere.test:9"); err == nil || errors.Is(err, ErrNotPublic) {
		t.Fatalf("unknown name: %v", err)
	}
}

// TestControl: the socket hook refuses what the resolver path refuses.
func TestControl(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"8.8.8.8:443", true},
		{"[2606:4700:4700::1111]:443", true},
		{"127.0.0.1:80", false},
		{"[::1%lo]:80", false},
		{"[fe80::1%1]:80", false},
		{"[::ffff:10.0.0.1]:80", false},
		{"nonsense", false},
	} {
		if err := control("tcp", tc.addr, nil); (err == nil) != tc.ok {
			t.Errorf("control(%s) = %v", tc.addr, err)
		}
	}
}
