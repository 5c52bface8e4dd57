package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/chains"
)

// fakeExplorer knows one transaction, one address and blocks up to head.
type fakeExplorer struct {
	chain chains.ID
	tx    string
	head  uint64
}

func (f fakeExplorer) Tx(_ context.Context, hash string) (*Tx, error) {
	if !strings.HasPrefix(hash, "0x") {
		return nil, fmt.Errorf("%w: hash", ErrBadInput)
	}
	if hash != f.tx {
		return nil, fmt.Errorf("%w: tx", chains.ErrNotFound)
	}
	return &Tx{Chain: f.chain, Hash: hash, Status: "success"}, nil
}

func (f fakeExplorer) Address(_ context.Context, a string) (*Address, error) {
	return &Address{Chain: f.chain, Address: a}, nil
}

func (f fakeExplorer) Block(_ context.Context, n uint64) (*Block, error) {
	if n > f.head {
		return nil, fmt.Errorf("%w: block", chains.ErrNotFound)
	}
	return &Block{Chain: f.chain, Number: n, Head: f.head}, nil
}

func (f fakeExplorer) Head(context.Context) (uint64, error) { return f.head, nil }

// TestConsoleHTTP: the page and assets with the strict CSP, no template
// or directory served, and the explorer's reads: the chain parameter, a
// search across chains, 400 for input no chain reads, 404 for the unknown
// and for chains on real networks, all in the API's error format.
func TestConsoleHTTP(t *testing.T) {
	c := New(Options{Explorers: map[chains.ID]Explorer{
		chains.Ethereum: fakeExplorer{chain: chains.Ethereum, tx: "0xaa", head: 5},
		chains.Base:     fakeExplorer{chain: chains.Base, tx: "0xbb", head: 7},
	}})
	r := chi.NewRouter()
	c.Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()
	get := func(path string) (int, http.Header, string) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(b)
	}

	for _, p := range []string{"/console", "/console/", "/console/agents", "/console/agents/x", "/console/explorer/tx/0xaa"} {
		status, h, body := get(p)
		if status != 200 || h.Get("Content-Security-Policy") != CSP || !strings.Contains(body, `src="/console/assets/app.js"`) {
			t.Fatalf("%s = %d %q %.60s", p, status, h.Get("Content-Security-Policy"), body)
		}
		for _, bad := range []string{"http://", "https://", "<script>", "style="} {
			if strings.Contains(body, bad) {
				t.Fatalf("the page holds %q", bad)
			}
		}
	}
	for _, tc := range []struct {
		path, ctype string
		status      int
	}{
		{"/console/assets/app.js", "text/javascript; charset=utf-8", 200},
		{"/console/assets/pages/explorer.js", "text/javascript; charset=utf-8", 200},
		{"/console/assets/console.css", "text/css; charset=utf-8", 200},
		{"/console/assets/index.html", "application/json", 404},
		{"/console/assets/pages", "application/json", 404},
		{"/console/assets/nope.js", "application/json", 404},
		{"/console/assets/../console.go", "application/json", 404},
	} {
		status, h, _ := get(tc.path)
		if status != tc.status || h.Get("Content-Type") != tc.ctype {
			t.Fatalf("%s = %d %s", tc.path, status, h.Get("Content-Type"))
		}
	}

	for _, tc := range []struct {
		path   string
		status int
		want   string // in the body
	}{
		{"/console/api/explorer", 200, `"chain":"base","head":7`},
		{"/console/api/explorer/tx/0xaa?chain=ethereum", 200, `"chain":"ethereum"`},
		{"/console/api/explorer/tx/0xbb", 200, `"chain":"base"`}, // found on the chain that has it
		{"/console/api/explorer/tx/0xbb?chain=ethereum", 404, "not found"},
		{"/console/api/explorer/tx/nothex?chain=ethereum", 400, "hash"},
		{"/console/api/explorer/tx/0xaa?chain=stellar", 404, "not a devnet"},
		{"/console/api/explorer/tx/0xaa?chain=bitcoin", 400, "unknown chain"},
		{"/console/api/explorer/block/7?chain=base", 200, `"number":7`},
		{"/console/api/explorer/block/8", 404, "not found"},
		{"/console/api/explorer/block/-1", 400, "whole number"},
		{"/console/api/explorer/address/0x01?chain=base", 200, `"address":"0x01"`},
	} {
		status, _, body := get(tc.path)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Fatalf("%s = %d %s, want %d with %q", tc.path, status, body, tc.status, tc.want)
		}
		if status != 200 {
			var e struct {
				Message    string `json:"message"`
				StatusCode int    `json:"statusCode"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.StatusCode != status || e.Message == "" {
				t.Fatalf("%s: error body %s", tc.path, body)
			}
		}
	}

	// Without devnets the explorer says where to look instead.
	none := chi.NewRouter()
	New(Options{}).Routes(none)
	rec := httptest.NewRecorder()
	none.ServeHTTP(rec, httptest.NewRequest("GET", "/console/api/explorer/tx/0xaa", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "real networks") {
		t.Fatalf("no devnets: %d %s", rec.Code, rec.Body)
	}
}

// blockingExplorer answers Tx only once release is closed.
type blockingExplorer struct {
	fakeExplorer
	started chan struct{}
	release chan struct{}
}

func (b blockingExplorer) Tx(ctx context.Context, hash string) (*Tx, error) {
	b.started <- struct{}{}
	<-b.release
	return b.fakeExplorer.Tx(ctx, hash)
}

// TestExplorerReadsAreBounded: with MaxExplorerReads reads running, one
// more is refused with 429 and Retry-After (not queued), and is served
// again once they end.
func TestExplorerReadsAreBounded(t *testing.T) {
	ex := blockingExplorer{fakeExplorer: fakeExplorer{chain: chains.Ethereum, tx: "0xaa"}, started: make(chan struct{}), release: make(chan struct{})}
	r := chi.NewRouter()
	New(Options{Explorers: map[chains.ID]Explorer{chains.Ethereum: ex}}).Routes(r)
	srv := httptest.NewServer(r)
	defer srv.Close()
	done := make(chan int, MaxExplorerReads)
	for range MaxExplorerReads {
		go func() {
			res, err := http.Get(srv.URL + "/console/api/explorer/tx/0xaa")
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
	}
	for range MaxExplorerReads {
		<-ex.started
	}
	res, err := http.Get(srv.URL + "/console/api/explorer/tx/0xaa")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("read over the bound = %d %v", res.StatusCode, res.Header)
	}
	close(ex.release)
	for range MaxExplorerReads {
		if s := <-done; s != 200 {
			t.Fatalf("a bounded read = %d", s)
		}
	}
	go func() { <-ex.started }()
	res, err = http.Get(srv.URL + "/console/api/explorer/tx/0xaa")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("after the burst = %d", res.StatusCode)
	}
}
