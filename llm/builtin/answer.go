package builtin

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/veilhq/veil/chains"
)

// describe writes one readable paragraph about a tool result.
func describe(r result) string {
	if r.status == "error" {
		return describeError(r)
	}
	if text, ok := r.detail.(string); ok && r.name != "resolve_name" {
		// Not the JSON the contract asks for: repeat it as it is.
		text = strings.TrimSpace(text)
		if r := []rune(text); len(r) > 400 {
			text = string(r[:400]) + "…"
		}
		return fmt.Sprintf("%s returned: %s", orDefault(r.name, "The tool"), orDefault(text, "nothing"))
	}
	d := obj(r.detail)
	if str(d, "status") == "pending" && str(d, "paymentId") != "" && str(d, "message") != "" {
		// A payment on its way whose outcome is unknown (agent/tools
		// PendingPayment): the tool's message says what is known.
		return str(d, "message")
	}
	switch r.name {
	case "send_payment", "pay_agent":
		who := firstNonEmpty(argStr(r, "recipient"), argStr(r, "agent_name"), str(d, "recipient", "agentName", "to", "name"))
		if str(d, "status") == "pending_approval" {
			// Held for the owner (docs/approvals.md): nothing was sent.
			return fmt.Sprintf("Nothing was sent yet: the owner's policy holds the payment of %s to %s%s for the owner's approval (%s). The owner approves or denies approval %s with a signature from the owner wallet; if nobody decides by %s it expires unpaid.",
				money(firstNonEmpty(str(d, "amount"), argStr(r, "amount")), firstNonEmpty(str(d, "asset"), argStr(r, "asset"))),
				orDefault(who, "the recipient"), onChain(firstNonEmpty(str(d, "chain"), argStr(r, "chain"))),
				strings.Join(strList(d["reasons"]), "; "), str(d, "approvalId"), str(d, "expiresAt"))
		}
		s := fmt.Sprintf("Sent %s to %s%s.", money(firstNonEmpty(str(d, "amount"), argStr(r, "amount")), firstNonEmpty(str(d, "asset"), argStr(r, "asset"))),
			orDefault(who, "the recipient"), onChain(firstNonEmpty(str(d, "chain"), argStr(r, "chain"))))
		return s + txText(d)
	case "pay_invoice":
		return describePayInvoice(r, d)
	case "fetch_paid":
		return describeFetchPaid(r, d)
	case "scan_payments":
		n, hasCount := count(d, "count", "found", "new")
		where := onChain(firstNonEmpty(str(d, "chain"), argStr(r, "chain")))
		items := list(r.detail, "payments", "new", "received")
		if !hasCount {
			n = len(items)
		}
		var s string
		switch {
		case n == 0:
			s = fmt.Sprintf("I scanned for payments%s: nothing new.", where)
		case n == 1:
			s = fmt.Sprintf("I scanned for payments%s and found 1 new payment.", where)
		default:
			s = fmt.Sprintf("I scanned for payments%s and found %d new payments.", where, n)
		}
		s += itemLines(items, paymentLine)
		if open := list(d["unwithdrawn"]); len(open) > 0 {
			s += "\nReceived and not yet withdrawn (“withdraw everything to <address>” moves them):" + itemLines(open, paymentLine)
		}
		return s + unavailableText(d)
	case "get_balance":
		return describeBalance(r)
	case "create_invoice":
		s := fmt.Sprintf("Created invoice %s for %s", orDefault(str(d, "id"), ""), money(firstNonEmpty(str(d, "amount"), argStr(r, "amount")), firstNonEmpty(str(d, "asset"), argStr(r, "asset"))))
		s = strings.Replace(s, "invoice  for", "an invoice for", 1)
		if memo := firstNonEmpty(str(d, "memo"), argStr(r, "memo")); memo != "" {
			s += fmt.Sprintf(" (“%s”)", memo)
		}
		s += onChain(firstNonEmpty(str(d, "chain"), argStr(r, "chain")))
		if exp := str(d, "expiresAt", "expires_at"); exp != "" {
			s += ", payable until " + exp
		}
		s += "."
		if link := str(d, "paymentLink", "payment_link", "link", "url"); link != "" {
			s += " Share this payment link with the payer: " + link
		}
		return s
	case "payment_history":
		return describeHistory(r, d)
	case "cancel_invoice":
		return describeCancelledInvoice(d)
	case "check_invoices":
		items := list(r.detail, "invoices")
		if len(items) == 0 {
			if n, ok := count(d, "count"); ok && n > 0 {
				return fmt.Sprintf("You have %s.", plural(n, "invoice"))
			}
			return "You have no invoices yet."
		}
		pending, paid := 0, 0
		for _, it := range items {
			if strings.EqualFold(str(obj(it), "status"), "paid") {
				paid++
			} else {
				pending++
			}
		}
		total := len(items)
		if n, ok := count(d, "count"); ok && n >= total {
			total = n
			pending, _ = count(d, "pending")
			paid, _ = count(d, "paid")
		}
		s := fmt.Sprintf("You have %s (%d pending, %d paid)", plural(total, "invoice"), pending, paid)
		if total > len(items) {
			s += fmt.Sprintf("; the %d newest:", len(items))
		} else {
			s += ":"
		}
		return s + itemLines(items, invoiceLine)
	case "resolve_name":
		return describeName(r, d)
	case "register_name":
		return fmt.Sprintf("Your name %sis registered%s.", nameSp(str(d, "fullName", "name")), onChain(firstNonEmpty(str(d, "chain"), argStr(r, "chain")))) + txText(d)
	case "get_agent_info":
		return describeAgent(d)
	case "withdraw":
		amt := firstNonEmpty(str(d, "amount"), argStr(r, "amount"))
		what := "everything"
		if amt != "" && amt != "all" {
			what = money(amt, str(d, "asset"))
		}
		return fmt.Sprintf("Withdrew %s from %s to %s%s.", what, firstNonEmpty(argStr(r, "from"), str(d, "from"), "the stealth address"),
			firstNonEmpty(argStr(r, "to"), str(d, "to"), "your address"), onChain(str(d, "chain"))) + txText(d)
	case "withdraw_all":
		items := list(r.detail, "withdrawn", "withdrawals", "transactions", "txs", "results")
		to := firstNonEmpty(argStr(r, "to"), str(d, "to"), "your address")
		var s string
		switch {
		case len(items) > 0:
			s = fmt.Sprintf("Withdrew everything to %s in %s:", to, plural(len(items), "transaction")) + itemLines(items, withdrawalLine)
		case d["failed"] != nil:
			s = fmt.Sprintf("Nothing could be withdrawn to %s.", to)
		default:
			if n, ok := count(d, "count"); ok && n == 0 {
				return fmt.Sprintf("There was nothing to withdraw to %s.", to)
			}
			s = fmt.Sprintf("Withdrew everything to %s.", to) + txText(d)
		}
		if failed := list(d["failed"]); len(failed) > 0 {
			s += "\nThese could not be withdrawn:" + itemLines(failed, func(v any) string {
				m := obj(v)
				return strings.TrimSpace(fmt.Sprintf("%s%s: %s", str(m, "from"), onChain(str(m, "chain")), cleanErr(str(m, "error"))))
			})
		}
		if w := str(d, "warning"); w != "" {
			s += "\nNote: " + w
		}
		return s
	case "privacy_check":
		return describePrivacy(r.detail)
	case "fund_wallet":
		amt := str(d, "amount")
		s := "Funded your wallet"
		if amt != "" {
			s += " with " + money(amt, str(d, "asset"))
		}
		return s + onChain(firstNonEmpty(str(d, "chain"), argStr(r, "chain"))) + " from the test faucet." + txText(d)
	case "schedule_payment":
		return "Scheduled: " + scheduleText(d, r.args) + "."
	case "list_schedules":
		items := list(r.detail, "schedules")
		if len(items) == 0 {
			return "You have no scheduled payments."
		}
		s := fmt.Sprintf("You have %s", plural(len(items), "scheduled payment"))
		var states []string
		for _, k := range []string{"active", "paused", "cancelled"} {
			if n, ok := count(d, k); ok && n > 0 {
				states = append(states, fmt.Sprintf("%d %s", n, k))
			}
		}
		if len(states) > 0 {
			s += " (" + strings.Join(states, ", ") + ")"
		}
		return s + ":" + itemLines(items, func(v any) string { return scheduleText(obj(v), nil) })
	case "manage_schedule":
		action := argStr(r, "action")
		verb := map[string]string{"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"}[action]
		if verb == "" {
			verb = "Updated"
		}
		id := firstNonEmpty(str(d, "id"), argStr(r, "schedule_id"))
		s := fmt.Sprintf("%s schedule %s", verb, shortID(id))
		if str(d, "amount") != "" {
			s += fmt.Sprintf(" (%s to %s %s)", money(str(d, "amount"), str(d, "asset")), str(d, "recipient"), str(d, "interval"))
		}
		if st := str(d, "status"); st != "" {
			s += "; it is now " + st
		}
		return s + "."
	case "save_memory":
		c := firstNonEmpty(str(d, "content"), argStr(r, "content"))
		if c == "" {
			return "Got it, I'll remember that."
		}
		return fmt.Sprintf("Got it, I'll remember: %s.", strings.TrimRight(c, "."))
	}
	return fmt.Sprintf("%s: done.%s", orDefault(r.name, "The tool"), flat(r.detail))
}

