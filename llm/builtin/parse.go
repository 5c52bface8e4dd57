package builtin

import (
	"github.com/veilhq/veil/agent/intent"

	"fmt"
	"strings"
	"time"
)

// action is what one request in the user's message becomes: a tool call
// (tool and args) or something to say (a question, help, a greeting).
type action struct {
	tool string
	args map[string]any
	say  string
	// kind is the intent that produced the action, also for questions
	// ("pay", "schedule", …); greet/help/thanks/unknown are dropped when
	// anything else was asked.
	kind string
	// from, to: the clause's byte span in the message (for the money gate).
	from, to int
}

func call(kind, tool string, args map[string]any) action {
	return action{kind: kind, tool: tool, args: args}
}

func ask(kind, text string) action { return action{kind: kind, say: text} }

// plan turns the user's message into actions, in the order asked.
func plan(text string, now time.Time) []action {
	if len(text) > maxInput {
		text = text[:maxInput]
	}
	reading := intent.Read(text)
	masked := reading.Masked
	var out []action
	for _, sr := range intent.Sentences(masked) {
		ws := tokenize(text, masked, sr[0], sr[1])
		if len(ws) == 0 {
			continue
		}
		if at, skip, ok := memoryTrigger(ws); ok {
			content := cleanFree(text[ws[at+skip-1].end:sr[1]])
			if content == "" && at > 0 {
				// "I prefer USDC, remember that": the memory is what came before.
				content = cleanFree(strings.TrimSuffix(strings.TrimSpace(text[ws[0].start:ws[at].start]), "and"))
			} else {
				out = append(out, sentence(text, ws[:at], ws[at].start, now)...)
			}
			out = append(out, memory(content))
			continue
		}
		out = append(out, sentence(text, ws, sr[1], now)...)
	}
	out = gate(reading, out)
	if len(out) > maxActions {
		out = append(out[:maxActions:maxActions], ask("limit", fmt.Sprintf("I handle up to %d requests per message; please send the rest separately.", maxActions)))
	}
	// Small talk only counts when nothing else was asked.
	var real []action
	for _, a := range out {
		switch a.kind {
		case "greet", "help", "thanks", "unknown":
		default:
			real = append(real, a)
		}
	}
	if len(real) > 0 {
		return real
	}
	for _, k := range []string{"help", "unknown", "thanks", "greet"} {
		for _, a := range out {
			if a.kind == k {
				return []action{a}
			}
		}
	}
	return []action{ask("unknown", unknownText)}
}

// maxInput bounds the text the planner reads (the API caps messages at
// 8,000 characters; history is not read).
const maxInput = 16 << 10

// maxClauses bounds the clauses read in one sentence (the rest is read as
// part of the last one) and maxActions the requests answered per message.
const (
	maxClauses = 24
	maxActions = 20
)

// memoryTrigger finds "remember (that)", "don't forget", "keep in mind",
// "note that", "make a note (of)", "save (a) memory/note": the request to
// remember runs from there to the end of the sentence and nothing in it is
// acted on.
func memoryTrigger(ws []tok) (at, skip int, ok bool) {
	low := func(i int) string {
		if i >= 0 && i < len(ws) {
			return ws[i].low
		}
		return ""
	}
	for i := range ws {
		n := 0
		switch w := low(i); {
		case w == "remember" || w == "memorize" || w == "memorise":
			// "do you remember …?" is a question, not a request.
			if low(i-1) == "you" && (low(i-2) == "do" || low(i-2) == "did" || low(i-2) == "don't") {
				continue
			}
			n = 1
		case (w == "don't" || w == "dont" || w == "don’t") && low(i+1) == "forget":
			n = 2
		case w == "do" && low(i+1) == "not" && low(i+2) == "forget":
			n = 3
		case w == "keep" && low(i+1) == "in" && low(i+2) == "mind":
			n = 3
		case w == "note" && (low(i+1) == "that" || i == 0 && len(ws) > 1):
			n = 1
		case (w == "make" || w == "take") && low(i+1) == "a" && low(i+2) == "note":
			n = 3
		case w == "take" && low(i+1) == "note":
			n = 2
		case w == "save" && (low(i+1) == "memory" || low(i+1) == "note"):
			n = 2
		case w == "save" && low(i+1) == "a" && (low(i+2) == "memory" || low(i+2) == "note"):
			n = 3
		}
		if n == 0 {
			continue
		}
		for i+n < len(ws) {
			switch low(i + n) {
			case "that", "this", "of", "-", ":", "–":
				n++
				continue
			}
			break
		}
		return i, n, true
	}
	return 0, 0, false
}

