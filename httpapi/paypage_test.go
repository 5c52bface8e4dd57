//go:build !nodevnet

package httpapi_test

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium. Without it the browser test skips,
// except in CI (CI=true), where it fails: .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install -y chromium); the pay page test needs it in CI")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

// TestPayPageInChromium opens an invoice's payment link in headless
// Chromium, checks what a payer sees (payee, amount, asset, memo, the
// address with its QR code and copy button, the pending status), pays the
// address on the devnet from the test like a wallet would, and watches the
// page turn paid by itself (polling; the background scanner settles the
// invoice) with the transaction's link. Assertions are on the DOM.
func TestPayPageInChromium(t *testing.T) {
	exe := chromium(t)
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	e.startScanner(t)
	inv := e.createInvoice(t, a.ID, `create an invoice for 0.04 ETH for "logo <b>design</b> & hosting"`)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 90*time.Second)
	defer cancel()

	if err := chromedp.Do(bctx, chromedp.Navigate(inv.PaymentLink), chromedp.WaitVisible(chromedp.ID("address"))); err != nil {
		t.Fatal(err)
	}
	pending := snapshot(t, bctx)
	if pending.Payee != "alice.veil" || pending.Amount != "0.04" || pending.Asset != "ETH" || pending.Memo != "logo <b>design</b> & hosting" ||
		pending.Chain != "Ethereum" || pending.Address != inv.PayTo || pending.Status != "waiting for payment" || pending.DataStatus != "pending" ||
		!pending.PendingShown || pending.PaidShown {
		t.Fatalf("pending page: %+v", pending)
	}
	// The QR code and the "Open in wallet" link hold the EIP-681 request:
	// the one-time address, the devnet's chain id and the amount in wei.
	if !strings.HasPrefix(pending.Wallet, "ethereum:"+inv.PayTo+"@") || !strings.HasSuffix(pending.Wallet, "?value=40000000000000000") ||
		!strings.Contains(pending.ChainID, "chain id ") || !strings.Contains(pending.Wallet, "@"+strings.TrimSuffix(strings.SplitN(pending.ChainID, "chain id ", 2)[1], ")")+"?") ||
		pending.Token != "ETH (native)" || pending.Created == "" {
		t.Fatalf("wallet request on the page: %+v", pending)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`(function () { var q = document.getElementById("qr"); return q.complete && q.naturalWidth > 0; })()`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("QR code not loaded: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.ID("copy"))); err != nil {
		t.Fatal(err)
	}
	copied, err := chromedp.Run(bctx, chromedp.Poll[string](`(function () { var t = document.getElementById("copy").textContent; return t === "Copy address" ? null : t; })()`,
		chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil || copied != "Copied" {
		t.Fatalf("copy button: %q %v", copied, err)
	}

	shot(t, bctx, "pending")

	// The payer pays the address shown; the page turns paid on its own.
	tx := e.pay(t, e.newPayer(t), pending.Address, "0.04")
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.ID("paid"))); err != nil {
		t.Fatal(err)
	}
	paid := snapshot(t, bctx)
	if paid.Status != "paid" || paid.DataStatus != "paid" || !strings.EqualFold(paid.TxHash, tx) || !strings.Contains(strings.ToLower(paid.TxHref), strings.ToLower(tx)) ||
		paid.PendingShown || !paid.PaidShown || !paid.LinkShown || !paid.SameOrigin {
		t.Fatalf("paid page (tx %s): %+v", tx, paid)
	}

	shot(t, bctx, "paid")

	// A reload renders the paid state on the server.
	if err := chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("paid"))); err != nil {
		t.Fatal(err)
	}
	if again := snapshot(t, bctx); again.Status != "paid" || !strings.EqualFold(again.TxHash, tx) {
		t.Fatalf("after reload: %+v", again)
	}
}

// shot saves a screenshot to $VEIL_PAYPAGE_SHOTS/<name>.png when that is
// set (for a person to look at; the test asserts on the DOM only).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("VEIL_PAYPAGE_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pageState is what the pay page shows, read from the DOM.
type pageState struct {
	Payee, Amount, Asset, Memo, Chain, Address, Status, DataStatus, TxHash, TxHref string
	Wallet, ChainID, Token, Created                                                string
	PendingShown, PaidShown, LinkShown, SameOrigin                                 bool
}

