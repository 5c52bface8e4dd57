//go:build !nodevnet

package httpapi_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains/walletsig"
)

// testWallet is an EIP-1193 provider injected into every page as
// window.ethereum: eth_requestAccounts answers the owner's address and
// personal_sign is signed in Go with the owner's key (window.veilTestSign,
// exposed by chromedp), as a browser wallet would sign after asking.
const testWallet = `(function () {
	if (window.ethereum) return;
	window.ethereum = {
		isVeilTest: true,
		request: async function (req) {
			switch (req.method) {
			case "eth_requestAccounts":
			case "eth_accounts":
				return [%q];
			case "personal_sign":
				return window.veilTestSign(req.params[0]);
			}
			throw new Error("unsupported method " + req.method);
		}
	};
})();`

// TestConsoleInChromium drives the console in headless Chromium against
// one server with an Ethereum devnet: sign in with the API key, create an
// agent signing with the test wallet, pay another agent through chat, see
// the payment in the list and the chart, approve a held payment by signing
// in the wallet, and follow a transaction link to the explorer page
// (sender, recipient, amount, and which of the viewer's agents it was
// for). Assertions are on the DOM. With VEIL_CONSOLE_SHOTS=dir it saves a
// screenshot of each page there (docs/console.md's).
func TestConsoleInChromium(t *testing.T) {
	exe := chromium(t)
	e := newMoneyEnv(t)
	e.startScanner(t)
	bob := e.create(t, newEVMOwner(t), "bob", "ethereum")
	o := newEVMOwner(t)
	var signed atomic.Int32

	b := newBrowser(t, exe)
	bctx, dump, wait, poll := b.ctx, b.dump, b.wait, b.poll
	inject := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(testWallet, o.wallet())})
		return err
	})
	signFn := chromedp.ExposeFunc("veilTestSign", func(ctx context.Context, hexMsg string) (string, error) {
		msg, err := hex.DecodeString(strings.TrimPrefix(hexMsg, "0x"))
		if err != nil {
			return "", err
		}
		signed.Add(1)
		return walletsig.SignEVM(o.evm, string(msg)), nil
	})
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.TextContent(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	// Sign in: the key goes to sessionStorage, nowhere else.
	if err := chromedp.Do(bctx, inject, signFn, chromedp.Navigate(e.url+"/console")); err != nil {
		t.Fatal(err)
	}
	wait("sign-in page", "#api-key")
	consoleShot(t, bctx, "signin")
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("api-key"), e.key), chromedp.Click(chromedp.ID("signin"))); err != nil {
		t.Fatal(err)
	}
	wait("agents list", `#agents tr[data-agent="bob"]`)
	if where := poll("the key's place", `(function () {
		var inURL = location.href.indexOf(`+jsString(e.key)+`) >= 0, inCookie = document.cookie.indexOf(`+jsString(e.key)+`) >= 0;
		var stored = sessionStorage.getItem("veil.apiKey") === `+jsString(e.key)+`, local = localStorage.length;
		return (inURL ? "url " : "") + (inCookie ? "cookie " : "") + (stored ? "session " : "") + (local ? "local" : "");
	})()`); where != "session " {
		t.Fatalf("the API key is kept in: %q, want sessionStorage only", where)
	}

	// Create alice: the wallet gives the address and signs the message.
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.ID("create-name"), "alice"),
		chromedp.Click(chromedp.ID("connect-wallet")),
	); err != nil {
		t.Fatal(err)
	}
	poll("wallet connected", `document.getElementById("create-wallet").value || null`)
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.ID("sign-create"))); err != nil {
		t.Fatal(err)
	}
	poll("create signed", `document.getElementById("create-signature").value || null`)
	if msg, _ := chromedp.Run(bctx, chromedp.Value(chromedp.ID("create-message"))); !strings.HasPrefix(msg, "Veil wants you to create agent alice.veil on ethereum.\nWallet: "+o.wallet()+"\nIssued At: ") {
		t.Fatalf("create message %q", msg)
	}
	consoleShot(t, bctx, "agents")
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.ID("create-submit"))); err != nil {
		t.Fatal(err)
	}
	wait("agent page", `#agent-chains [data-chain="ethereum"] .balance`)
	if got := text("#agent-name"); got != "alice.veil" {
		t.Fatalf("agent page of %q", got)
	}
	loc, err := chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	aliceID := loc[strings.LastIndex(loc, "/")+1:]
	consoleShot(t, bctx, "agent")

	// Payments over 0.015 ETH wait for the owner.
	e.setPolicy(t, o, aliceID, policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.015"}}})

	// Pay bob through chat: the tool call shows as a card with its
	// transaction.
	// say sends msg and waits for the n-th card of tool.
	say := func(msg, tool string, n int) string {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("chat-input"), msg), chromedp.Click(chromedp.ID("chat-send"))); err != nil {
			t.Fatal(err)
		}
		return poll(tool+" card for "+msg, fmt.Sprintf(`(function () { var c = document.querySelectorAll('.tool[data-tool="%s"]'); return c.length === %d ? c[%d].textContent : null; })()`, tool, n, n-1))
	}
	chat := func(msg string, n int) string { t.Helper(); return say(msg, "send_payment", n) }
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`nav a[data-nav="chat"]`))); err != nil {
		t.Fatal(err)
	}
	wait("page", `#chat-input`)
	if paid := chat("send 0.01 ETH to bob", 1); !strings.Contains(paid, "success") || !strings.Contains(paid, "txHash") {
		t.Fatalf("payment card: %q", paid)
	}
	wait("transaction link in the card", `.tool[data-tool="send_payment"] .tx-link`)
	if held := chat("send 0.02 ETH to bob", 2); !strings.Contains(held, "pending_approval") || !strings.Contains(held, "approvalId") {
		t.Fatalf("held card: %q", held)
	}
	// The payment's notification came over the live stream: the header
	// counts it.
	poll("unread badge", `(function () { var b = document.getElementById("unread"); return b.hidden ? null : b.textContent; })()`)
	if card := say("pay bob 4 usdc every week", "schedule_payment", 1); !strings.Contains(card, "success") {
		t.Fatalf("schedule card: %q", card)
	}
	if card := say("create an invoice for 0.05 ETH for logo design", "create_invoice", 1); !strings.Contains(card, "success") {
		t.Fatalf("invoice card: %q", card)
	}
	consoleShot(t, bctx, "chat")

	// Money: the payment in the list and the chart; the held one waits.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`nav a[data-nav="money"]`))); err != nil {
		t.Fatal(err)
	}
	wait("sent payment", `#payments tr[data-dir="out"] .tx-link`)
	wait("chart bar", `#money-chart rect.bar-out`)
	if got := poll("chart amount", `(function () { var r = document.querySelector('#money-chart rect.bar-out'); return r ? r.getAttribute("data-amount") : null; })()`); got != "0.01" {
		t.Fatalf("chart bar of sent ETH = %q, want 0.01", got)
	}
	wait("approval waiting", `#approvals tr[data-approval] button.approve`)
	wait("invoice with its pay page", `#invoices tr[data-invoice] a[href*="/pay/"]`)
	// The invoices come from GET /agent/:id/invoices, filtered by status.
	pickStatus := func(status string) {
		t.Helper()
		if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](`(function () {
			var s = document.getElementById("invoice-status"); s.value = `+jsString(status)+`; s.dispatchEvent(new Event("change"));
		})()`)); err != nil {
			t.Fatalf("status %s: %v\n%s", status, err, dump())
		}
	}
	pickStatus("paid")
	poll("no paid invoice", `document.getElementById("invoices-note").textContent === "No paid invoices." && document.querySelectorAll("#invoices tr[data-invoice]").length === 0 ? "ok" : null`)
	pickStatus("pending")
	poll("the pending invoice", `(function () { var r = document.querySelectorAll('#invoices tr[data-invoice][data-status="pending"]'); return r.length === 1 && r[0].textContent.indexOf("logo design") >= 0 ? "ok" : null; })()`)
	wait("schedule", `#schedules tr[data-schedule] .pill.active`)
	consoleShot(t, bctx, "money")
	// Pause and resume the schedule.
	for _, step := range []struct{ button, status string }{{"Pause", "paused"}, {"Resume", "active"}} {
		if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](`(function () {
			var b = Array.prototype.find.call(document.querySelectorAll("#schedules button"), function (b) { return b.textContent === `+jsString(step.button)+`; });
			if (!b) throw new Error("no `+step.button+` button");
			b.click();
		})()`)); err != nil {
			t.Fatalf("%s: %v\n%s", step.button, err, dump())
		}
		wait("schedule "+step.status, "#schedules tr[data-schedule] .pill."+step.status)
	}
	before := signed.Load()
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#approvals button.approve`))); err != nil {
		t.Fatal(err)
	}
	wait("no approval left", `#no-approvals`)
	if n := signed.Load() - before; n != 1 {
		t.Fatalf("the approval was signed %d times in the wallet, want once", n)
	}
	poll("approved payment in the list", `document.querySelectorAll('#payments tr[data-dir="out"]').length === 2 ? "2" : null`)
	// The sent payments are the agent's payment records, with their status.
	poll("sent payments from the records", `(function () {
		var rows = document.querySelectorAll('#payments tr[data-dir="out"][data-payment]');
		if (rows.length !== 2) return null;
		for (var i = 0; i < rows.length; i++) {
			var st = rows[i].getAttribute("data-status");
			if ((st !== "broadcast" && st !== "confirmed") || !rows[i].querySelector(".pill." + st)) return null;
		}
		return "ok";
	})()`)

	// The scanner records bob's payments: then the explorer can say the
	// payment was for bob (same account).
	deadline := time.Now().Add(90 * time.Second)
	for {
		n := 0
		for _, note := range e.notes(t, bob.ID).Notifications {
			if note.Type == agent.NotePaymentReceived {
				n++
			}
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob received %d payments, want 2", n)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Follow the 0.01 payment's transaction link to the explorer.
	if err := chromedp.Do(bctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait("page", `#payments tr[data-dir="out"] .tx-link`)
	if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](`(function () {
		var rows = document.querySelectorAll('#payments tr[data-dir="out"]');
		for (var i = 0; i < rows.length; i++) {
			if (rows[i].querySelector(".pay-amount").textContent === "0.01 ETH") { rows[i].querySelector(".tx-link").click(); return; }
		}
		throw new Error("no 0.01 ETH row");
	})()`)); err != nil {
		t.Fatalf("%v\n%s", err, dump())
	}
	wait("explorer transaction", `#tx-amount`)
	wait("explorer: for whom", `#tx-for`)
	aliceAddr := poll("alice's address", `(function () { var m = document.querySelector('#tx-from .mine'); return m ? document.querySelector('#tx-from code').textContent : null; })()`)
	if got := text("#tx-status"); got != "success" {
		t.Fatalf("status %q", got)
	}
	if got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("tx-amount").getAttribute("data-amount") + " " + document.getElementById("tx-amount").getAttribute("data-asset")`)); got != "0.01 ETH" {
		t.Fatalf("amount %q", got)
	}
	if got := text("#tx-from .mine"); got != "your agent alice.veil" || !strings.EqualFold(aliceAddr, e.agentAddress(t, aliceID)) {
		t.Fatalf("sender %s %q", aliceAddr, got)
	}
	if got := text("#tx-for"); got != "bob.veil" {
		t.Fatalf("for %q", got)
	}
	if got := text("#tx-recipient .mine"); got != "received by your agent bob.veil" {
		t.Fatalf("recipient %q", got)
	}
	consoleShot(t, bctx, "explorer-tx")

	// The block and the sender's address pages.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#tx-from a`))); err != nil {
		t.Fatal(err)
	}
	wait("page", `#address .mine`)
	wait("address transactions", `table.txs tr td a`)
	consoleShot(t, bctx, "explorer-address")

	// Notifications: the inbox lists what happened.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`nav a[data-nav="notifications"]`))); err != nil {
		t.Fatal(err)
	}
	wait("page", `#notes li[data-type="payment_sent"]`)
	consoleShot(t, bctx, "notifications")

	// Nothing was fetched from another origin.
	if other := poll("origins", `(function () { var o = performance.getEntriesByType("resource").filter(function (r) { return r.name.indexOf(location.origin + "/") !== 0; }); return String(o.length); })()`); other != "0" {
		t.Fatalf("%s requests to other origins", other)
	}
}