// memory builds save_memory from the words after the trigger to the end
// of the sentence, quoted text included, verbatim.
func memory(content string) action {
	if content == "" {
		return ask("memory", "What should I remember?")
	}
	return saveMemory(content)
}

func saveMemory(content string) action {
	if r := []rune(content); len(r) > 500 {
		content = string(r[:500])
	}
	return call("memory", "save_memory", map[string]any{"content": content, "type": memoryType(content)})
}

// memoryType classifies a memory as save_memory's type: instruction (a
// standing rule: "always ask before …", "never pay eve"), preference,
// contact or fact.
func memoryType(content string) string {
	low := " " + strings.ToLower(content) + " "
	if f := strings.Fields(low); len(f) > 0 {
		switch strings.Trim(f[0], ",.:") {
		case "always", "never", "don't", "dont", "do", "only", "ask", "confirm", "use", "make", "stop", "check", "when", "before", "if":
			return "instruction"
		}
	}
	if strings.Contains(low, " you should ") || strings.Contains(low, " you must ") {
		return "instruction"
	}
	for _, w := range []string{"prefer", "favorite", "favourite", " like ", " love ", " hate ", "always", "never", "usually", "default", "rather", " want "} {
		if strings.Contains(low, w) {
			return "preference"
		}
	}
	for _, w := range []string{".veil", "address", "st:", " 0x", "'s name", "is my ", "contact", "friend", "colleague", "brother", "sister", "mom", "dad", "partner", "wife", "husband", "boss"} {
		if strings.Contains(low, w) {
			return "contact"
		}
	}
	return "fact"
}

// cleanFree trims free text: spaces, quotes around it, trailing
// punctuation and a trailing "please".
func cleanFree(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for {
		before := s
		s = strings.TrimSpace(s)
		s = strings.TrimRight(s, ".!;,")
		s = strings.TrimSuffix(s, " please")
		s = strings.TrimLeft(s, ":-–— ")
		if len(s) >= 2 {
			for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"«", "»"}, {"`", "`"}, {"'", "'"}} {
				if strings.HasPrefix(s, q[0]) && strings.HasSuffix(s, q[1]) && len(s) >= len(q[0])+len(q[1]) {
					s = s[len(q[0]) : len(s)-len(q[1])]
				}
			}
		}
		if s == before {
			return s
		}
	}
}

// sentence plans one sentence: its clauses in order. A clause without an
// intent of its own either continues the previous request ("send 5 USDC to
// bob and 3 to carol", "my balance on base and solana") or is part of it
// ("an invoice for design and hosting").
func sentence(text string, ws []tok, sentenceEnd int, now time.Time) []action {
	spans := clauses(ws)
	if len(spans) > maxClauses {
		spans = append(spans[:maxClauses-1:maxClauses-1], [2]int{spans[maxClauses-1][0], spans[len(spans)-1][1]})
	}
	type done struct {
		span [2]int
		kind string
		acts []action
	}
	var res []done
	var pending *[2]int // a leading clause without intent, joined to the next
	mk := func(sp [2]int) clause {
		c := clause{toks: ws[sp[0]:sp[1]]}
		c.from = ws[sp[0]].start
		if sp[1] < len(ws) {
			c.to = ws[sp[1]].start
		} else {
			c.to = sentenceEnd
		}
		c.text = text
		return c
	}
	for _, sp := range spans {
		if pending != nil {
			sp = [2]int{pending[0], sp[1]}
			pending = nil
		}
		c := mk(sp)
		kind := detect(c)
		if kind != "" {
			res = append(res, done{sp, kind, build(kind, c, nil, now)})
			continue
		}
		if len(res) == 0 {
			s := sp
			pending = &s
			continue
		}
		last := &res[len(res)-1]
		if acts, ok := continuation(last.kind, last.acts, c, now); ok {
			res = append(res, done{sp, last.kind, acts})
			continue
		}
		merged := [2]int{last.span[0], sp[1]}
		last.span = merged
		last.acts = build(last.kind, mk(merged), nil, now)
	}
	if pending != nil {
		c := mk(*pending)
		res = append(res, done{*pending, "unknown", []action{bareRequest(c)}})
	}
	var out []action
	for _, d := range res {
		c := mk(d.span)
		for _, a := range d.acts {
			a.from, a.to = c.from, c.to
			out = append(out, a)
		}
	}
	return out
}

