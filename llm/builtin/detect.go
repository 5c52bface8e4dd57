package builtin

import (
	"strings"

	"github.com/veilhq/veil/chains"
)

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
	case fetchPaidish(c):
		return "fetchpaid"
	case cancelInvoiceish(c):
		// "cancel the invoice for 5 usdc", "cancel invoice 3f2a9c1e"
		// (history.go): never a new invoice, never a payment.
		return "cancelinvoice"
	case payInvoiceish(c):
		return "payinvoice"
	case manageVerb(c) != "" && (scheduleNoun(c) || scheduleID(c) != "" || c.has("paying", "subscription") ||
		c.has("payment", "payments", "transfer", "transfers", "one") && (interval(c) != "" || c.has("to", "for") || possessive(c) != "")):
		// "pause the weekly 5 USDC payment to bob", "put the daily payment
		// to bob on hold", "stop paying carol".
		return "manage"
	case notificationish(c):
		return "notifications"
	case interval(c) != "" && (payish(c) || len(amounts(c, nil)) > 0),
		c.has("regularly", "periodically", "repeatedly", "recurring", "recurrent") && payish(c),
		len(c.toks) > 0 && c.toks[0].low == "schedule" && !c.has("list", "show", "my"):
		return "schedule"
	case scheduleNoun(c) && (payish(c) || len(amounts(c, nil)) > 0 || c.has("create", "set", "setup", "add", "new", "make")) &&
		!c.has("list", "show", "view", "see", "what", "which", "my", "all", "any"):
		return "schedule"
	case scheduleNoun(c):
		return "list_schedules"
	case historyish(c):
		// What the agent paid (history.go): "did the payment to bob go
		// through?", "what did I pay last week?".
		return "history"
	case c.has("withdraw", "withdrawal", "withdrawing", "sweep", "cashout", "offramp", "off-ramp") || c.seq("cash", "out") >= 0 ||
		c.seq("cash", "me", "out") >= 0 || c.seq("take", "out") >= 0 || c.seq("pull", "out") >= 0 || cashOutToAddress(c):
		return "withdraw"
	case fundish(c):
		return "fund"
	case invoiceRef(c) != "" && !c.has("check", "show", "list", "status", "paid", "unpaid", "pending", "see", "view", "create", "make", "new"):
		// "bob sent me an invoice <link>, pay it": no request of its own;
		// it joins the next clause ("pay it"), which says what to do.
		return ""
	case invoiceish(c):
		return "invoice"
	case c.has("trace", "traced", "track", "tracked", "deanonymize", "doxx", "dox") && !payishStrict(c),
		c.has("privacy", "private", "anonymity", "anonymous", "untraceable", "traceable", "linkable", "linkability", "privacy-check"):
		return "privacy"
	case c.has("register", "registration") || c.has("my") && c.has("name") && c.has("registered", "claim", "reserve", "publish") || c.seq("claim", "my", "name") >= 0 || c.seq("publish", "my", "name") >= 0 || c.seq("reserve", "my", "name") >= 0 ||
		c.has("my") && c.has("name") && c.has("chain", "onchain", "on-chain", "blockchain", "registry", "ledger"):
		// "put my name on chain", "get my name onto the blockchain".
		return "register"
	case otherName(c) != "" && !c.has("scan", "rescan", "scanning") && (c.has("address", "addresses", "meta-address", "meta", "metaaddress", "stealth", "info", "details", "chains", "registered", "who", "resolve") || resolveish(c)):
		// "what's the meta address of bob?": bob's, not the agent's own.
		// "scan for incoming stealth payments" (Wraith's SDK asks it so) names
		// no one: "incoming" after "for" is not a name to resolve.
		return "resolve"
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
	case c.hasSuffix(chains.NameSuffix) && len(c.toks) <= 3:
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
	// Terse: "5 usdc to bob", "$5 → bob".
	if len(c.toks) >= 3 && len(c.toks) <= 6 {
		// With its asset: "7 to nora" after a payment continues it instead.
		if amts := amounts(c, nil); len(amts) == 1 && amts[0].idx <= 1 && assetOf(c, amts) != "" {
			if rs, _ := recipients(c, false); len(rs) == 1 && !c.has("invoice", "request", "from") {
				return true
			}
		}
	}
	// "bob should get 5 USDC from me", "I owe bob 20".
	if len(amounts(c, nil)) > 0 && (c.has("owe", "owes") || c.has("get", "gets", "receive") && (c.seq("from", "me") >= 0 || c.seq("from", "my") >= 0)) {
		return true
	}
	return c.has("payment", "payments") && len(amounts(c, nil)) > 0
}

