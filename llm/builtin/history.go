package builtin

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Questions about what the agent paid (issue 33 item 4) go to
// payment_history, which answers from the payment records: "what did I
// pay last week?", "did the payment to alice go through?", "show my last
// 5 payments", "how much did I send on base?", "any pending payments?".
// Questions about what came in stay scan_payments ("did anyone pay me?",
// "any new payments?"). "cancel the invoice for 5 usdc", "cancel invoice
// 3f2a9c1e", "void that invoice" go to cancel_invoice.

// pastSend are the words of money that left: "I paid", "did I send".
var pastSend = map[string]bool{"paid": true, "sent": true, "spent": true, "spend": true, "pay": true, "send": true,
	"transferred": true, "transfer": true, "wired": true, "tipped": true, "gave": true, "give": true}

// paymentNouns name a payment.
var paymentNouns = map[string]bool{"payment": true, "payments": true, "transfer": true, "transfers": true,
	"transaction": true, "transactions": true, "txs": true, "tx": true, "txns": true, "txn": true}

// historyish: a question about the payments this agent made.
func historyish(c clause) bool {
	if len(c.toks) == 0 {
		return false
	}
	// "send 5 usdc to bob for the last payment" is a payment, "withdraw
	// all my payments to G…" a withdrawal; "did I send bob 5 usdc?" a
	// question.
	if !questionWords[c.toks[0].low] && (payishStrict(c) && len(amounts(c, nil)) > 0 ||
		c.has("withdraw", "withdrawal", "withdrawing", "sweep", "cashout") || c.seq("cash", "out") >= 0) {
		return false
	}
	if c.has("history") && (c.hasAny(paymentNouns) || c.has("payment", "spending", "sending", "outgoing")) {
		return true // "payment history", "transaction history"
	}
	if c.has("outgoing") {
		return true
	}
	// Money that came in is scan_payments's: "did anyone pay me", "have I
	// been paid", "did I get paid".
	if incomingAsked(c) {
		return false
	}
	// "I paid", "I sent", "did I send", "have I paid", "I've spent",
	// "what did I spend", "how much have I sent".
	for i := 0; i+1 < len(c.toks); i++ {
		w, next := c.toks[i].low, c.toks[i+1].low
		switch w {
		case "i", "we", "i've", "ive", "we've":
			if pastSend[next] && next != "pay" && next != "send" && next != "give" && next != "transfer" {
				return true
			}
			if (next == "have" || next == "already") && i+2 < len(c.toks) && pastSend[c.toks[i+2].low] {
				return true
			}
		case "did", "have", "has":
			if (next == "i" || next == "we" || next == "you") && i+2 < len(c.toks) && pastSend[c.toks[i+2].low] {
				return true
			}
		}
		// "the payments I made", "transfers we've made".
		if (w == "i" || w == "we" || w == "i've" || w == "we've") && next == "made" && c.hasAny(paymentNouns) {
			return true
		}
	}
	// "my last 5 payments", "the latest payment", "most recent transfers".
	for i, t := range c.toks {
		switch t.low {
		case "last", "latest", "recent", "previous", "past":
			for j := i + 1; j < len(c.toks) && j <= i+3; j++ {
				if paymentNouns[c.toks[j].low] {
					return !c.has("new", "incoming", "received")
				}
			}
		}
	}
	if c.has("payment", "payments", "transfer", "transfers", "transaction", "transactions", "money") {
		// "did the payment to bob go through?", "is the payment to bob
		// confirmed?", "status of my payment to bob", "payments to bob".
		if c.seq("go", "through") >= 0 || c.seq("gone", "through") >= 0 || c.seq("went", "through") >= 0 ||
			c.has("arrive", "arrived", "land", "landed", "confirmed", "settled", "status", "happened", "stuck", "bounced", "reverted") {
			return true
		}
		if i := c.find("to"); i > 0 && paymentNouns[c.toks[i-1].low] && !payishStrict(c) && len(amounts(c, nil)) == 0 {
			return true
		}
		// "any pending payments?", "which payments failed?", "were any
		// payments refused?", "show confirmed payments".
		if c.has("pending", "failed", "fail", "refused", "rejected", "declined", "unconfirmed", "confirmed", "completed", "successful", "flight", "outstanding") && !c.has("invoice", "invoices") {
			return true
		}
	}
	// "list my eth payments", "show my transfers on base", "payments
	// from the past 24 hours": payments of this agent, a list asked for.
	if c.hasAny(paymentNouns) && (!payishStrict(c) || questionWords[c.toks[0].low]) && (c.has("my", "our") && c.has("list", "show", "view", "see", "display", "what", "which", "all", "give", "get") ||
		historyWindowed(c)) {
		return true
	}
	// "is anything still on its way?", "did bob get the money?", "has bob
	// been paid yet?".
	if c.seq("on", "its", "way") >= 0 || c.seq("on", "the", "way") >= 0 || c.seq("in", "flight") >= 0 {
		return true
	}
	if i := c.find("did", "has", "have"); i >= 0 && i+2 < len(c.toks) {
		if r, ok := recipientOf(c.toks[i+1]); ok && r != "" {
			rest := c.toks[i+2].low
			if rest == "get" || rest == "got" || rest == "receive" || rest == "received" || rest == "been" && i+3 < len(c.toks) && c.toks[i+3].low == "paid" {
				return true
			}
		}
	}
	return false
}

