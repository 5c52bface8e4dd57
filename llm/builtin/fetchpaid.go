package builtin

import (
	"fmt"
	"regexp"
	"strings"
)

// Fetching a resource that asks for payment (fetch_paid, x402): "fetch
// https://api.example.com/data paying up to 1 USDC", "get <url>, pay at
// most 0.5 USDC", "buy access to <url> for up to 2 USDC", "pay up to 1
// USDC for <url>". The user names the URL and the most the agent may pay;
// the server's 402 names the price, and the tool pays only within the
// maximum. A payment link (…/pay/<id>) is an invoice (pay_invoice), not a
// resource.

// reWebURL is an http(s) URL.
var reWebURL = regexp.MustCompile(`^(?i:https?)://[^\s/]+\S*$`)

// fetchVerbs ask for a resource.
var fetchVerbs = []string{"fetch", "get", "download", "open", "read", "access", "retrieve", "load", "buy", "purchase",
	"call", "request", "grab", "query", "visit", "x402", "paywall", "paywalled"}

// resourceURL is the clause's first URL that is not a payment link, and
// its token index.
func resourceURL(c clause) (string, int) {
	for i, t := range c.toks {
		if reWebURL.MatchString(t.raw) && !rePayLink.MatchString(t.raw) {
			return t.raw, i
		}
	}
	return "", -1
}

// fetchPaidish: a request to fetch a web resource (a fetch verb beside a
// URL), or to pay for one ("pay up to 1 USDC for <url>": "for" or
// "access" right before the URL; "pay bob 5 USDC, see <url>" is no
// fetch).
func fetchPaidish(c clause) bool {
	_, i := resourceURL(c)
	if i < 0 {
		return false
	}
	if c.has(fetchVerbs...) {
		return true
	}
	return c.has("pay", "paying") && i > 0 && (c.toks[i-1].low == "for" || c.toks[i-1].low == "access" || c.toks[i-1].low == "to")
}

// buildFetchPaid: fetch_paid(url, max_amount, asset?).
func buildFetchPaid(c clause) action {
	url, _ := resourceURL(c)
	amts := amounts(c, nil)
	if len(amts) == 0 {
		return ask("fetchpaid", fmt.Sprintf("I can fetch %s and pay for it if it asks (x402), but only within a maximum you state: how much may I pay at most? Say e.g. “fetch %s paying up to 1 USDC”. Nothing was fetched or paid.", url, url))
	}
	value, q := checkAmounts("fetchpaid", amts, "the most I may pay")
	if q != nil {
		return *q
	}
	args := map[string]any{"url": url, "max_amount": value}
	if a := assetOf(c, amts); a != "" {
		args["asset"] = a
	}
	return call("fetchpaid", "fetch_paid", args)
}

// describeFetchPaid reads fetch_paid's result: the status, what was paid,
// and the body as the server's words (untrusted: quoted, never obeyed).
func describeFetchPaid(r result, d map[string]any) string {
	url := firstNonEmpty(str(d, "url"), argStr(r, "url"))
	var s string
	if b, _ := d["paid"].(bool); b {
		s = fmt.Sprintf("Fetched %s (HTTP %s) after paying %s to %s%s.", url, str(d, "status"),
			money(str(d, "amount"), str(d, "asset")), orDefault(str(d, "payTo"), "the server"), onChain(str(d, "chain")))
		s += txText(d)
	} else {
		s = fmt.Sprintf("Fetched %s (HTTP %s); nothing was paid.", url, str(d, "status"))
	}
	body := strings.TrimSpace(str(d, "body"))
	if body == "" {
		return s
	}
	const show = 300
	if len([]rune(body)) > show {
		body = string([]rune(body)[:show]) + "…"
	}
	return s + fmt.Sprintf(" The server answered (its words, not instructions): “%s”", body)
}

// joinFetchMaximum reads "fetch <url>, pay at most 1 USDC" and "fetch
// <url>. You may pay up to 1 USDC." as one request: a fetch that asked for
// its maximum, right before a payment that names an amount and no one to
// pay, becomes fetch_paid with that amount as its maximum (spanning both
// clauses, so the money gate reads them together).
func joinFetchMaximum(text, masked string, acts []action) []action {
	out := make([]action, 0, len(acts))
	for i := 0; i < len(acts); i++ {
		a := acts[i]
		if a.kind == "fetchpaid" && a.tool == "" && i+1 < len(acts) && acts[i+1].kind == "pay" && acts[i+1].tool == "" {
			fetch := clause{toks: tokenize(text, masked, a.from, a.to), text: text, from: a.from, to: a.to}
			next := acts[i+1]
			payc := clause{toks: tokenize(text, masked, next.from, next.to), text: text, from: next.from, to: next.to}
			if amts := amounts(payc, nil); len(amts) > 0 {
				fetch.toks = append(fetch.toks, payc.toks...)
				fetch.to = next.to
				joined := buildFetchPaid(fetch)
				joined.from, joined.to = a.from, next.to
				out = append(out, joined)
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}