func snapshot(t *testing.T, ctx context.Context) pageState {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](`(function () {
		var $ = function (id) { return document.getElementById(id); };
		return {
			Payee: $("payee").textContent, Amount: $("amount").textContent, Asset: $("asset").textContent,
			Memo: $("memo").textContent, Chain: $("chain").textContent, Address: $("address").textContent,
			Status: $("status").textContent, DataStatus: document.body.getAttribute("data-status"),
			TxHash: $("tx-hash").textContent, TxHref: $("tx-link").getAttribute("href") || "",
			Wallet: $("wallet") ? $("wallet").getAttribute("href") : "", ChainID: $("chain-id").textContent,
			Token: $("token").textContent, Created: $("created").getAttribute("datetime"),
			PendingShown: !$("pending").hidden, PaidShown: !$("paid").hidden, LinkShown: !$("tx-link").hidden,
			// Nothing was fetched from another origin (no CDN).
			SameOrigin: performance.getEntriesByType("resource").every(function (r) { return r.name.indexOf(location.origin + "/") === 0; })
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPayPageHTTP: the page and its parts without a browser: no API key
// needed, no third-party origin, the right headers, 404s.
func TestPayPageHTTP(t *testing.T) {
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	inv := e.createInvoice(t, a.ID, "request 25 USDC for the logo")
	r := e.do("GET", "/pay/"+inv.ID, "", nil)
	body := string(r.body)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(body, inv.PayTo) || !strings.Contains(body, "25") {
		t.Fatalf("page = %d %s", r.status, body)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	for _, bad := range []string{"http://", "https://", "//cdn", "<script>"} {
		if strings.Contains(strings.ReplaceAll(body, e.url, ""), bad) {
			t.Fatalf("page references %q", bad)
		}
	}
	r = e.do("GET", "/pay/"+inv.ID+"/status", "", nil)
	var v struct {
		Payee, Amount, Asset, PayTo, Status string
		AgentID                             string `json:"agentId"`
		PaymentURI                          string `json:"paymentUri"`
		Token                               string `json:"token"`
		ChainID                             uint64 `json:"chainId"`
	}
	r.decode(t, &v)
	if r.status != 200 || v.Payee != "alice.veil" || v.Amount != "25" || v.Asset != "USDC" || v.PayTo != inv.PayTo || v.Status != "pending" || v.AgentID != "" {
		t.Fatalf("status = %d %s", r.status, r.body)
	}
	// A token invoice: EIP-681 transfer on the USDC contract, in base units.
	if want := fmt.Sprintf("ethereum:%s@%d/transfer?address=%s&uint256=25000000", v.Token, v.ChainID, inv.PayTo); v.Token == "" || v.ChainID == 0 || v.PaymentURI != want {
		t.Fatalf("paymentUri = %q, want %q (%s)", v.PaymentURI, want, r.body)
	}
	if !strings.Contains(body, v.Token) || !strings.Contains(body, `href="`+html.EscapeString(v.PaymentURI)+`"`) {
		t.Fatalf("the page lacks the token contract or the wallet link %s: %s", v.PaymentURI, body)
	}
	if strings.Contains(string(r.body), a.ID) {
		t.Fatalf("the public status leaks the agent id: %s", r.body)
	}
	r = e.do("GET", "/pay/"+inv.ID+"/qr.svg", "", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(r.body), "<svg") {
		t.Fatalf("qr = %d %s", r.status, r.header)
	}
	for _, f := range []string{"pay.js", "pay.css"} {
		if r := e.do("GET", "/pay/assets/"+f, "", nil); r.status != 200 || len(r.body) < 100 {
			t.Fatalf("%s = %d", f, r.status)
		}
	}
	if r := e.do("GET", "/pay/assets/pay.html", "", nil); r.status != 404 {
		t.Fatalf("template served: %d", r.status)
	}
	if r := e.do("GET", "/pay/00000000-0000-4000-8000-000000000000", "", nil); r.status != 404 || !strings.Contains(string(r.body), "Invoice not found") {
		t.Fatalf("unknown invoice page = %d", r.status)
	}
	r = e.do("GET", "/pay/nope/status", "", nil)
	if _, status := r.errorBody(t); status != 404 {
		t.Fatalf("unknown status = %d", status)
	}
}
