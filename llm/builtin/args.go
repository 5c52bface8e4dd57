package builtin

// Reading tool arguments from a clause's words: amounts (digits and
// words), assets, chains and recipients.

import (
	"fmt"
	"strings"

	"github.com/veilhq/veil/agent/intent"
)

// amount is an amount found in a clause.
type amount struct {
	value, asset string
	idx          int
	neg          bool
	// unknownUnit is a word after the number the planner cannot read as
	// an asset or unit ("5 euros"): the request is asked about, not paid.
	unknownUnit string
}

// afterNumber are words that may follow an amount without being its unit.
var afterNumber = map[string]bool{
	"to": true, "for": true, "and": true, "or": true, "on": true, "via": true, "over": true, "please": true, "pls": true,
	"plz": true, "now": true, "each": true, "per": true, "from": true, "in": true, "of": true, "worth": true, "as": true,
	"into": true, "today": true, "tonight": true, "right": true, "away": true, "back": true, "thanks": true, "thx": true,
	"too": true, "also": true, "then": true, "total": true, "more": true, "less": true, "max": true, "maximum": true,
	"at": true, "with": true, "by": true, "asap": true, "immediately": true, "instead": true, "only": true, "but": true,
	"no": true, "not": true, "so": true, "if": true, "when": true, "again": true, "tip": true, "every": true, "until": true,
	"till": true, "starting": true, "weekly": true, "daily": true, "monthly": true, "hourly": true, "is": true, "was": true,
	"will": true, "should": true, "bucks": true, "usd": true, "the": true, "my": true, "his": true, "her": true, "their": true,
	"a": true, "an": true, "this": true, "that": true, "it": true, "them": true, "him": true, "me": true, "us": true,
	"you": true, "i": true, "we": true, "he": true, "she": true, "they": true, "yesterday": true, "tomorrow": true,
	"later": true, "ago": true, "sent": true, "paid": true, "owed": true, "already": true, "first": true, "later,": true,
	"units": true, "unit": true, "coins": true, "coin": true, "tokens": true, "token": true, "x": true, "times": true,
	"left": true, "remaining": true, "dollar": true, "usdc": true, "name": true, "agent": true, "wallet": true,
	"address": true, "invoice": true, "payment": true, "payments": true, "transfer": true, "transaction": true,
}

