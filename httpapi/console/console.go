// Package console is Veil's web console, served by veild at /console: a
// single page of plain ES modules (no framework, no build step, no CDN)
// embedded in the binary, that signs in with an API key kept in the tab's
// sessionStorage and calls the same public API as any client, and the
// JSON reads of the devnet explorer behind its explorer pages. See
// docs/console.md.
package console

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/chains"
)

//go:embed web
var webFiles embed.FS

// CSP is the console's Content-Security-Policy: its own scripts, styles
// and API only. The page sets no inline script or style.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// MaxExplorerReads bounds the explorer reads running at once: they are
// public and an address page reads up to addressScanBlocks blocks from
// the node, so a burst is refused (429) rather than queued.
const MaxExplorerReads = 8

// Options configure the console.
type Options struct {
	// Explorers are the devnet chains the explorer reads; a chain on a
	// real network has none (its links go to the network's explorer).
	Explorers map[chains.ID]Explorer
	// Networks are the networks the chains run on, for the devnet banner
	// of every console page and of the pay page. A chain missing here
	// that has an explorer is an embedded devnet.
	Networks map[chains.ID]Network
	Logger   *slog.Logger
}

// Console serves the pages, their assets and the explorer's reads.
type Console struct {
	explorers map[chains.ID]Explorer
	networks  map[chains.ID]Network
	log       *slog.Logger
	assets    fs.FS
	index     []byte
	reads     chan struct{} // MaxExplorerReads slots
}

// New builds the console.
func New(opts Options) *Console {
	sub, err := fs.Sub(webFiles, "web")
	if err != nil {
		panic(err)
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	c := &Console{explorers: opts.Explorers, log: opts.Logger, assets: sub, index: index, reads: make(chan struct{}, MaxExplorerReads)}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.networks = map[chains.ID]Network{}
	for id := range c.explorers {
		c.networks[id] = Network{Chain: id, Name: NetEmbedded, Test: true}
	}
	for id, n := range opts.Networks {
		n.Chain = id
		c.networks[id] = n
	}
	return c
}

// Routes mounts the console's public routes: the page (every path under
// /console that is not an asset or an API read answers the same page,
// which routes in the browser), the assets, and the explorer's reads
// (public: a devnet's chain data is public, like any explorer's).
func (c *Console) Routes(r chi.Router) {
	page := func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(c.index)
	}
	r.Get("/console", page)
	r.Get("/console/*", func(w http.ResponseWriter, r *http.Request) {
		// An unknown read of the API or an asset is a 404 in the error
		// format; any other path is a page the script routes.
		if p := chi.URLParam(r, "*"); strings.HasPrefix(p, "api/") || strings.HasPrefix(p, "assets/") {
			writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
			return
		}
		page(w, r)
	})
	r.Get("/console/assets/*", c.asset)
	r.Get("/console/api/network", c.network)
	r.Get("/console/api/explorer", c.chainsList)
	r.Get("/console/api/explorer/tx/{hash}", c.tx)
	r.Get("/console/api/explorer/address/{address}", c.address)
	r.Get("/console/api/explorer/block/{number}", c.block)
}

func headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// asset serves one embedded file (not index.html, which is the page).
func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "*")
	if name == "" || name == "index.html" || path.Clean(name) != name || strings.HasPrefix(name, ".") {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	data, err := fs.ReadFile(c.assets, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	default:
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	headers(w)
	// The assets change with the binary; a short cache keeps an upgrade
	// visible within minutes.
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(data)
}

// chainInfo is a chain in the explorer's index.
type chainInfo struct {
	Chain chains.ID `json:"chain"`
	Head  uint64    `json:"head"`
	Error string    `json:"error,omitempty"`
}

func (c *Console) chainsList(w http.ResponseWriter, r *http.Request) {
	out := []chainInfo{}
	for _, id := range chains.Order() {
		ex, ok := c.explorers[id]
		if !ok {
			continue
		}
		ci := chainInfo{Chain: id}
		if n, err := ex.Head(r.Context()); err != nil {
			ci.Error = "unavailable"
			c.log.Warn("console: explorer head", slog.String("chain", string(id)), slog.Any("err", err))
		} else {
			ci.Head = n
		}
		out = append(out, ci)
	}
	writeJSON(w, http.StatusOK, out)
}

// pick resolves the chain query parameter: one devnet chain, or every
// devnet chain when it is absent (the first that knows the item wins).
func (c *Console) pick(w http.ResponseWriter, r *http.Request) ([]chains.ID, bool) {
	q := r.URL.Query().Get("chain")
	if q == "" {
		var all []chains.ID
		for _, id := range chains.Order() {
			if _, ok := c.explorers[id]; ok {
				all = append(all, id)
			}
		}
		if len(all) == 0 {
			writeError(w, http.StatusNotFound, "no devnet chain here: transactions on real networks are on their networks' explorers")
			return nil, false
		}
		return all, true
	}
	id, err := chains.Parse(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "chain: "+err.Error())
		return nil, false
	}
	if _, ok := c.explorers[id]; !ok {
		writeError(w, http.StatusNotFound, "chain "+string(id)+" is not a devnet here: its transactions are on its network's explorer")
		return nil, false
	}
	return []chains.ID{id}, true
}

// first asks each chain in turn and writes the first answer; an item no
// chain knows is a 404, input no chain can read a 400.
func first[T any](c *Console, w http.ResponseWriter, r *http.Request, what string, read func(Explorer) (T, error)) {
	ids, ok := c.pick(w, r)
	if !ok {
		return
	}
	select {
	case c.reads <- struct{}{}:
		defer func() { <-c.reads }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "the explorer is busy: retry in a second")
		return
	}
	var bad, other error
	for _, id := range ids {
		v, err := read(c.explorers[id])
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, v)
			return
		case errors.Is(err, ErrBadInput):
			bad = err
		case errors.Is(err, chains.ErrNotFound):
		default:
			other = err
			c.log.Warn("console: explorer read", slog.String("chain", string(id)), slog.String("what", what), slog.Any("err", err))
		}
	}
	switch {
	case other != nil:
		writeError(w, http.StatusBadGateway, "the chain's node did not answer: "+what+" could not be read")
	case bad != nil && len(ids) == 1:
		writeError(w, http.StatusBadRequest, bad.Error())
	default:
		writeError(w, http.StatusNotFound, what+" not found")
	}
}

func (c *Console) tx(w http.ResponseWriter, r *http.Request) {
	hash := chi.URLParam(r, "hash")
	first(c, w, r, "transaction "+clip(hash), func(e Explorer) (*Tx, error) { return e.Tx(r.Context(), hash) })
}

func (c *Console) address(w http.ResponseWriter, r *http.Request) {
	a := chi.URLParam(r, "address")
	first(c, w, r, "address "+clip(a), func(e Explorer) (*Address, error) { return e.Address(r.Context(), a) })
}

func (c *Console) block(w http.ResponseWriter, r *http.Request) {
	raw := chi.URLParam(r, "number")
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, "block number "+clip(raw)+": want a whole number")
		return
	}
	first(c, w, r, "block "+raw, func(e Explorer) (*Block, error) { return e.Block(r.Context(), n) })
}

// clip shortens user input echoed in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return strconv.Quote(s)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes the API's error body, {message, statusCode}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "statusCode": status})
}
