package builtin

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/veilhq/veil/agent/intent"
	"github.com/veilhq/veil/chains"
)

const (
	// The beginnings of the planner's questions; a short reply to one of
	// them ("10 USDC", "bob", "weekly") completes the request it asked about.
	qHowMuch    = "How much"
	qWhatAmount = "What amount"
	qWho        = "Who should I"
	qWhere      = "Where should I withdraw"
	qHowOften   = "How often"

	defaultMemo = "Payment request"
)

// continuationPrefixes are the questions a bare reply completes. Only
// those whose reply carries what a payment tool needs to see in the
// user's own message of the turn (the amount, the destination address:
// docs/tools.md, "the restatement rule"); "Who should I send 5 USDC to?"
// and "How often…?" ask for the whole request again instead.
var continuationPrefixes = []string{qHowMuch, qWhatAmount, qWhere}

const helpText = `I'm your Veil agent. Here is what I can do:
- Send private payments: “send 0.5 USDC to bob”, “pay alice.veil 10 XLM”
- Check your balance: “what's my balance on solana”
- Scan for incoming payments: “scan for payments”
- Invoices: “create an invoice for 25 USDC for the logo work”, “show my invoices”
- Recurring payments: “every week send 5 ZEN to carol until March”, “list my schedules”, “pause schedule 3f2a”
- Withdraw what you received: “withdraw everything to 0xabc…”
- Names: “who is bob.veil”, “register my name”, “who am I”
- Also: “fund my wallet” (test networks), “privacy check”, “remember that I prefer USDC”
You can ask for several things at once, e.g. “pay alice.veil 10 XLM and create an invoice for 25 USDC”.`

const notificationsText = "Your agent's notifications are in its inbox, not in this chat: a notification is raised when a payment arrives (found by a scan), when it sends a payment or a withdrawal, when an invoice is paid, and when a scheduled payment runs or fails. Read them with “veil notifications <agent>” or GET /agent/<id>/notifications. Here I can “scan for payments” or “show my invoices”."

const greetText = "Hello! " + helpText

const unknownText = "Sorry, I didn't understand what you'd like me to do.\n\n" + helpText

const thanksText = "You're welcome! Anything else I can do for you?"

// build turns a clause of a known kind into actions. inherit holds the
// arguments of the previous request when the clause continues it.
func build(kind string, c clause, inherit map[string]any, now time.Time) []action {
	switch kind {
	case "greet":
		return []action{ask("greet", greetText)}
	case "thanks":
		return []action{ask("thanks", thanksText)}
	case "help":
		return []action{ask("help", helpText)}
	case "manage":
		return []action{buildManage(c)}
	case "schedule":
		return []action{buildSchedule(c, inherit, now)}
	case "list_schedules":
		return []action{call(kind, "list_schedules", map[string]any{})}
	case "withdraw":
		return []action{buildWithdraw(c)}
	case "fund":
		return chainCalls(kind, "fund_wallet", c)
	case "invoice":
		return []action{buildInvoice(c)}
	case "privacy":
		return []action{call(kind, "privacy_check", map[string]any{})}
	case "register":
		return chainCalls(kind, "register_name", c)
	case "balance":
		return chainCalls(kind, "get_balance", c)
	case "info":
		return []action{call(kind, "get_agent_info", map[string]any{})}
	case "resolve":
		return []action{buildResolve(c)}
	case "notifications":
		return []action{ask(kind, notificationsText)}
	case "scan":
		return chainCalls(kind, "scan_payments", c)
	case "pay":
		return []action{buildPay(c, inherit)}
	case "payinvoice":
		return []action{buildPayInvoice(c)}
	case "fetchpaid":
		return []action{buildFetchPaid(c)}
	case "history":
		return []action{buildHistory(c, now)}
	case "cancelinvoice":
		return []action{buildCancelInvoice(c)}
	}
	return []action{ask("unknown", unknownText)}
}

