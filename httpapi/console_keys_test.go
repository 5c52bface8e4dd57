//go:build !nodevnet

package httpapi_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleSignInAndKeysInChromium: a wrong key keeps the sign-in form
// with the reason and a next that does not nest; nothing of the signed-in
// chrome (the agent picker) shows while signed out; then the Keys page
// makes a key (its text shown once), revokes it, and the Audit page lists
// both changes.
func TestConsoleSignInAndKeysInChromium(t *testing.T) {
	exe := chromium(t)
	e := newEnv(t, envOptions{})
	b := newBrowser(t, exe)
	bctx, poll, do := b.ctx, b.poll, b.do
	do("open the money page signed out", chromedp.Navigate(e.url+"/console/money"), chromedp.WaitVisible(chromedp.ID("api-key")))
	if ph := poll("placeholder", `document.getElementById("api-key").placeholder`); ph != "veil_live_…" {
		t.Fatalf("placeholder %q", ph)
	}
	if hidden := poll("agent picker", `String(document.getElementById("agent-pick").hidden)`); hidden != "true" {
		t.Fatal("the agent picker shows while signed out")
	}
	wrong := "veil_live_" + strings.Repeat("A", 43)
	do("a wrong key", chromedp.SendKeys(chromedp.ID("api-key"), wrong), chromedp.Click(chromedp.ID("signin")))
	msg := poll("the refusal", `(function () { var e = document.getElementById("signin-error"); return e && e.innerText ? e.innerText : null; })()`)
	if !strings.Contains(msg, "refused") {
		t.Fatalf("sign-in error %q", msg)
	}
	state := poll("the form after a refusal", `document.getElementById("api-key").value.length + " " + location.pathname + location.search`)
	if state != "53 /console/money" && !strings.HasPrefix(state, "53 /console/signin?next=%2Fconsole%2Fmoney") {
		t.Fatalf("after a wrong key: %q (want the key kept and next=/console/money, not nested)", state)
	}
	if strings.Count(state, "next") > 1 || strings.Contains(state, "signin%3Fnext") {
		t.Fatalf("next nests: %q", state)
	}
	// The right key signs in and goes on to the page asked for.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(document.getElementById("api-key").value = "", true)`)); err != nil {
		t.Fatal(err)
	}
	do("the right key", chromedp.SendKeys(chromedp.ID("api-key"), e.key), chromedp.Click(chromedp.ID("signin")))
	// Signed in (the key kept, the money page drawn), not only on its path:
	// the refused attempt already showed the form at /console/money.
	poll("back on the money page", `location.pathname === "/console/money" && sessionStorage.getItem("veil.apiKey") && !document.getElementById("api-key") ? "yes" : null`)

	do("the keys page", chromedp.Navigate(e.url+"/console/keys"), chromedp.WaitVisible(chromedp.ID("key-form")))
	do("create a key", chromedp.SendKeys(chromedp.ID("key-name"), "console ci"), chromedp.Click(chromedp.ID("key-create")))
	secret := poll("the new key's text", `(function () { var e = document.getElementById("key-secret"); return e ? e.textContent : null; })()`)
	if !strings.HasPrefix(secret, "veil_live_") {
		t.Fatalf("secret %q", secret)
	}
	if r := e.do("GET", "/agents", secret, nil); r.status != 200 {
		t.Fatalf("the console's key does not work: %d", r.status)
	}
	id := poll("the new key's row", `(function () { for (var tr of document.querySelectorAll("#keys tr[data-key]")) if (tr.innerText.indexOf("console ci") >= 0) return tr.dataset.key; return null; })()`)
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(window.confirm = function () { return true; }, true)`)); err != nil {
		t.Fatal(err)
	}
	do("revoke it", chromedp.Click(chromedp.CSS(`#keys tr[data-key="`+id+`"] button[data-action="revoke"]`)))
	poll("revoked", `(function () { var tr = document.querySelector('#keys tr[data-key="`+id+`"]'); return tr && tr.dataset.status === "revoked" ? "yes" : null; })()`)
	if r := e.do("GET", "/agents", secret, nil); r.status != 401 {
		t.Fatalf("the revoked key still works: %d", r.status)
	}
	do("the audit page", chromedp.Navigate(e.url+"/console/audit"), chromedp.WaitVisible(chromedp.ID("audit")))
	actions := poll("audit rows", `Array.from(document.querySelectorAll("#audit tr[data-action]")).map(function (tr) { return tr.dataset.action + "/" + tr.dataset.outcome; }).join(" ")`)
	if !strings.HasPrefix(actions, "read/refused key.revoke/ok key.create/ok") {
		t.Fatalf("audit page rows: %q", actions)
	}

	// On a phone the header wraps: every link and Sign out stay on screen.
	do("a phone's screen", chromedp.EmulateViewport(375, 800))
	off := poll("the header on a phone", `(function () {
		var out = [];
		for (var el of document.querySelectorAll("#nav a, #signout")) {
			var r = el.getBoundingClientRect();
			if (r.width === 0 || r.right > window.innerWidth + 0.5 || r.left < 0) out.push(el.textContent.trim());
		}
		return out.join(",") || "none";
	})()`)
	if off != "none" {
		t.Fatalf("off a 375 px screen: %s", off)
	}
}