// historyWindowed: the clause names a time of the past ("yesterday",
// "the past 24 hours", "last week").
func historyWindowed(c clause) bool {
	since, _ := historyWindow(c, time.Time{})
	return since != ""
}

// incomingAsked: the clause asks about money that came in.
func incomingAsked(c clause) bool {
	return c.has("incoming", "received", "receive", "inbound", "deposit", "deposits", "arrived") && !c.has("sent", "paid", "to") ||
		c.seq("paid", "me") >= 0 || c.seq("pay", "me") >= 0 || c.seq("sent", "me") >= 0 || c.seq("send", "me") >= 0 ||
		c.seq("i", "been", "paid") >= 0 || c.seq("i", "get", "paid") >= 0 || c.seq("i", "got", "paid") >= 0 ||
		c.seq("we", "been", "paid") >= 0 || c.has("anyone", "anybody", "someone", "somebody") || c.seq("new", "payments") >= 0
}

// questionWords start a question about what happened.
var questionWords = map[string]bool{"did": true, "have": true, "has": true, "what": true, "what's": true, "whats": true, "how": true,
	"was": true, "is": true, "were": true, "when": true, "which": true, "show": true, "list": true, "where": true, "why": true}

// hasAny reports whether any word is in set.
func (c clause) hasAny(set map[string]bool) bool {
	for _, t := range c.toks {
		if set[t.low] {
			return true
		}
	}
	return false
}

// receiveWords follow the payee in "did bob get …", "has bob been paid".
var receiveWords = map[string]bool{"get": true, "got": true, "receive": true, "received": true, "been": true}

// historyWords are words of a history question that are never its
// recipient.
var historyWords = map[string]bool{"get": true, "go": true, "went": true, "through": true, "arrive": true, "arrived": true,
	"confirmed": true, "yet": true, "last": true, "latest": true, "recent": true, "recently": true, "most": true,
	"happened": true, "status": true, "so": true, "far": true, "been": true, "history": true,
	"yesterday": true, "yesterday's": true, "today's": true, "todays": true, "tonight": true, "lately": true, "ever": true,
	"this": true, "past": true, "previous": true, "earlier": true, "before": true, "already": true, "out": true, "anything": true}

// buildHistory is payment_history's call: who, which status, chain,
// asset, when and how many the question asks about.
func buildHistory(c clause, now time.Time) action {
	args := map[string]any{}
	if who := historyRecipient(c); who != "" {
		args["recipient"] = who
	}
	if chs := chainsOf(c); len(chs) == 1 && chs[0] != "all" {
		args["chain"] = chs[0]
	}
	for _, t := range c.toks {
		if sym, ok := assets[t.low]; ok && t.low != "dollar" && t.low != "dollars" && t.low != "bucks" && t.low != "usd" {
			args["asset"] = sym
			break
		}
	}
	if _, ok := args["recipient"]; !ok {
		if s := historyStatus(c); s != "" {
			args["status"] = s
		}
	}
	since, until := historyWindow(c, now)
	if since != "" {
		args["since"] = since
	}
	if until != "" {
		args["until"] = until
	}
	if n := historyLimit(c); n > 0 {
		args["limit"] = n
	}
	return call("history", "payment_history", args)
}