// describeError explains a failed call in plain words.
func describeError(r result) string {
	msg := errorText(r.detail)
	if q, ok := confirmQuestion(msg); ok {
		return q
	}
	what := map[string]string{
		"send_payment":  "send " + money(argStr(r, "amount"), argStr(r, "asset")) + " to " + argStr(r, "recipient"),
		"pay_agent":     "pay " + argStr(r, "agent_name") + " " + money(argStr(r, "amount"), argStr(r, "asset")),
		"scan_payments": "scan for payments", "get_balance": "check your balance",
		"create_invoice": "create the invoice", "check_invoices": "list your invoices",
		"resolve_name": "look up " + argStr(r, "name"), "register_name": "register your name",
		"get_agent_info": "get your agent's details", "withdraw": "withdraw from " + argStr(r, "from"),
		"withdraw_all": "withdraw everything to " + argStr(r, "to"), "privacy_check": "run the privacy check",
		"fund_wallet": "fund your wallet", "schedule_payment": "set up the scheduled payment",
		"list_schedules": "list your schedules", "manage_schedule": argStr(r, "action") + " " + scheduleRef(r),
		"save_memory": "save that memory", "pay_invoice": "pay invoice " + argStr(r, "invoice"),
		"payment_history": "read your payment records", "cancel_invoice": "cancel that invoice",
	}[r.name]
	if what == "" {
		what = "run " + orDefault(r.name, "that tool")
	}
	what = strings.Join(strings.Fields(what), " ")
	s := fmt.Sprintf("I couldn't %s: %s.", what, strings.TrimRight(msg, "."))
	if hint := errorHint(msg); hint != "" {
		s += " " + hint
	}
	return s
}