// agentAddress is the agent's Ethereum address (GET /agent/:id).
func (e *moneyEnv) agentAddress(t *testing.T, id string) string {
	t.Helper()
	var info struct {
		Addresses map[string]string `json:"addresses"`
	}
	e.do("GET", "/agent/"+id, e.key, nil).decode(t, &info)
	return info.Addresses["ethereum"]
}

func jsString(s string) string { return fmt.Sprintf("%q", s) }

// consoleShot saves a screenshot to $VEIL_CONSOLE_SHOTS/<name>.png when
// that is set (docs/console.md's pictures; the test asserts on the DOM).
func consoleShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("VEIL_CONSOLE_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleOwned: the explorer's "whose is this address" read sees only
// the key's account, and refuses bad input in the error format.
func TestConsoleOwned(t *testing.T) {
	e := newEnv(t, envOptions{})
	a := e.create(t, newEVMOwner(t), "owned", "ethereum")
	other := e.newKey("someone-else")
	q := "/console/api/owned?chain=ethereum&address=" + a.Address + "&address=0x0000000000000000000000000000000000000001"
	var got map[string]struct{ AgentID, AgentName, Kind string }
	r := e.do("GET", q, e.key, nil)
	r.decode(t, &got)
	if r.status != 200 || len(got) != 1 || got[a.Address].AgentID != a.ID || got[a.Address].AgentName != "owned" || got[a.Address].Kind != "agent" {
		t.Fatalf("owner = %d %s", r.status, r.body)
	}
	if r := e.do("GET", strings.Replace(q, a.Address, strings.ToLower(a.Address), 1), e.key, nil); r.status != 200 || !strings.Contains(string(r.body), a.ID) {
		t.Fatalf("lower-case EVM address = %d %s", r.status, r.body)
	}
	if r := e.do("GET", q, other, nil); r.status != 200 || strings.TrimSpace(string(r.body)) != "{}" {
		t.Fatalf("another account = %d %s", r.status, r.body)
	}
	for _, bad := range []string{"/console/api/owned?chain=ethereum", "/console/api/owned?chain=nope&address=x", "/console/api/owned?chain=ethereum&address=a%2Fb",
		"/console/api/owned?chain=ethereum" + strings.Repeat("&address=x", 17)} {
		if _, status := e.do("GET", bad, e.key, nil).errorBody(t); status != 400 {
			t.Fatalf("%s = %d", bad, status)
		}
	}
	if _, status := e.do("GET", q, "", nil).errorBody(t); status != 401 {
		t.Fatalf("without a key = %d", status)
	}
}