// bareRequest answers a message with no recognised request: an amount or
// a name alone gets a pointed question, anything else the short help.
func bareRequest(c clause) action {
	if len(amounts(c, nil)) > 0 {
		return ask("unknown", "What should I do with that amount? For example “send 5 USDC to bob” or “create an invoice for 25 USDC for the logo work”.")
	}
	return ask("unknown", unknownText)
}

// continuation builds a clause that has no verb of its own as another
// request of the same kind as the previous clause, inheriting what it
// leaves out (asset, chain, interval, end date).
func continuation(kind string, prev []action, c clause, now time.Time) ([]action, bool) {
	var inherit map[string]any
	if len(prev) > 0 && prev[len(prev)-1].args != nil {
		inherit = prev[len(prev)-1].args
	}
	switch kind {
	case "pay", "schedule":
		amts := amounts(c, nil)
		rs, _ := recipients(c, true)
		if len(amts) == 0 && len(rs) == 0 {
			return nil, false
		}
		if len(amts) == 0 {
			what := "the same amount"
			if inherit != nil {
				what = fmt.Sprint(inherit["amount"])
				if a, ok := inherit["asset"].(string); ok {
					what += " " + a
				}
			}
			return []action{ask(kind, fmt.Sprintf("Should %s also get %s? Please say it with the amount, e.g. “send %s to %s”.", rs[0], what, what, rs[0]))}, true
		}
		return build(kind, c, inherit, now), true
	case "balance", "scan", "fund", "register":
		if len(chainsOf(c)) == 0 {
			return nil, false
		}
		return build(kind, c, nil, now), true
	}
	return nil, false
}

// detect names the intent of a clause, or "".
func detect(c clause) string {
	switch {
	case len(c.toks) == 0:
		return ""
	case greetingOnly(c):
		if c.has("thanks", "thank", "thx", "ty", "cheers", "appreciated") {
			return "thanks"
		}
		return "greet"
	case thanksOnly(c):
		return "thanks"
	case manageVerb(c) != "" && (scheduleNoun(c) || scheduleID(c) != "" || c.has("paying", "subscription")):
		return "manage"
	case interval(c) != "" && (payish(c) || len(amounts(c, nil)) > 0):
		return "schedule"
	case scheduleNoun(c) && (payish(c) || len(amounts(c, nil)) > 0 || c.has("create", "set", "setup", "add", "new", "make")) &&
		!c.has("list", "show", "view", "see", "what", "which", "my", "all", "any"):
		return "schedule"
	case scheduleNoun(c):
		return "list_schedules"
	case c.has("withdraw", "withdrawal", "withdrawing", "sweep", "cashout") || c.seq("cash", "out") >= 0:
		return "withdraw"
	case fundish(c):
		return "fund"
	case invoiceish(c):
		return "invoice"
	case c.has("privacy", "private", "anonymity", "anonymous", "untraceable", "traceable", "linkable", "linkability", "privacy-check"):
		return "privacy"
	case c.has("register", "registration") || c.seq("claim", "my", "name") >= 0 || c.seq("publish", "my", "name") >= 0 || c.seq("reserve", "my", "name") >= 0:
		return "register"
	case balanceish(c):
		return "balance"
	case infoish(c):
		return "info"
	case resolveish(c):
		return "resolve"
	case scanish(c):
		return "scan"
	case payish(c):
		return "pay"
	case helpish(c):
		return "help"
	case c.hasSuffix(".veil") && len(c.toks) <= 3:
		return "resolve"
	}
	return ""
}

func greetingOnly(c clause) bool {
	for _, t := range c.toks {
		if !greetWords[t.low] && !thanksWords[t.low] {
			return false
		}
	}
	return true
}

func thanksOnly(c clause) bool {
	if !c.has("thanks", "thank", "thx", "ty", "cheers", "appreciated") {
		return false
	}
	for _, t := range c.toks {
		if !thanksWords[t.low] && !greetWords[t.low] {
			return false
		}
	}
	return true
}

