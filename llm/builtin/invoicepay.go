package builtin

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/veilhq/veil/agent/intent"
)

// Paying an invoice (pay_invoice): "pay invoice 3f2a9c1e-…", "settle
// https://host/pay/<id>", "please pay this invoice: <link>", "pay <link>".
// The invoice is named by its id or payment link; the tool reads its
// amount, asset and chain, so the user states none of them (an amount
// they do state is passed on, and must match).

var (
	// rePayLink is a payment link: http(s)://…/pay/<id>.
	rePayLink = regexp.MustCompile(`^(?i:https?)://[^\s/]+(?:/[^\s]*)?/pay/[A-Za-z0-9][A-Za-z0-9-]{7,63}/?$`)
	// reInvoiceID is an invoice id: 8-64 letters, digits and dashes, with
	// a digit (UUIDs; not a word like "tomorrow").
	reInvoiceIDWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{7,63}$`)
	reUUID          = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// invoiceWords name an invoice.
var invoiceWords = map[string]bool{"invoice": true, "invoices": true, "bill": true, "bills": true, "id": true, "#": true, "number": true, "no": true}

// invoiceRef is the invoice a clause names: a payment link anywhere, or
// an id-like word after "invoice" (and "invoice id", "invoice #", …).
func invoiceRef(c clause) string {
	for _, t := range c.toks {
		if rePayLink.MatchString(t.raw) {
			return t.raw
		}
	}
	for i, t := range c.toks {
		w := strings.TrimPrefix(t.raw, "#")
		if reUUID.MatchString(w) && i > 0 && (c.toks[i-1].low == "pay" || c.toks[i-1].low == "settle") {
			return w // "pay 3f2a9c1e-…": a UUID is no amount and no name
		}
		if i == 0 || !reInvoiceIDWord.MatchString(w) || !reAnyDigit.MatchString(w) {
			continue
		}
		for j := i - 1; j >= 0 && j >= i-3; j-- {
			if invoiceWords[c.toks[j].low] {
				if c.toks[j].low == "invoice" || c.toks[j].low == "invoices" || c.toks[j].low == "bill" || c.toks[j].low == "bills" {
					return w
				}
				continue
			}
			break
		}
	}
	return ""
}

// settleVerb: the clause asks to pay something owed (not "pay bob 5").
func settleVerb(c clause) bool {
	return c.has("pay", "settle", "paying", "settling", "clear") || c.seq("take", "care", "of") >= 0
}

// payInvoiceish: a request to pay a named invoice, or to pay an invoice
// without naming it ("pay the invoice": the planner asks which).
func payInvoiceish(c clause) bool {
	if !settleVerb(c) {
		return false
	}
	if invoiceRef(c) != "" {
		return true
	}
	// "pay the invoice", "settle my bill": not "create an invoice and
	// have them pay it", not "has bob paid my invoice".
	return c.has("invoice", "bill") && len(amounts(c, nil)) == 0 &&
		!c.has("create", "make", "new", "generate", "issue", "send", "draft", "raise", "request", "paid", "unpaid", "pending", "show", "list", "check", "status")
}

// reInvoiceNamed is "invoice <id>" (and "invoice id <id>", "invoice #<id>")
// anywhere in a message.
var reInvoiceNamed = regexp.MustCompile(`(?i)\b(?:invoice|bill)\s+(?:(?:id|number|no\.?)\s+)?#?\s*([A-Za-z0-9][A-Za-z0-9-]{7,63})\b`)

// messageRef is the one invoice the whole message names outside quoted
// text ("could you pay this invoice? <link>"), or "" when it names none
// or several.
func messageRef(text string) string {
	masked := intent.Mask(text)
	seen := map[string]bool{}
	for _, f := range strings.Fields(masked) {
		if w := strings.TrimRight(strings.TrimLeft(f, intent.LeadTrim), tailTrim); rePayLink.MatchString(w) {
			seen[w] = true
		}
	}
	for _, m := range reInvoiceNamed.FindAllStringSubmatch(masked, -1) {
		if reAnyDigit.MatchString(m[1]) {
			seen[m[1]] = true
		}
	}
	if len(seen) != 1 {
		return ""
	}
	for r := range seen {
		return r
	}
	return ""
}

// buildPayInvoice: pay_invoice(invoice, amount?).
func buildPayInvoice(c clause) action {
	ref := invoiceRef(c)
	if ref == "" {
		ref = messageRef(c.text)
	}
	if ref == "" {
		return ask("payinvoice", "Which invoice should I pay? Give me its id or its payment link, e.g. “pay invoice 3f2a9c1e-…” or “pay https://…/pay/3f2a9c1e-…”.")
	}
	args := map[string]any{"invoice": ref}
	value, q := checkAmounts("payinvoice", amounts(c, nil), "the amount")
	if q != nil {
		return *q
	}
	if value != "" {
		args["amount"] = value
	}
	return call("payinvoice", "pay_invoice", args)
}

// describePayInvoice reads pay_invoice's result.
func describePayInvoice(r result, d map[string]any) string {
	id := firstNonEmpty(str(d, "invoice"), argStr(r, "invoice"))
	what := money(str(d, "amount"), str(d, "asset"))
	if str(d, "status") == "pending_approval" {
		return fmt.Sprintf("Nothing was paid yet: the owner's policy holds the payment of invoice %s (%s to %s%s) for the owner's approval (%s). The owner approves or denies approval %s with a signature from the owner wallet; if nobody decides by %s it expires unpaid.",
			id, what, orDefault(str(d, "recipient"), "the payee"), onChain(str(d, "chain")), strings.Join(strList(d["reasons"]), "; "), str(d, "approvalId"), str(d, "expiresAt"))
	}
	s := fmt.Sprintf("Paid invoice %s: sent %s to %s%s.", id, what, orDefault(str(d, "payee"), "the payee"), onChain(str(d, "chain")))
	if memo := str(d, "memo"); memo != "" {
		s += fmt.Sprintf(" The invoice is for “%s”.", memo)
	}
	return s + txText(d)
}
