//go:build !nodevnet

package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/httpapi"
	"github.com/veilhq/veil/httpapi/console"
)

// TestConsoleDevnetAmountsLinksInChromium: on an Ethereum devnet every
// console page (signed out too) and the pay page carry the devnet banner
// naming the network; a payment and an invoice of 0.0000001 ETH are listed
// as 0.0000001 ETH (never "0 ETH") on the money page's payments and
// invoices, the received side and the explorer; URLs in chat and in
// notifications are links, and a hostile message makes no javascript:
// link and no markup. The same invoice's pay page served for a mainnet
// chain id has no banner.
func TestConsoleDevnetAmountsLinksInChromium(t *testing.T) {
	exe := chromium(t)
	e := newMoneyEnv(t)
	e.startScanner(t)
	alice := e.create(t, newEVMOwner(t), "alice", "ethereum")
	bob := e.create(t, newEVMOwner(t), "bob", "ethereum")

	// A tiny payment and a tiny invoice, through the API.
	_, status, detail := e.tool(t, alice.ID, "send 0.0000001 ETH to bob")
	var sent struct {
		TxHash string `json:"txHash"`
	}
	if status != "success" || json.Unmarshal([]byte(detail), &sent) != nil || sent.TxHash == "" {
		t.Fatalf("send 0.0000001 ETH: %s %s", status, detail)
	}
	inv := e.createInvoice(t, alice.ID, "create an invoice for 0.0000001 ETH for a tiny test")

	b := newBrowser(t, exe)
	poll, do := b.poll, b.do
	banner := func(page string) {
		t.Helper()
		got := poll("the devnet banner on "+page, `(function () { var b = document.getElementById("devnet"); return b && !b.hidden && b.getBoundingClientRect().height > 0 ? b.innerText : null; })()`)
		if !strings.Contains(got, "DEVNET") || !strings.Contains(got, "test money") || !strings.Contains(got, "ethereum (embedded devnet, chain id 11155111)") {
			t.Fatalf("devnet banner on %s: %q", page, got)
		}
	}

	do("sign-in page", chromedp.Navigate(e.url+"/console/signin"), chromedp.WaitVisible(chromedp.ID("api-key")))
	banner("the sign-in page")
	b.signIn(e.url, e.key)
	poll("signed in", `document.querySelector('#agents tr[data-agent="alice"]') ? "yes" : null`)
	b.pickAgent(alice.ID)
	for _, p := range []string{"agents", "agents/" + alice.ID, "money", "chat", "notifications", "keys", "audit", "explorer", "explorer/tx/" + sent.TxHash + "?chain=ethereum"} {
		do("open "+p, chromedp.Navigate(e.url+"/console/"+p))
		banner("/console/" + p)
	}

	// The explorer's amount of the tiny payment.
	if got := poll("explorer amount", `(function () { var a = document.getElementById("tx-amount"); return a && a.innerText ? a.innerText : null; })()`); got != "0.0000001 ETH" {
		t.Fatalf("explorer amount %q, want 0.0000001 ETH", got)
	}

	// Alice's money page: the payment and the invoice, exactly.
	do("money page", chromedp.Navigate(e.url+"/console/money"))
	sentRow := poll("the tiny payment's row", `(function () { var r = document.querySelector('#payments tr[data-dir="out"] .pay-amount'); return r ? r.innerText : null; })()`)
	invRow := poll("the tiny invoice's row", `(function () { var r = document.querySelector('#invoices tr[data-invoice="`+inv.ID+`"] td:nth-child(2)'); return r ? r.innerText : null; })()`)
	if sentRow != "0.0000001 ETH" || invRow != "0.0000001 ETH" {
		t.Fatalf("money page: payment %q, invoice %q; want 0.0000001 ETH each", sentRow, invRow)
	}

	// Alice's notification of the payment links its transaction (an
	// in-console link to the explorer).
	do("notifications", chromedp.Navigate(e.url+"/console/notifications"))
	href := poll("a link in the payment_sent notification", `(function () { var a = document.querySelector('#notes li[data-type="payment_sent"] .body a'); return a ? a.getAttribute("href") : null; })()`)
	if href != "/console/explorer/tx/"+sent.TxHash+"?chain=ethereum" {
		t.Fatalf("notification link %q", href)
	}

	// Chat: the invoice's answer links its pay page; a hostile message
	// makes links of its http(s) URLs only, and no markup.
	hostile := `see javascript:alert(1) and JaVaScRiPt:alert(2) <img src=x onerror="window.pwned=1"> https://example.com/a?b=1&c=<b>x</b>"onmouseover=alert(3) or data:text/html,<script>alert(4)</script> then http://example.org/ok.`
	r, out := e.chat(t, alice.ID, e.key, map[string]string{"message": hostile})
	if r.status != 200 {
		t.Fatalf("hostile chat = %d %s", r.status, r.body)
	}
	do("chat", chromedp.Navigate(e.url+"/console/chat?c="+out.ConversationID))
	links := poll("links of the hostile message", `(function () {
		var m = Array.from(document.querySelectorAll("#messages .msg.user")).find(function (d) { return d.innerText.indexOf("JaVaScRiPt") >= 0; });
		if (!m) return null;
		var bad = m.querySelectorAll("img, script, b").length + (window.pwned ? 100 : 0);
		return bad + " " + Array.from(m.querySelectorAll("a")).map(function (a) { return a.getAttribute("href") + "|" + a.rel + "|" + a.target; }).join(" ");
	})()`)
	want := "0 https://example.com/a?b=1&c=|noopener noreferrer|_blank http://example.org/ok|noopener noreferrer|_blank"
	if links != want {
		t.Fatalf("hostile message's links:\n got %q\nwant %q", links, want)
	}
	if n := poll("every link on the page is http(s) or in-console", `String(Array.from(document.querySelectorAll("a[href]")).filter(function (a) { return !/^(https?:\/\/|\/console\/|\/console$)/.test(a.getAttribute("href")); }).length)`); n != "0" {
		t.Fatalf("%s links with another scheme", n)
	}

	// The invoice's answer (in its own conversation) links the pay page.
	r, out = e.chat(t, alice.ID, e.key, map[string]string{"message": "create an invoice for 0.0000002 ETH for links"})
	if r.status != 200 || !strings.Contains(out.Response, "/pay/") {
		t.Fatalf("invoice chat = %d %s", r.status, r.body)
	}
	do("chat with the invoice", chromedp.Navigate(e.url+"/console/chat?c="+out.ConversationID))
	pay := poll("the pay link in the answer", `(function () { var a = document.querySelector('#messages a[href*="/pay/"]'); return a ? a.getAttribute("href") + "|" + a.rel : null; })()`)
	if !strings.HasPrefix(pay, e.url+"/pay/") || !strings.HasSuffix(pay, "|noopener noreferrer") {
		t.Fatalf("pay link in the answer: %q", pay)
	}

	// Bob's side: the payment received, exactly, once the scanner saw it.
	b.pickAgent(bob.ID)
	waitFor(t, "bob's payment_received", func() bool { return e.noteCount(t, bob.ID, "payment_received", "0.0000001 ETH") > 0 })
	do("bob's money page", chromedp.Navigate(e.url+"/console/money"))
	if got := poll("the received row", `(function () { var r = document.querySelector('#payments tr[data-dir="in"] .pay-amount'); return r ? r.innerText : null; })()`); got != "0.0000001 ETH" {
		t.Fatalf("received row %q", got)
	}
	// The chart's axis and bar show the tiny amount as the lists do
	// (never 0, never 1e-7).
	axis := poll("the chart's axis", `(function () { var l = document.querySelectorAll("#money-chart text.axis-label"); return l.length === 3 ? Array.from(l).map(function (x) { return x.textContent; }).join(" ") : null; })()`)
	bar := poll("the received bar", `(function () { var r = document.querySelector("#money-chart rect.bar-in"); return r ? r.getAttribute("data-amount") + "|" + r.textContent : null; })()`)
	if axis != "0 0.00000005 0.0000001" || !strings.HasPrefix(bar, "0.0000001|Received 0.0000001 ETH (") {
		t.Fatalf("chart: axis %q, bar %q", axis, bar)
	}
	// The received list is the payment records, not the inbox: with bob's
	// notifications deleted, the payment is still listed.
	if r := e.do("DELETE", "/agent/"+bob.ID+"/notifications", e.key, nil); r.status != 200 {
		t.Fatalf("delete bob's notifications = %d", r.status)
	}
	do("bob's money page, inbox empty", chromedp.Navigate(e.url+"/console/notifications"), chromedp.Navigate(e.url+"/console/money"))
	if got := poll("the received row after the inbox is emptied", `(function () { var r = document.querySelector('#payments tr[data-dir="in"]'); return r ? r.getAttribute("data-received").split(":")[0] + " " + r.querySelector(".pay-amount").innerText : null; })()`); got != "ethereum 0.0000001 ETH" {
		t.Fatalf("received row without the inbox %q", got)
	}

	// The pay page of the tiny invoice: the banner, and the network by the chain.
	do("pay page", chromedp.Navigate(inv.PaymentLink), chromedp.WaitVisible(chromedp.ID("address")))
	if got := poll("pay page banner", `(function () { var b = document.getElementById("devnet"); return b && b.getBoundingClientRect().height > 0 ? b.innerText + "|" + document.getElementById("chain").innerText + " " + document.getElementById("network").innerText : null; })()`); !strings.Contains(got, "DEVNET — test money") ||
		!strings.Contains(got, "embedded devnet (chain id 11155111)") || !strings.HasSuffix(got, "|Ethereum (embedded devnet)") {
		t.Fatalf("pay page banner: %q", got)
	}

	// The same store served for Ethereum mainnet (chain id 1): no banner
	// on the pay page, none in the console's network read.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	main := httptest.NewServer(httpapi.New(httpapi.Config{Store: e.store, Agents: wire(e.host), Logger: quiet,
		Networks: map[chains.ID]console.Network{chains.Ethereum: console.EVMNetwork(chains.Ethereum, 1, false)}}))
	defer main.Close()
	page := (&env{t: t, url: main.URL}).do("GET", "/pay/"+inv.ID, "", nil)
	if page.status != 200 || strings.Contains(string(page.body), `id="devnet"`) || strings.Contains(string(page.body), "DEVNET") || !strings.Contains(string(page.body), "(mainnet)") {
		t.Fatalf("mainnet pay page = %d, banner or no network:\n%s", page.status, page.body)
	}
	var nets console.Networks
	(&env{t: t, url: main.URL}).do("GET", "/console/api/network", "", nil).decode(t, &nets)
	if nets.Test || len(nets.Networks) != 1 || nets.Networks[0].Name != "mainnet" || nets.Networks[0].ChainID != 1 {
		t.Fatalf("mainnet networks: %+v", nets)
	}
	do("console on mainnet", chromedp.Navigate(main.URL+"/console/signin"), chromedp.WaitVisible(chromedp.ID("api-key")))
	if got := poll("no banner on mainnet", `(function () { var b = document.getElementById("devnet"); return b.dataset.checked ? String(b.hidden) : null; })()`); got != "true" {
		t.Fatalf("mainnet console banner hidden = %s", got)
	}
}