// historyRecipient is the person a history question names: "to bob",
// "paid bob", "sent bob", "did bob get …", "has bob been paid".
func historyRecipient(c clause) string {
	for i, t := range c.toks {
		if i+1 >= len(c.toks) {
			break
		}
		switch t.low {
		case "to", "paid", "sent", "pay", "send", "transferred", "tipped", "gave", "give", "did", "has", "have":
			j := i + 1
			for j < len(c.toks) && (skipAfterTo[c.toks[j].low] || c.toks[j].low == "the") {
				j++
			}
			if j >= len(c.toks) {
				continue
			}
			if (t.low == "did" || t.low == "has" || t.low == "have") && !(j+1 < len(c.toks) && receiveWords[c.toks[j+1].low]) {
				continue
			}
			if historyWords[c.toks[j].low] {
				continue
			}
			if r, ok := recipientOf(c.toks[j]); ok {
				return r
			}
		}
	}
	return ""
}

// historyStatus is the status a list question filters by.
func historyStatus(c clause) string {
	switch {
	case c.has("pending", "unconfirmed", "outstanding", "stuck") || c.seq("in", "flight") >= 0 || c.seq("on", "its", "way") >= 0 ||
		c.seq("on", "the", "way") >= 0 || c.seq("still", "going") >= 0:
		return "open"
	case c.has("failed", "fail", "bounced", "reverted") || c.seq("didn't", "go", "through") >= 0 || c.seq("did", "not", "go", "through") >= 0:
		return "failed"
	case c.has("refused", "rejected", "declined", "blocked", "denied"):
		return "refused"
	case c.has("confirmed", "completed", "successful", "settled"):
		return "confirmed"
	}
	return ""
}

// historyWindow reads the time a question asks about: "last week" and
// "the last 7 days" (a span back from now: "7d"), "the past 24 hours",
// "today", "yesterday", "this week", "this month", "last month",
// "this year".
func historyWindow(c clause, now time.Time) (since, until string) {
	day := func(t time.Time) string { return t.Format("2006-01-02") }
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for i, t := range c.toks {
		next := func(k int) string {
			if i+k < len(c.toks) {
				return c.toks[i+k].low
			}
			return ""
		}
		switch t.low {
		case "today", "today's", "todays":
			return day(today), ""
		case "yesterday", "yesterday's":
			y := today.AddDate(0, 0, -1)
			return day(y), day(y)
		case "last", "past", "previous":
			if n, ok := historyCount(next(1)); ok {
				if u := spanUnit(next(2)); u != "" {
					return strconv.Itoa(n) + u, ""
				}
			}
			switch next(1) {
			case "week", "7":
				return "7d", ""
			case "day", "24":
				return "24h", ""
			case "month":
				first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
				return day(first.AddDate(0, -1, 0)), day(first.AddDate(0, 0, -1))
			case "year":
				return day(time.Date(now.Year()-1, 1, 1, 0, 0, 0, 0, time.UTC)), day(time.Date(now.Year()-1, 12, 31, 0, 0, 0, 0, time.UTC))
			case "hour":
				return "1h", ""
			}
		case "this":
			switch next(1) {
			case "week":
				back := (int(today.Weekday()) + 6) % 7 // since Monday
				return day(today.AddDate(0, 0, -back)), ""
			case "month":
				return day(time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)), ""
			case "year":
				return day(time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC)), ""
			}
		}
	}
	return "", ""
}

// spanUnit is payment_history's unit for a word of time.
func spanUnit(w string) string {
	switch w {
	case "hour", "hours", "hrs", "hr", "h":
		return "h"
	case "day", "days", "d":
		return "d"
	case "week", "weeks", "wks", "w":
		return "w"
	case "minute", "minutes", "mins", "min":
		return "m"
	}
	return ""
}

// historyCount reads a small count: a number or a number word.
func historyCount(w string) (int, bool) {
	if v, ok := numberWords[w]; ok {
		w = v
	}
	n, err := strconv.Atoi(w)
	return n, err == nil && n > 0 && n <= 1000
}

// historyLimit is how many payments the question asks for: "last 5
// payments", "my 3 most recent payments" (5, 3); "the last payment",
// "what did I send most recently" (1).
func historyLimit(c clause) int {
	for i, t := range c.toks {
		switch t.low {
		case "last", "latest", "recent", "previous", "most":
			if i+1 < len(c.toks) {
				if n, ok := historyCount(c.toks[i+1].low); ok && i+2 < len(c.toks) && (paymentNouns[c.toks[i+2].low] || c.toks[i+2].low == "ones") {
					return min(n, 50)
				}
			}
		}
		if n, ok := historyCount(t.low); ok && i+2 < len(c.toks) && (c.toks[i+1].low == "most" || c.toks[i+1].low == "latest" || c.toks[i+1].low == "last") {
			return min(n, 50) // "my 3 most recent payments"
		}
	}
	for i, t := range c.toks {
		switch t.low {
		case "last", "latest":
			if i+1 < len(c.toks) && (c.toks[i+1].low == "payment" || c.toks[i+1].low == "transfer" || c.toks[i+1].low == "transaction" || c.toks[i+1].low == "one" || c.toks[i+1].low == "tx") {
				return 1
			}
		case "recent":
			if i+1 < len(c.toks) && (c.toks[i+1].low == "payment" || c.toks[i+1].low == "transfer" || c.toks[i+1].low == "transaction") {
				return 1
			}
		case "recently", "lately":
			if c.has("most") {
				return 1
			}
		}
	}
	return 0
}

