package httpapi

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"rsc.io/qr"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/httpapi/console"
)

// The pay page: paymentLink = <public URL>/pay/<invoiceId>. It is served
// without an API key (the payer has none) and shows only what a payer needs:
// the payee's name, amount, asset, memo, chain and the invoice's one-time
// address (with a QR code and a copy button), and its status, which the
// page's script polls until the payment lands. Assets are embedded: no CDN,
// no third-party request. See docs/invoices.md.

//go:embed paypage
var payFiles embed.FS

var payTmpl = template.Must(template.ParseFS(payFiles, "paypage/pay.html"))

// payAssets serves pay.css and pay.js.
var payAssets = func() http.Handler {
	sub, err := fs.Sub(payFiles, "paypage")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix("/pay/assets/", http.FileServer(http.FS(sub)))
}()

// payRoutes mounts the public pay page (outside authentication).
func (s *Server) payRoutes(r chi.Router) {
	r.Get("/pay/assets/{file}", func(w http.ResponseWriter, r *http.Request) {
		switch chi.URLParam(r, "file") {
		case "pay.css", "pay.js":
			w.Header().Set("Cache-Control", "public, max-age=3600")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			payAssets.ServeHTTP(w, r)
		default:
			writeError(w, http.StatusNotFound, "no such file")
		}
	})
	r.Method(http.MethodGet, "/pay/{invoiceId}", handler(s.payPage))
	r.Method(http.MethodGet, "/pay/{invoiceId}/status", handler(s.payStatus))
	r.Method(http.MethodGet, "/pay/{invoiceId}/qr.svg", handler(s.payQR))
	r.Method(http.MethodPost, "/pay/{invoiceId}/paid", handler(s.payPaid))
}

// payView reads the invoice for the pay page from its agent, which knows
// the chain: the payment URI with the token and chain id, and the
// explorer link of a paid invoice.
func (s *Server) payView(r *http.Request) (*agent.PayView, error) {
	rec, err := s.invoiceOwner(r)
	if err != nil {
		return nil, err
	}
	return askMoney(r.Context(), s, rec.AgentID, &agent.PublicInvoice{InvoiceID: rec.ID})
}

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

type payPageData struct {
	*agent.PayView
	ChainName string
	Paid      bool
	// WalletURI is PaymentURI marked safe for an href: html/template
	// otherwise replaces non-http schemes (ethereum:, solana:,
	// web+stellar:) with #ZgotmplZ. It is built by chains/payuri from
	// stored, validated fields only.
	WalletURI template.URL
	// Network is the network the invoice's chain runs on here (its name
	// shows beside the chain); Test marks it as test money with the
	// devnet banner (docs/console.md, "Devnet marker").
	Network console.Network
	Test    bool
}

// wantsJSON: the payment link asked for its JSON form (a payer's agent,
// docs/invoices.md "Paying an invoice"): an Accept header naming
// application/json and not text/html. Browsers name text/html.
func wantsJSON(r *http.Request) bool {
	json, html := false, false
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/json":
			json = true
		case "text/html":
			html = true
		}
	}
	return json && !html
}

func (s *Server) payPage(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Vary", "Accept")
	if wantsJSON(r) {
		// The same object as /status; its errors are the API's JSON.
		return s.payStatus(w, r)
	}
	v, err := s.payView(r)
	if err != nil {
		var he *Error
		if errors.As(err, &he) && he.Status == http.StatusNotFound {
			securityHeaders(w)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Invoice not found · Veil</title><link rel="stylesheet" href="/pay/assets/pay.css"></head><body><main class="card"><h1>Invoice not found</h1><p>This payment link is not valid. Ask the payee for a new one.</p></main></body></html>`)
			return nil
		}
		return err
	}
	var buf bytes.Buffer
	d := payPageData{PayView: v, ChainName: chainName(string(v.Chain)), Paid: v.Status == state.InvoicePaid, WalletURI: template.URL(v.PaymentURI)}
	if n, ok := s.console.NetworkOf(v.Chain); ok {
		d.Network, d.Test = n, n.Test
	}
	if err := payTmpl.Execute(&buf, d); err != nil {
		return err
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
	return nil
}

func (s *Server) payStatus(w http.ResponseWriter, r *http.Request) error {
	return private(w, http.StatusOK)(s.payView(r))
}

// payQR is the QR code of the invoice's payment URI (the bare address
// when the chain cannot give one), as SVG.
func (s *Server) payQR(w http.ResponseWriter, r *http.Request) error {
	v, err := s.payView(r)
	if err != nil {
		return err
	}
	text := v.PaymentURI
	if text == "" {
		text = v.PayTo
	}
	svg, err := qrSVG(text)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(svg)
	return nil
}

// qrSVG renders text as a QR code (error correction M) with a four-module
// quiet zone, one SVG path.
func qrSVG(text string) ([]byte, error) {
	c, err := qr.Encode(text, qr.M)
	if err != nil {
		return nil, err
	}
	const quiet = 4
	n := c.Size + 2*quiet
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges"><rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, n, n, n, n)
	for y := 0; y < c.Size; y++ {
		for x := 0; x < c.Size; x++ {
			if c.Black(x, y) {
				fmt.Fprintf(&b, "M%d %dh1v1h-1z", x+quiet, y+quiet)
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return []byte(b.String()), nil
}

func chainName(c string) string {
	switch c {
	case "horizen":
		return "Horizen"
	case "ethereum":
		return "Ethereum"
	case "polygon":
		return "Polygon"
	case "base":
		return "Base"
	case "stellar":
		return "Stellar"
	case "solana":
		return "Solana"
	}
	return c
}