// unknownUnit: next, right after a number in a payment, is a word the
// planner cannot read ("5 euros", "5 finneys"); the payment is asked
// about instead of dropping the word (issue 33).
func unknownUnit(next string, c clause) bool {
	if next == "" || afterNumber[next] || isAssetWord(next) || chainNames[next] != "" || len(next) < 2 {
		return false
	}
	for _, r := range next {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	if _, ok := intent.UnitOf(next); ok {
		return false
	}
	rs, _ := recipients(c, false)
	for _, r := range rs {
		if strings.TrimSuffix(r, ".veil") == next {
			return false
		}
	}
	return true
}

// oneTime are the words for a received payment's stealth address.
var oneTime = map[string]bool{"one-time": true, "one-off": true, "onetime": true, "one‑time": true}

var unitWords = map[string]bool{
	"day": true, "days": true, "week": true, "weeks": true, "month": true, "months": true,
	"year": true, "years": true, "hour": true, "hours": true, "minute": true, "minutes": true,
	"times": true, "x": true, "%": true, "percent": true, "am": true, "pm": true,
}

// amounts lists the amounts of a clause, skipping numbers that belong to
// dates, durations, intervals and ids (and the words in skip).
func amounts(c clause, skip map[int]bool) []amount {
	var out []amount
	ws := c.toks
	used := 0 // words of a number in words already read
	for i, t := range ws {
		if skip[i] || i < used {
			continue
		}
		prev, next := "", ""
		if i > 0 {
			prev = ws[i-1].low
		}
		if i+1 < len(ws) {
			next = ws[i+1].low
		}
		v, asset, neg, ok := parseNumber(t.raw)
		if !ok {
			if oneTime[t.low] {
				continue // "the one-time address 0x…" names an address, not an amount
			}
			if a, n := wordAmount(ws, i); n > 0 {
				used = i + n
				out = append(out, a)
			}
			continue
		}
		if unitWords[next] || monthNames[next] > 0 || monthNames[prev] > 0 {
			continue
		}
		if u, ok := intent.UnitOf(next); ok && next != "m" && next != "k" && next != "mm" && next != "bn" {
			// "5 gwei", "50 cents", "2 thousand": the converted amount.
			sv, ok := scaleValue(v, u)
			if !ok || u.Asset != "" && asset != "" && asset != u.Asset {
				out = append(out, amount{value: v, idx: i, unknownUnit: next})
				continue
			}
			if asset == "" {
				asset = u.Asset
			}
			out = append(out, amount{value: sv, asset: asset, idx: i + 1, neg: neg})
			used = i + 2
			continue
		}
		if unknownUnit(next, c) {
			out = append(out, amount{value: v, asset: asset, idx: i, neg: neg, unknownUnit: next})
			continue
		}
		switch prev {
		case "every", "each", "id", "number", "#", "until", "till":
			continue
		case "schedule":
			if manageVerb(c) != "" && !isAssetWord(next) {
				continue
			}
		}
		if isYear(t.raw) && (monthNames[prev] > 0 || prev == "in") {
			continue
		}
		out = append(out, amount{value: v, asset: asset, idx: i, neg: neg})
	}
	return out
}

// wordAmount reads an amount in words at ws[i] ("twenty", "two and a
// half", "a hundred", "fifty-five"): not a count of days or weeks, not
// after every/each/for, and "one" or "a …" only right before an asset.
func wordAmount(ws []tok, i int) (amount, int) {
	lows := make([]string, 0, len(ws)-i)
	for _, t := range ws[i:] {
		lows = append(lows, t.low)
	}
	v, n := intent.WordNumber(lows)
	if n == 0 || isZero(v) {
		return amount{}, 0
	}
	prev, next := "", ""
	if i > 0 {
		prev = ws[i-1].low
	}
	if i+n < len(ws) {
		next = ws[i+n].low
	}
	switch prev {
	case "every", "each", "for", "until", "till", "id", "number", "#", "in", "within", "than", "of":
		return amount{}, 0
	}
	if unitWords[next] || strings.HasPrefix(next, "hour") || strings.HasPrefix(next, "day") || monthNames[next] > 0 || next == "times" || next == "of" {
		return amount{}, 0
	}
	first := ws[i].low
	if (first == "one" || first == "a" || first == "an") && n <= 2 && !isAssetWord(next) {
		return amount{}, 0
	}
	return amount{value: v, idx: i + n - 1}, n
}

func isAssetWord(w string) bool { _, ok := assets[w]; return ok }

// assetOf is the asset the clause names: implied by the amount ("$5"),
// the word after the amount, or an asset word anywhere.
func assetOf(c clause, amts []amount) string {
	if len(amts) > 0 {
		a := amts[0]
		if a.asset != "" {
			return a.asset
		}
		if a.idx+1 < len(c.toks) {
			n := c.toks[a.idx+1]
			if sym, ok := assets[n.low]; ok {
				return sym
			}
			if reUpperSym.MatchString(n.raw) && chainNames[n.low] == "" {
				return n.raw
			}
		}
	}
	for i, t := range c.toks {
		if sym, ok := assets[t.low]; ok {
			if i > 0 && (c.toks[i-1].low == "to" || c.toks[i-1].low == "via") && (t.low == "usd" || t.low == "sol" || t.low == "eth") {
				// "to eth"/"via sol" are more likely chains than assets.
				continue
			}
			return sym
		}
	}
	return ""
}

// chainsOf lists the chains a clause names, in order; "all" for "all
// chains", "every network", "everywhere".
func chainsOf(c clause) []string {
	if c.seq("all", "chains") >= 0 || c.seq("every", "chain") >= 0 || c.seq("all", "networks") >= 0 ||
		c.seq("every", "network") >= 0 || c.has("everywhere") || c.seq("all", "my", "chains") >= 0 || c.seq("all", "the", "chains") >= 0 {
		return []string{"all"}
	}
	var out []string
	seen := map[string]bool{}
	for i, t := range c.toks {
		ch, ok := chainNames[t.low]
		if !ok {
			continue
		}
		if ch == "base" {
			prev, next := "", ""
			if i > 0 {
				prev = c.toks[i-1].low
			}
			if i+1 < len(c.toks) {
				next = c.toks[i+1].low
			}
			switch {
			case prev == "on" || prev == "via" || prev == "over" || prev == "using" || prev == "through" || prev == "from" || prev == "in" || prev == "onto":
			case next == "chain" || next == "network" || next == "mainnet" || next == "testnet" || next == "sepolia":
			case len(c.toks) == 1:
			default:
				continue
			}
		}
		if !seen[ch] {
			seen[ch] = true
			out = append(out, ch)
		}
	}
	return out
}

// skipAfterVerb are the words between a verb and its payee ("pay the
// agent bob", "pay back bob").
var skipAfterVerb = map[string]bool{"the": true, "agent": true, "back": true, "over": true}

var skipAfterTo = map[string]bool{
	"the": true, "my": true, "our": true, "his": true, "their": true, "agent": true, "user": true,
	"friend": true, "buddy": true, "pal": true, "colleague": true, "mate": true, "good": true, "old": true,
	"dear": true, "veil": true, "name": true, "address": true, "meta-address": true, "stealth": true,
}

// recipients lists the payees a clause names: after "to", or right after
// the verb ("pay bob 5"), or (bare) as its first word. agent reports the
// word "agent" before a payee.
func recipients(c clause, bare bool) (out []string, agent bool) {
	ws := c.toks
	add := func(r string) {
		for _, x := range out {
			if x == r {
				return
			}
		}
		out = append(out, r)
	}
	// payee adds the payee named after the words of skip from ws[j] on
	// (noting "agent" among them), and answers its index.
	payee := func(j int, skip map[string]bool) (int, bool) {
		for j < len(ws) && skip[ws[j].low] {
			if ws[j].low == "agent" {
				agent = true
			}
			j++
		}
		if j < len(ws) {
			if r, ok := recipientOf(ws[j]); ok {
				add(r)
				return j, true
			}
		}
		return j, false
	}
	scan := func(j int) {
		// "to hugo or iris" (and nothing after, or "each"/"both"…), not
		// "to bob and tell him thanks".
		if j, ok := payee(j, skipAfterTo); ok && j+2 < len(ws) && (ws[j+1].low == "or" || ws[j+1].low == "and" || ws[j+1].low == "&" || ws[j+1].low == "and/or") &&
			(j+3 >= len(ws) || map[string]bool{"each": true, "both": true, "too": true, "equally": true, "please": true, "now": true, "on": true, "via": true}[ws[j+3].low]) {
			if r2, ok := recipientOf(ws[j+2]); ok {
				add(r2)
			}
		}
	}
	for i, t := range ws {
		if t.low == "to" || t.low == "towards" || t.low == "→" || t.low == "-" && i > 0 {
			scan(i + 1)
		}
	}
	if len(out) == 0 {
		for i, t := range ws {
			switch t.low {
			case "pay", "send", "tip", "give", "wire", "transfer", "paying", "sending", "remit", "owe", "owes", "shoot", "zap",
				"reimburse", "repay", "venmo", "spot", "gift", "snd", "sned", "pya", "paay", "sent", "paid", "throw", "forward":
				payee(i+1, skipAfterVerb)
			}
			if len(out) > 0 {
				break
			}
		}
	}
	// "oscar is owed 12 usdc by me".
	for i, t := range ws {
		if len(out) == 0 && t.low == "owed" && i >= 2 && (ws[i-1].low == "is" || ws[i-1].low == "was") {
			if r, ok := recipientOf(ws[i-2]); ok {
				add(r)
			}
		}
	}
	// "bob should get 5 USDC from me", "bob gets 5 from me".
	if len(out) == 0 && len(ws) > 2 && (ws[1].low == "should" || ws[1].low == "gets" || ws[1].low == "can" || ws[1].low == "will" || ws[1].low == "needs") {
		if r, ok := recipientOf(ws[0]); ok {
			add(r)
		}
	}
	if len(out) == 0 && bare && len(ws) > 0 {
		if r, ok := recipientOf(ws[0]); ok {
			add(r)
		}
	}
	return out, agent
}

// checkAmounts returns a question when the amounts can't be used, else
// the single amount ("" when there is none).
func checkAmounts(kind string, amts []amount, what string) (string, *action) {
	if len(amts) == 0 {
		return "", nil
	}
	for _, a := range amts {
		if a.neg {
			q := ask(kind, fmt.Sprintf("%s can't be negative. %s should it be?", capitalize(what), qHowMuch))
			return "", &q
		}
	}
	v := amts[0].value
	for _, a := range amts[1:] {
		if a.value != v {
			var vs []string
			for _, b := range amts {
				vs = append(vs, b.value)
			}
			q := ask(kind, fmt.Sprintf("I see more than one amount (%s). %s should %s be?", strings.Join(vs, ", "), qHowMuch, what))
			return "", &q
		}
	}
	if isZero(v) {
		q := ask(kind, fmt.Sprintf("%s must be more than zero. %s should it be?", capitalize(what), qHowMuch))
		return "", &q
	}
	return v, nil
}