// manageVerb is pause, resume or cancel when the clause says one of them.
func manageVerb(c clause) string {
	for _, t := range c.toks {
		switch t.low {
		case "pause", "suspend", "freeze":
			return "pause"
		case "hold":
			// "put … on hold", "hold the payment"; "hold off on paying" is not.
			if !c.has("off") {
				return "pause"
			}
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
				if len(w) >= 4 && len(w) <= 64 && reIDWord.MatchString(w) && reAnyDigit.MatchString(w) {
					return w
				}
			}
		}
		w := strings.TrimPrefix(t.low, "#")
		if len(w) >= 4 && len(w) <= 64 && reSchedID.MatchString(w) && reAnyDigit.MatchString(w) {
			// A number is an amount, unless it names the schedule: after
			// "schedule" or "#", or right before "schedule" ("resume the
			// 20034714 schedule": an id prefix that happens to be all
			// digits, as about one in forty are).
			named := strings.HasPrefix(t.raw, "#") || i > 0 && c.toks[i-1].low == "schedule" ||
				i+1 < len(c.toks) && (c.toks[i+1].low == "schedule" || c.toks[i+1].low == "subscription")
			if _, _, _, isNum := parseNumber(w); isNum && !named {
				continue
			}
			return w
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
	// "invoice 5 usdc for test tokens" is an invoice whose memo says test.
	return c.has("test", "testnet") && c.has("tokens", "funds", "coins", "money", "eth", "token", "crypto") &&
		!c.has("invoice", "invoices", "bill", "charge", "request", "memo")
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

// otherName is another agent the clause asks about: "of bob", "for
// bob", "bob's", "bob.veil" (never me, my, you).
func otherName(c clause) string {
	for i, t := range c.toks {
		if strings.HasSuffix(t.low, chains.NameSuffix) {
			if r, ok := recipientOf(t); ok {
				return r
			}
		}
		if (t.low == "of" || t.low == "for") && i+1 < len(c.toks) {
			j := i + 1
			for j < len(c.toks) && (c.toks[j].low == "the" || c.toks[j].low == "agent" || c.toks[j].low == "user" || c.toks[j].low == "name") {
				j++
			}
			if j < len(c.toks) {
				if r, ok := recipientOf(c.toks[j]); ok {
					return r
				}
			}
		}
	}
	return possessive(c)
}

// possessive is the name in "bob's" (not "it's", "what's", "that's").
func possessive(c clause) string {
	for _, t := range c.toks {
		if strings.HasSuffix(t.low, "'s") || strings.HasSuffix(t.low, "’s") {
			switch strings.TrimSuffix(strings.TrimSuffix(t.low, "'s"), "’s") {
			case "it", "what", "that", "there", "who", "where", "how", "here", "he", "she", "let", "today", "week", "month", "everyone", "one":
				continue
			}
			if r, ok := recipientOf(t); ok {
				return r
			}
		}
	}
	return ""
}

// notificationish: questions about notifications, alerts and the inbox.
func notificationish(c clause) bool {
	return c.has("notification", "notifications", "notified", "notify", "alert", "alerts", "inbox", "alerted")
}

// cashOutToAddress: everything (or all my funds) sent, moved or taken to a
// plain address is a withdrawal, not a payment.
func cashOutToAddress(c clause) bool {
	if !(c.has("everything", "all", "entire", "whole") && c.has("send", "move", "transfer", "get", "empty", "drain", "pull", "take", "put")) && !c.has("empty", "drain") {
		return false
	}
	to := addressAfter(c, "to", "into")
	return to != "" && addressLike(to)
}

func balanceish(c clause) bool {
	if c.has("afford", "enough") && !c.has("invoice") {
		return true // "can I afford to send 100 usdc?"
	}
	if c.seq("in", "my", "wallet") >= 0 || c.seq("in", "my", "account") >= 0 || c.seq("do", "i", "own") >= 0 || c.seq("do", "i", "hold") >= 0 ||
		c.seq("have", "i", "got") >= 0 || c.seq("how", "much", "money") >= 0 || c.seq("my", "money") >= 0 || c.seq("net", "worth") >= 0 ||
		c.seq("how", "much", "crypto") >= 0 || c.seq("my", "holdings") >= 0 || c.seq("my", "assets") >= 0 || c.seq("my", "tokens") >= 0 ||
		c.seq("my", "coins") >= 0 || c.seq("what's", "left") >= 0 || c.seq("whats", "left") >= 0 || c.seq("can", "i", "afford") >= 0 ||
		c.seq("my", "bal") >= 0 || c.has("enough", "broke") || c.seq("out", "of", "money") >= 0 || c.seq("out", "of", "funds") >= 0 || c.has("bal", "balanace", "balnce", "blance", "ballance", "balence", "balnace", "balace", "balanse", "balanc", "blanace",
		"balane", "ballence", "bakance", "balamce", "balancr", "balaance", "blalance", "baalnce", "balnaces", "ballances") {
		return !c.has("send", "pay", "transfer")
	}
	if c.has("balance", "balances", "holdings", "portfolio", "funds") && !c.has("send", "pay", "transfer") {
		return true
	}
	if i := c.seq("how", "much"); i >= 0 && c.has("have", "got", "left", "own", "hold", "is", "in", "remaining", "hav", "hve", "ahve", "haev") && !c.has("receive", "received", "paid", "send", "sent", "pay") {
		return true
	}
	return c.seq("what", "do", "i", "have") >= 0 || c.seq("how", "rich") >= 0 || c.seq("am", "i", "broke") >= 0
}

func infoish(c clause) bool {
	// "my receiving address", "my deposit address", "where can people pay me".
	if i := c.find("my"); i >= 0 && i+2 < len(c.toks) {
		switch c.toks[i+1].low {
		case "receiving", "deposit", "public", "stealth", "payment", "own", "veil", "main", "incoming":
			if strings.HasPrefix(c.toks[i+2].low, "address") || strings.HasPrefix(c.toks[i+2].low, "meta") {
				return true
			}
		}
	}
	if c.has("where", "how") && c.has("people", "someone", "others", "anyone", "they", "clients", "customers") &&
		(c.seq("pay", "me") >= 0 || c.seq("send", "me") >= 0 || c.has("send", "pay") && c.seq("reach", "me") >= 0) &&
		!c.has("did", "has", "have") {
		return true // "where can people pay me?"
	}
	if c.has("address", "addresses", "meta-address") && (c.seq("pay", "me") >= 0 || c.seq("send", "me") >= 0 || c.seq("paid", "at") >= 0) {
		return true
	}
	if c.has("address", "addresses", "meta-address") && c.has("receive", "receiving", "get") && c.has("i", "my", "me") && !c.has("did", "have", "any", "has") {
		return true // "what's the address I receive payments at"
	}
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
	if c.has("resolve", "lookup", "whois", "who's", "whos", "who’s") || c.seq("look", "up") >= 0 || c.has("look") && c.has("up") ||
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
	if c.seq("been", "paid") >= 0 || c.seq("got", "paid") >= 0 || c.seq("get", "paid") >= 0 || c.seq("paid", "yet") >= 0 {
		return true
	}
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