// cancelInvoiceVerbs withdraw an invoice.
var cancelInvoiceVerbs = map[string]bool{"cancel": true, "void": true, "delete": true, "remove": true, "scrap": true,
	"revoke": true, "retract": true, "kill": true, "drop": true, "annul": true, "discard": true, "nix": true, "invalidate": true, "cancelling": true}

// cancelInvoiceish: "cancel the invoice for 5 usdc", "void that invoice",
// "cancel invoice 3f2a9c1e".
func cancelInvoiceish(c clause) bool {
	if !c.has("invoice", "invoices", "bill") && invoiceRef(c) == "" {
		return false
	}
	for _, t := range c.toks {
		if cancelInvoiceVerbs[t.low] {
			return true
		}
	}
	return false
}

// buildCancelInvoice is cancel_invoice's call: by id or link, else by the
// amount, asset and memo the user named ("the hosting invoice"). Without
// any, the conversation's last invoice is meant (followUp); here it asks.
func buildCancelInvoice(c clause) action {
	if ref := invoiceRef(c); ref != "" {
		return call("cancelinvoice", "cancel_invoice", map[string]any{"invoice_id": ref})
	}
	args := map[string]any{}
	if amts := amounts(c, nil); len(amts) == 1 {
		args["amount"] = amts[0].value
		if a := assetOf(c, amts); a != "" {
			args["asset"] = a
		}
	}
	if memo := cancelMemo(c); memo != "" {
		args["memo"] = memo
	}
	if len(args) == 0 {
		return ask("cancelinvoice", "Which invoice should I cancel? Give its id or say what it asks for, e.g. “cancel the invoice for 5 USDC”; “show my invoices” lists them.")
	}
	return call("cancelinvoice", "cancel_invoice", args)
}

// cancelMemo is the word naming an invoice by what it is for: "the
// hosting invoice", "the invoice for hosting".
func cancelMemo(c clause) string {
	skip := map[string]bool{"the": true, "my": true, "that": true, "this": true, "an": true, "a": true, "open": true, "unpaid": true,
		"pending": true, "last": true, "latest": true, "new": true, "old": true, "one": true, "please": true, "it": true}
	for i, t := range c.toks {
		if t.low != "invoice" && t.low != "bill" {
			continue
		}
		if i > 0 {
			w := c.toks[i-1].low
			if !skip[w] && !cancelInvoiceVerbs[w] && !isAssetWord(w) {
				if _, _, _, num := parseNumber(w); !num && len(w) > 2 {
					return w
				}
			}
		}
		if i+2 < len(c.toks) && c.toks[i+1].low == "for" {
			w := c.toks[i+2].low
			if _, _, _, num := parseNumber(w); !num && !skip[w] && !isAssetWord(w) {
				return strings.Join(wordsFrom(c, i+2), " ")
			}
		}
	}
	return ""
}

// wordsFrom is the clause's words from i on.
func wordsFrom(c clause, i int) []string {
	var out []string
	for _, t := range c.toks[i:] {
		out = append(out, t.low)
	}
	return out
}