func helpish(c clause) bool {
	return c.has("help", "commands", "capabilities", "menu", "options", "usage", "examples") ||
		c.seq("what", "can", "you", "do") >= 0 || c.seq("what", "do", "you", "do") >= 0 ||
		c.seq("how", "does", "this", "work") >= 0 || c.seq("what", "are", "you") >= 0 ||
		c.seq("how", "do", "i") >= 0 || c.seq("what", "can", "i", "do") >= 0
}

// payish: a sending verb, or the noun payment(s) with an amount.
func payish(c clause) bool {
	for _, t := range c.toks {
		if payVerbs[t.low] {
			return true
		}
	}
	return c.has("payment", "payments") && len(amounts(c, nil)) > 0
}

// manageVerb is pause, resume or cancel when the clause says one of them.
func manageVerb(c clause) string {
	for _, t := range c.toks {
		switch t.low {
		case "pause", "suspend", "freeze", "hold":
			return "pause"
		case "resume", "unpause", "reactivate", "restart", "unfreeze", "continue", "reenable", "re-enable":
			return "resume"
		case "cancel", "stop", "delete", "remove", "terminate", "halt", "end", "kill", "disable":
			return "cancel"
		}
	}
	return ""
}

func scheduleNoun(c clause) bool {
	return c.has("schedule", "schedules", "scheduled", "recurring", "subscription", "subscriptions", "autopay", "auto-pay", "standing", "repeating")
}

// scheduleID is the schedule id (or unique prefix) the clause names: the
// word after schedule/id/#/number, or a hex-looking word with a digit.
func scheduleID(c clause) string {
	for i, t := range c.toks {
		if i > 0 {
			switch c.toks[i-1].low {
			case "schedule", "id", "number", "subscription", "#":
				w := strings.TrimPrefix(t.low, "#")
				if len(w) >= 4 && len(w) <= 64 && reName.MatchString(w) && reAnyDigit.MatchString(w) {
					return w
				}
			}
		}
		w := strings.TrimPrefix(t.low, "#")
		if len(w) >= 4 && len(w) <= 64 && reSchedID.MatchString(w) && reAnyDigit.MatchString(w) {
			if _, _, _, isNum := parseNumber(w); isNum && !strings.HasPrefix(t.raw, "#") && (i == 0 || c.toks[i-1].low != "schedule") {
				continue
			}
			return w
		}
	}
	return ""
}

// interval is daily, weekly or monthly, "unsupported" for other periods,
// or "".
func interval(c clause) string {
	ws := c.toks
	for i, t := range ws {
		prev, next := "", ""
		if i > 0 {
			prev = ws[i-1].low
		}
		if i+1 < len(ws) {
			next = ws[i+1].low
		}
		switch t.low {
		case "daily", "everyday", "nightly":
			return "daily"
		case "weekly":
			return "weekly"
		case "monthly":
			return "monthly"
		case "biweekly", "fortnightly", "bimonthly", "yearly", "annually", "annual", "hourly", "quarterly", "semimonthly":
			return "unsupported"
		case "every", "each", "per", "a", "an", "once":
			if t.low == "a" || t.low == "an" || t.low == "per" {
				if prev == "for" || prev == "in" || prev == "until" || prev == "till" || prev == "within" || prev == "than" {
					continue
				}
			}
			if t.low == "once" {
				if next == "a" || next == "per" || next == "every" {
					continue // "once a week": the next word decides
				}
				continue
			}
			switch next {
			case "day", "morning", "night", "evening":
				return "daily"
			case "week":
				return "weekly"
			case "month":
				return "monthly"
			case "year", "hour", "minute", "quarter", "other", "fortnight":
				if t.low == "every" || t.low == "each" || t.low == "per" {
					return "unsupported"
				}
			}
			if (t.low == "every" || t.low == "each") && weekdays[next] {
				return "weekly"
			}
			if t.low == "every" || t.low == "each" {
				if _, ok := smallCount(next); ok && i+2 < len(ws) {
					switch strings.TrimSuffix(ws[i+2].low, "s") {
					case "day", "week", "month", "year", "hour":
						if next == "1" || next == "one" {
							return map[string]string{"day": "daily", "week": "weekly", "month": "monthly"}[strings.TrimSuffix(ws[i+2].low, "s")]
						}
						return "unsupported"
					}
				}
			}
		case "on":
			if strings.HasSuffix(next, "s") && weekdays[next] && next != "weekend" {
				return "weekly"
			}
		}
	}
	return ""
}