func errorText(detail any) string {
	switch v := detail.(type) {
	case string:
		return cleanErr(v)
	case map[string]any:
		for _, k := range []string{"error", "message", "detail", "reason"} {
			switch e := v[k].(type) {
			case string:
				if e != "" {
					return cleanErr(e)
				}
			case map[string]any:
				if m, ok := e["message"].(string); ok && m != "" {
					return cleanErr(m)
				}
			}
		}
	}
	if detail == nil {
		return "something went wrong"
	}
	b, _ := json.Marshal(detail)
	return cleanErr(string(b))
}

// cleanErr drops Go package prefixes ("chains: ", "tools: ") and puts
// raw base units (wei) and long balances in words (chains.ErrorWords).
func cleanErr(s string) string {
	s = strings.TrimSpace(chains.ErrorWords(s))
	for _, p := range []string{"chains: ", "tools: ", "tool: ", "agent: ", "enclave: ", "persistence: ", "llm: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	if s == "" {
		return "something went wrong"
	}
	return s
}

func errorHint(msg string) string {
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "insufficient"):
		return "Your balance is too low for this; say “what's my balance” to check it (on a test network, “fund my wallet” adds test funds)."
	case strings.Contains(low, "unknown recipient") || strings.Contains(low, "not found") || strings.Contains(low, "no such"):
		return "Check the name or id; “who is <name>” looks a name up."
	case strings.Contains(low, "unavailable") || strings.Contains(low, "timeout") || strings.Contains(low, "timed out"):
		return "The network isn't reachable right now; please try again in a moment."
	case strings.Contains(low, "unknown asset"):
		return "That asset isn't carried on this chain."
	case strings.Contains(low, "invalid amount"):
		return "Amounts are positive decimals, like 0.5 or 25."
	}
	return ""
}