// describeHistory answers payment_history's result.
func describeHistory(r result, d map[string]any) string {
	items := list(r.detail, "payments")
	matched, _ := count(d, "matched")
	what := historyScope(r)
	if matched == 0 && len(items) == 0 {
		return fmt.Sprintf("I found no payments%s in your payment records.", what)
	}
	var b strings.Builder
	if len(items) == 1 && matched <= 1 {
		b.WriteString("Your payment" + what + ": " + historyLine(items[0]))
	} else {
		fmt.Fprintf(&b, "You made %s%s", plural(matched, "payment"), what)
		var parts []string
		for _, k := range []string{"confirmed", "open", "failed", "refused"} {
			if n, _ := count(d, k); n > 0 {
				label := k
				if k == "open" {
					label = "still on its way"
				}
				parts = append(parts, fmt.Sprintf("%d %s", n, label))
			}
		}
		if len(parts) > 0 {
			b.WriteString(" (" + strings.Join(parts, ", ") + ")")
		}
		if len(items) < matched {
			fmt.Fprintf(&b, "; the %d newest:", len(items))
		} else {
			b.WriteString(":")
		}
		b.WriteString(itemLines(items, historyLine))
	}
	var totals []string
	for _, t := range list(d["totals"]) {
		m := obj(t)
		s := money(str(m, "confirmed"), str(m, "asset")) + onChain(str(m, "chain"))
		if open := str(m, "open"); open != "" && open != "0" {
			s += fmt.Sprintf(" (and %s still on its way)", money(open, str(m, "asset")))
		}
		totals = append(totals, s)
	}
	if len(totals) > 0 && matched > 1 {
		b.WriteString("\nIn total: " + strings.Join(totals, "; ") + ". Failed and refused payments moved nothing and are not counted.")
	}
	if partial, _ := d["partial"].(bool); partial {
		b.WriteString("\n(Only your newest records were read; older ones are not counted.)")
	}
	return b.String()
}

// historyScope says what the question asked for: " to bob on base since …".
func historyScope(r result) string {
	s := ""
	if st := argStr(r, "status"); st != "" {
		s = map[string]string{"open": " still on their way", "pending": " pending", "broadcast": " broadcast", "confirmed": " confirmed",
			"failed": " that failed", "refused": " that were refused"}[st]
	}
	if a := argStr(r, "asset"); a != "" {
		s = " in " + strings.ToUpper(a) + s
	}
	if who := argStr(r, "recipient"); who != "" {
		s += " to " + who
	}
	if ch := argStr(r, "chain"); ch != "" {
		s += onChain(ch)
	}
	if since := argStr(r, "since"); since != "" {
		if until := argStr(r, "until"); until != "" && until == since {
			s += " on " + since
		} else if _, err := time.Parse("2006-01-02", since); err == nil {
			s += " since " + since
		} else {
			s += " in the last " + spanWords(since)
		}
	}
	return s
}

// spanWords is "7d" in words: "7 days".
func spanWords(s string) string {
	n, u := strings.TrimRight(s, "mhdw"), strings.TrimLeft(s, "0123456789")
	unit := map[string]string{"m": "minute", "h": "hour", "d": "day", "w": "week"}[u]
	k, err := strconv.Atoi(n)
	if unit == "" || err != nil {
		return s
	}
	return plural(k, unit)
}

// historyLine is one payment: amount, recipient, chain, status, time, tx.
func historyLine(v any) string {
	m := obj(v)
	who := str(obj(m["recipient"]), "name")
	if who == "" {
		who = str(obj(m["recipient"]), "address")
	}
	amount := money(str(m, "amount"), str(m, "asset"))
	if all, _ := m["all"].(bool); all {
		amount = "everything in " + str(m, "asset")
	}
	s := amount + " to " + orDefault(who, "?") + onChain(str(m, "chain"))
	switch st := str(m, "status"); st {
	case "confirmed":
		s += ": confirmed"
	case "pending", "broadcast":
		s += ": on its way (not confirmed yet; don't send it again)"
	case "failed":
		s += ": failed"
	case "refused":
		s += ": refused, nothing was sent"
	default:
		s += ": " + st
	}
	if why := str(m, "reason"); why != "" && (str(m, "status") == "failed" || str(m, "status") == "refused") {
		s += " (" + strings.TrimRight(why, ".") + ")"
	}
	if at := str(m, "createdAt"); at != "" {
		if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
			s += ", " + t.UTC().Format("2006-01-02 15:04 UTC")
		}
	}
	if link := str(m, "txLink"); link != "" {
		s += " — " + link
	} else if tx := str(m, "txHash"); tx != "" {
		s += " — tx " + tx
	}
	return s
}

// describeCancelledInvoice answers cancel_invoice's result.
func describeCancelledInvoice(d map[string]any) string {
	what := money(str(d, "amount"), str(d, "asset"))
	if memo := str(d, "memo"); memo != "" {
		what += " for “" + memo + "”"
	}
	if b, _ := d["alreadyCancelled"].(bool); b {
		return fmt.Sprintf("Invoice %s (%s) was already cancelled; nothing changed.", str(d, "id"), what)
	}
	return fmt.Sprintf("Cancelled invoice %s (%s): it can no longer be paid, and its payment link now says so.", str(d, "id"), what)
}