func fundish(c clause) bool {
	if c.has("faucet", "airdrop", "refill", "topup", "top-up", "drip") || c.seq("top", "up") >= 0 {
		return true
	}
	if i := c.find("fund"); i >= 0 {
		return true
	}
	return c.has("test", "testnet") && c.has("tokens", "funds", "coins", "money", "eth", "token", "crypto")
}

func invoiceish(c clause) bool {
	if c.has("invoice", "invoices", "invoiced", "invoicing", "billing") {
		return true
	}
	if c.seq("payment", "request") >= 0 || c.seq("payment", "requests") >= 0 || c.seq("payment", "link") >= 0 || c.seq("pay", "link") >= 0 {
		return true
	}
	if c.has("bill", "charge") && len(amounts(c, nil)) > 0 {
		return true
	}
	return c.has("request") && !c.has("funds", "faucet") && len(amounts(c, nil)) > 0
}

func balanceish(c clause) bool {
	if c.has("balance", "balances", "holdings", "portfolio", "funds") && !c.has("send", "pay", "transfer") {
		return true
	}
	if i := c.seq("how", "much"); i >= 0 && c.has("have", "got", "left", "own", "hold", "is", "in", "remaining") && !c.has("receive", "received", "paid", "send", "sent", "pay") {
		return true
	}
	return c.seq("what", "do", "i", "have") >= 0 || c.seq("how", "rich") >= 0 || c.seq("am", "i", "broke") >= 0
}

func infoish(c clause) bool {
	if c.seq("who", "am", "i") >= 0 || c.seq("who", "are", "you") >= 0 || c.has("whoami") {
		return true
	}
	for _, p := range []string{"my", "your"} {
		i := c.find(p)
		for i >= 0 && i+1 < len(c.toks) {
			switch c.toks[i+1].low {
			case "address", "addresses", "meta-address", "meta-addresses", "metaaddress", "meta", "id", "name",
				"details", "info", "information", "profile", "account", "agent", "chains", "wallet", "identity":
				if c.toks[i+1].low == "wallet" && !(i+2 < len(c.toks) && strings.HasPrefix(c.toks[i+2].low, "address")) {
					break
				}
				return true
			}
			next := -1
			for k := i + 1; k < len(c.toks); k++ {
				if c.toks[k].low == p {
					next = k
					break
				}
			}
			i = next
		}
	}
	return c.seq("agent", "info") >= 0 || c.seq("agent", "details") >= 0 || c.seq("about", "me") >= 0 ||
		c.seq("about", "you") >= 0 || c.seq("meta", "address") >= 0 || c.has("info", "whoareyou")
}

func resolveish(c clause) bool {
	if c.has("resolve", "lookup", "whois", "who's", "whos", "who’s") || c.seq("look", "up") >= 0 ||
		c.seq("who", "is") >= 0 || c.seq("address", "of") >= 0 || c.seq("meta-address", "of") >= 0 {
		return true
	}
	if c.has("find", "exist", "exists", "registered") && len(c.toks) <= 6 {
		return true
	}
	for i, t := range c.toks {
		if (strings.HasSuffix(t.low, "'s") || strings.HasSuffix(t.low, "’s")) && i+1 < len(c.toks) {
			switch c.toks[i+1].low {
			case "address", "addresses", "meta-address", "meta":
				return true
			}
		}
	}
	return false
}

func scanish(c clause) bool {
	if c.has("scan", "scanning", "rescan", "incoming", "inbound", "received", "receive", "receiving", "arrived") {
		return true
	}
	if c.seq("paid", "me") >= 0 || c.seq("pay", "me") >= 0 || c.seq("sent", "me") >= 0 || c.seq("send", "me") >= 0 && len(amounts(c, nil)) == 0 {
		return true
	}
	if c.has("payments", "payment", "deposits", "transactions") && !payishStrict(c) {
		return c.has("any", "new", "check", "show", "list", "find", "look", "my", "for", "recent", "latest") || len(c.toks) == 1
	}
	return false
}

// payishStrict: a sending verb (not the nouns payment/payments).
func payishStrict(c clause) bool {
	return c.has("send", "pay", "transfer", "tip", "give", "wire", "remit", "sending", "paying")
}