// scheduleRef names the schedule a manage_schedule call meant: "schedule
// 3f2a", or "the weekly 5 USDC payment to bob".
func scheduleRef(r result) string {
	if id := argStr(r, "schedule_id"); id != "" {
		return "schedule " + id
	}
	parts := []string{"the"}
	iv := argStr(r, "interval")
	if iv != "" && !strings.HasPrefix(iv, "every-") {
		parts = append(parts, iv) // "the weekly …", "the friday …"
	}
	if a := argStr(r, "amount"); a != "" {
		parts = append(parts, money(a, argStr(r, "asset")))
	}
	parts = append(parts, "payment")
	if to := argStr(r, "recipient"); to != "" {
		parts = append(parts, "to "+to)
	}
	if strings.HasPrefix(iv, "every-") {
		parts = append(parts, everyText(iv))
	}
	return strings.Join(parts, " ")
}

// strList reads a JSON array of strings.
func strList(v any) []string {
	var out []string
	if xs, ok := v.([]any); ok {
		for _, x := range xs {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// confirmMarker is how a tool says a call waits for the user's yes
// (tools.ErrNeedsConfirmation): "needs the user's confirmation (why): …;
// to confirm: send 5 ETH to bob.veil on ethereum".
const (
	confirmMarker = "needs the user's confirmation"
	confirmWhat   = "; to confirm: "
)

// confirmQuestion turns a needs-confirmation error into the question the
// user answers with "yes" or "no".
func confirmQuestion(msg string) (string, bool) {
	i := strings.Index(msg, confirmMarker)
	j := strings.LastIndex(msg, confirmWhat)
	if i < 0 {
		return "", false
	}
	if j < 0 {
		// Another check's question (a payment still on its way): its own words.
		rest := strings.TrimLeft(strings.TrimPrefix(msg[i:], confirmMarker), ": ")
		return fmt.Sprintf("Before any money moves, please confirm: %s. Reply “yes” to go ahead or “no” to cancel.", strings.TrimRight(rest, ". ")), true
	}
	what := strings.TrimRight(strings.TrimSpace(msg[j+len(confirmWhat):]), ".")
	why := ""
	if k := strings.Index(msg[i:], "("); k >= 0 {
		if e := strings.Index(msg[i+k:], "):"); e >= 0 {
			why = msg[i+k+1 : i+k+e]
		}
	}
	var reasons []string
	for _, w := range strings.Split(why, "; ") {
		if w = confirmReasonWords(strings.TrimSpace(w)); w != "" {
			reasons = append(reasons, w)
		}
	}
	s := "Before any money moves, please confirm"
	if len(reasons) > 0 {
		s += " (" + strings.Join(reasons, "; ") + ")"
	}
	return s + fmt.Sprintf(": should I %s? Reply “yes” to go ahead or “no” to cancel; nothing has been sent yet.", what), true
}

func confirmReasonWords(w string) string {
	switch {
	case w == "":
		return ""
	case strings.HasPrefix(w, "the user did not say which asset"):
		return "you didn't say which asset" + strings.TrimPrefix(w, "the user did not say which asset") + "; for dollars say USDC"
	case strings.HasPrefix(w, "the user did not name "):
		return "you didn't name " + strings.TrimPrefix(w, "the user did not name ")
	case w == "the message corrects its own amount":
		return "you corrected the amount"
	case strings.HasPrefix(w, "the amount was written in other units"):
		return "I converted the amount from the unit you wrote"
	case strings.HasPrefix(w, "the amount comes from an earlier message"), w == "the asset comes from an earlier message":
		return "it repeats what you said earlier"
	case w == "the recipient comes from an earlier message":
		return "the recipient is the one you named earlier"
	case strings.HasPrefix(w, "it is more than"):
		return w
	}
	return w
}