// chainCalls calls a tool whose only argument is an optional chain: once
// per chain named (or once without a chain).
func chainCalls(kind, tool string, c clause) []action {
	chs := chainsOf(c)
	if len(chs) == 0 {
		return []action{call(kind, tool, map[string]any{})}
	}
	out := make([]action, 0, len(chs))
	for _, ch := range chs {
		out = append(out, call(kind, tool, map[string]any{"chain": ch}))
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// buildPay: send_payment(recipient, amount, asset?, chain?) or
// pay_agent(agent_name, amount, asset?) for "name.veil" or "agent name"
// without a chain.
func buildPay(c clause, inherit map[string]any) action {
	amts := amounts(c, nil)
	rs, agentWord := recipients(c, inherit != nil)
	asset := assetOf(c, amts)
	if asset == "" && inherit != nil {
		asset, _ = inherit["asset"].(string)
	}
	chs := chainsOf(c)
	if len(chs) == 0 && inherit != nil {
		if ch, ok := inherit["chain"].(string); ok {
			chs = []string{ch}
		}
	}
	for _, a := range amts {
		if a.unknownUnit != "" {
			return ask("pay", fmt.Sprintf("I don't know the unit “%s”, so I haven't sent anything. %s should I send, in which asset? For example “%s USDC” or “%s ETH”.", a.unknownUnit, qHowMuch, a.value, a.value))
		}
	}
	value, q := checkAmounts("pay", amts, "the amount")
	if q != nil {
		return *q
	}
	to := ""
	if len(rs) == 1 {
		to = rs[0]
	}
	assetSp := ""
	if asset != "" {
		assetSp = asset + " "
	}
	if value == "" {
		switch {
		case c.has("everything", "all") && to != "":
			return ask("pay", fmt.Sprintf("I can only send a specific amount. %s %sshould I send to %s?", qHowMuch, assetSp, to))
		case to != "":
			return ask("pay", fmt.Sprintf("%s %sshould I send to %s?", qHowMuch, assetSp, to))
		default:
			return ask("pay", fmt.Sprintf("%s %sshould I send, and to whom? For example “send 5 USDC to bob”.", qHowMuch, assetSp))
		}
	}
	if len(rs) > 1 {
		return ask("pay", fmt.Sprintf("I can pay one recipient per request: should each of %s get %s %s? Please say it per person, e.g. “send %s %s to %s and %s %s to %s”.",
			strings.Join(rs, " and "), value, strings.TrimSpace(assetSp), value, strings.TrimSpace(assetSp), rs[0], value, strings.TrimSpace(assetSp), rs[1]))
	}
	if to == "" {
		return ask("pay", fmt.Sprintf("%s send %s %sto? Say it with the name (like bob or bob.veil) or a stealth meta-address, e.g. “send %s %sto bob”.", qWho, value, assetSp, value, assetSp))
	}
	if len(chs) > 1 || (len(chs) == 1 && chs[0] == "all") {
		options := "which chain"
		if chs[0] != "all" {
			options = strings.Join(chs, " or ")
		}
		return ask("pay", fmt.Sprintf("A payment goes out on one chain: which should I use to send %s %sto %s (%s)?", value, assetSp, to, options))
	}
	if (strings.HasSuffix(to, chains.NameSuffix) || agentWord) && len(chs) == 0 && !addressLike(to) {
		args := map[string]any{"agent_name": to, "amount": value}
		if asset != "" {
			args["asset"] = asset
		}
		return call("pay", "pay_agent", args)
	}
	args := map[string]any{"recipient": to, "amount": value}
	if asset != "" {
		args["asset"] = asset
	}
	if len(chs) == 1 {
		args["chain"] = chs[0]
	}
	return call("pay", "send_payment", args)
}

var skipBeforeAddress = map[string]bool{
	"the": true, "my": true, "our": true, "this": true, "address": true, "wallet": true, "account": true,
	"external": true, "stealth": true, "payment": true, "main": true, "cold": true, "hardware": true,
	"one-time": true, "onetime": true, "one-off": true, "received": true, "incoming": true,
}

// addressAfter is the address (or name) after one of the words ws.
func addressAfter(c clause, ws ...string) string {
	for i, t := range c.toks {
		hit := false
		for _, w := range ws {
			if t.low == w {
				hit = true
			}
		}
		if !hit {
			continue
		}
		j := i + 1
		for j < len(c.toks) && skipBeforeAddress[c.toks[j].low] {
			j++
		}
		if j < len(c.toks) {
			if addressLike(c.toks[j].raw) || reLongToken.MatchString(c.toks[j].raw) {
				return c.toks[j].raw
			}
			if r, ok := recipientOf(c.toks[j]); ok {
				return r
			}
		}
	}
	return ""
}

// buildWithdraw: withdraw(from, to, amount?) or withdraw_all(to).
func buildWithdraw(c clause) action {
	// Cashing out, sweeping, emptying or draining means everything.
	all := c.has("everything", "all", "entire", "full", "max", "maximum", "whole", "sweep", "cashout", "offramp", "off-ramp", "empty", "drain") ||
		c.seq("cash", "out") >= 0 || c.seq("cash", "me", "out") >= 0
	from := addressAfter(c, "from")
	to := addressAfter(c, "to", "into", "towards")
	amts := amounts(c, nil)
	if to == "" {
		return ask("withdraw", qWhere+" to? Give me the destination address, e.g. “withdraw everything to 0x…”.")
	}
	if from != "" {
		args := map[string]any{"from": from, "to": to}
		value, q := checkAmounts("withdraw", amts, "the amount")
		if q != nil {
			return *q
		}
		if value != "" && !all {
			args["amount"] = value
		}
		return call("withdraw", "withdraw", args)
	}
	if all {
		return call("withdraw", "withdraw_all", map[string]any{"to": to})
	}
	if len(amts) > 0 {
		return ask("withdraw", fmt.Sprintf("Which received payment should I withdraw from? Give me its stealth address (“scan for payments” finds them), or say “withdraw everything to %s”.", to))
	}
	return ask("withdraw", fmt.Sprintf("Do you want to withdraw everything to %s? Say “withdraw everything to %s”, or name the stealth address to withdraw from.", to, to))
}

// buildInvoice: create_invoice(amount, memo, asset?) or check_invoices().
func buildInvoice(c clause) action {
	create := c.has("create", "make", "new", "generate", "issue", "send", "draft", "raise", "prepare", "bill", "charge", "request", "write", "add", "need")
	check := c.has("check", "show", "list", "status", "paid", "unpaid", "pending", "outstanding", "see", "view", "any", "which", "what", "invoices", "open", "due")
	amts := amounts(c, nil)
	if !create && (check || len(amts) == 0) {
		return call("invoice", "check_invoices", map[string]any{})
	}
	value, q := checkAmounts("invoice", amts, "the invoice amount")
	if q != nil {
		return *q
	}
	if value == "" {
		return ask("invoice", qWhatAmount+" should the invoice be for? For example “create an invoice for 25 USDC for the logo work”.")
	}
	exp, expFrom, expTo := invoiceExpiry(c)
	memo := memoOf(c, amts[0].idx)
	if expFrom >= 0 {
		// "… for the logo, expires in 2 days": the expiry is not the memo.
		memo = cleanFree(strings.Replace(memo, strings.TrimSpace(c.text[expFrom:expTo]), "", 1))
		for _, w := range []string{" and", ",", " that", " which", " it"} {
			memo = strings.TrimSuffix(memo, w)
		}
		if memo = cleanFree(memo); memo == "" {
			memo = defaultMemo
		}
	}
	args := map[string]any{"amount": value, "memo": memo}
	if asset := assetOf(c, amts); asset != "" {
		args["asset"] = asset
	}
	if chs := chainsOf(c); len(chs) == 1 && chs[0] != "all" {
		args["chain"] = chs[0]
	}
	if exp != "" {
		args["expires_in"] = exp
	}
	return call("invoice", "create_invoice", args)
}

var memoMarkers = map[string]bool{
	"for": true, "memo": true, "description": true, "titled": true, "called": true, "labelled": true,
	"labeled": true, "regarding": true, "re": true, "about": true, "reason": true, "note": true,
}

// memoOf is the invoice description: quoted text in the clause, or what
// follows "for"/"memo"/… (a "for" right before the amount introduces the
// amount, not the memo), up to the amount or the end of the clause.
// Default "Payment request".
func memoOf(c clause, amtIdx int) string {
	if q := firstQuoted(c.raw()); q != "" {
		return q
	}
	for i := 0; i < len(c.toks); i++ {
		if !memoMarkers[c.toks[i].low] || i == amtIdx-1 || i == amtIdx {
			continue
		}
		end := c.to
		if i < amtIdx {
			end = c.toks[amtIdx].start
		}
		m := cleanFree(c.text[c.toks[i].end:end])
		for _, w := range []string{" of", " for", " worth", " at", " with"} {
			m = strings.TrimSuffix(m, w)
		}
		if m != "" {
			if r := []rune(m); len(r) > 200 {
				m = string(r[:200])
			}
			return m
		}
	}
	return defaultMemo
}

// firstQuoted returns the text of the first quoted span in s.
func firstQuoted(s string) string {
	m := intent.Mask(s)
	for i := 0; i < len(s); i++ {
		if m[i] == ' ' && s[i] != ' ' {
			j := i
			for j < len(s) && (m[j] == ' ' || m[j] == '\n') {
				j++
			}
			if q := cleanFree(s[i:j]); q != "" {
				return q
			}
			i = j
		}
	}
	return ""
}

// buildResolve: resolve_name(name).
func buildResolve(c clause) action {
	if r := otherName(c); r != "" {
		return call("resolve", "resolve_name", map[string]any{"name": r})
	}
	for _, t := range c.toks {
		if strings.HasSuffix(t.low, chains.NameSuffix) {
			if r, ok := recipientOf(t); ok {
				return call("resolve", "resolve_name", map[string]any{"name": r})
			}
		}
	}
	for i, t := range c.toks {
		switch t.low {
		case "is", "resolve", "up", "lookup", "look", "find", "of", "whois", "who's", "whos", "who’s", "does":
			j := i + 1
			for j < len(c.toks) && (c.toks[j].low == "the" || c.toks[j].low == "name" || c.toks[j].low == "agent" || c.toks[j].low == "user") {
				j++
			}
			if j < len(c.toks) {
				if r, ok := recipientOf(c.toks[j]); ok {
					return call("resolve", "resolve_name", map[string]any{"name": r})
				}
			}
		}
	}
	for _, t := range c.toks {
		if strings.HasSuffix(t.low, "'s") || strings.HasSuffix(t.low, "’s") {
			if r, ok := recipientOf(t); ok {
				return call("resolve", "resolve_name", map[string]any{"name": r})
			}
		}
	}
	return ask("resolve", "Which name should I look up? For example “who is bob.veil”.")
}

// reExpiry finds an invoice's lifetime in words: "expires in 2 days",
// "valid for a week", "due within 24 hours", "good for 30 minutes".
var reExpiry = regexp.MustCompile(`(?i)\b(?:(?:that |which |it )?(?:expires?|expiring|valid|good|payable|open|due|lasts?|available)\s+(?:in|for|within|after)|expiry(?: of| in)?|expiring after)\s+(a|an|one|two|three|four|five|six|seven|ten|twelve|fourteen|thirty|\d{1,3})\s+(minutes?|mins?|hours?|hrs?|days?|weeks?|months?)\b`)

var smallNumbers = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10, "twelve": 12, "fourteen": 14, "thirty": 30}

// invoiceExpiry reads create_invoice's expires_in ("2d", "1w", "30m")
// from the clause, and the byte span of the words that said it.
func invoiceExpiry(c clause) (string, int, int) {
	seg := c.text[c.from:c.to]
	m := reExpiry.FindStringSubmatchIndex(seg)
	if m == nil {
		return "", -1, -1
	}
	nw, unit := strings.ToLower(seg[m[2]:m[3]]), strings.ToLower(seg[m[4]:m[5]])
	n, ok := smallNumbers[nw]
	if !ok {
		v, err := strconv.Atoi(nw)
		if err != nil || v <= 0 {
			return "", -1, -1
		}
		n = v
	}
	var u string
	switch {
	case strings.HasPrefix(unit, "min"):
		u = "m"
	case strings.HasPrefix(unit, "h"):
		u = "h"
	case strings.HasPrefix(unit, "d"):
		u = "d"
	case strings.HasPrefix(unit, "w"):
		u = "w"
	case strings.HasPrefix(unit, "month"):
		n, u = n*30, "d"
	}
	return fmt.Sprintf("%d%s", n, u), c.from + m[0], c.from + m[1]
}
