package builtin

import (
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/agent/intent"
)

// moneyKinds are the requests whose tools move value (the tools'
// MovesValue): they run only behind the money gate.
var moneyKinds = map[string]bool{"pay": true, "schedule": true, "withdraw": true, "payinvoice": true, "fetchpaid": true}

// gate applies the money gate (package intent) to the planned actions: a
// request to move value in a part of the message that is not an
// instruction (a negation, question, condition, past event, someone
// else's words, a statement, pasted text) becomes an answer or one
// confirming question; nothing read from pasted text is acted on.
func gate(r intent.Reading, acts []action) []action {
	out := make([]action, 0, len(acts))
	pasted := false
	for _, a := range acts {
		mood := actionMood(r, a)
		switch {
		case mood == intent.Pasted && a.kind != "memory":
			if !pasted {
				out = append(out, ask("gate", pastedText))
				pasted = true
			}
		case moneyKinds[a.kind] && mood != intent.Instruction:
			out = append(out, ask("gate", gateText(a, mood)))
		default:
			out = append(out, a)
		}
	}
	if !pasted && onlySmallTalk(out) {
		for _, c := range r.Clauses {
			if c.Mood == intent.Pasted {
				return []action{ask("gate", pastedText)}
			}
		}
	}
	return out
}

// actionMood is how the part of the message behind an action is meant:
// for a call, the clauses that state its amount or destination (so "tip
// ana 1 usdc, she was great" is read by its first clause), else every
// clause of its span.
func actionMood(r intent.Reading, a action) intent.Mood {
	key := argText(a.args, "amount", "max_amount")
	has := func(seg string) bool { return intent.States(seg, key) }
	if key == "" {
		if key = argText(a.args, "to", "invoice"); key != "" {
			has = func(seg string) bool { return strings.Contains(seg, key) }
		}
	}
	if key != "" {
		found, m := false, intent.Instruction
		for _, c := range r.Clauses {
			if c.Start < a.to && a.from < c.End && has(r.Masked[c.Start:c.End]) {
				found, m = true, max(m, c.Mood)
			}
		}
		if found {
			return m
		}
	}
	return r.Mood(a.from, a.to)
}

func onlySmallTalk(acts []action) bool {
	for _, a := range acts {
		switch a.kind {
		case "greet", "help", "thanks", "unknown":
		default:
			return false
		}
	}
	return true
}

const pastedText = "I don't act on quoted, pasted or example text (emails, messages, memos, notes), and I can't translate or summarise it: nothing in it was acted on and nothing was sent. If you want me to pay someone now, say it in your own words, e.g. “send 5 USDC to bob”."

// gateText answers a request to move value that was not an instruction.
func gateText(a action, mood intent.Mood) string {
	p := phrase(a)
	switch mood {
	case intent.Negated:
		return fmt.Sprintf("OK, I won't do that: nothing was sent. When you do want it, say “%s”.", p)
	case intent.Question:
		return fmt.Sprintf("Nothing has been sent. Whether to go ahead is your call; I can check first (“what's my balance”, “who is bob”, “privacy check”). Payments are private stealth payments and can't be undone. If you decide to, say “%s”.", p)
	case intent.HowTo:
		return fmt.Sprintf("Just tell me in your own words and I'll do it, e.g. “%s”. Nothing has been sent yet.", p)
	case intent.Conditional:
		return fmt.Sprintf("I don't act on conditions (“if …”, “once …”): I'd have no way to know when it happens. When it does, tell me “%s” and I'll send it. Nothing was sent.", p)
	case intent.Past:
		return fmt.Sprintf("Noted: that sounds like it already happened, so I haven't sent anything. If you want me to send another, say “%s”.", p)
	case intent.Future:
		if a.kind == "schedule" || a.tool == "schedule_payment" {
			return fmt.Sprintf("Recurring payments start one interval from now; I can't start one at a later date. Say “%s” when you want it to begin. Nothing was set up.", p)
		}
		return fmt.Sprintf("I can only send a one-off payment right away, not at a later time. When it's time, tell me “%s” (or, for a repeating payment, “%s every friday”). Nothing was sent.", p, p)
	case intent.Reported:
		return fmt.Sprintf("I only move money on your own instruction, not on someone else's words: nothing was sent. If you want it, say “%s”.", p)
	case intent.Pasted:
		return pastedText
	}
	if a.tool == "" {
		return fmt.Sprintf("Just to be sure before any money moves: do you want me to make a payment now? If so, say it with the amount and the recipient, e.g. “%s”.", p)
	}
	return fmt.Sprintf("Just to be sure before any money moves: do you want me to %s now? If so, say “%s”.", p, p)
}

// phrase is the request in words the user can send back.
func phrase(a action) string {
	arg := func(k string) string {
		if a.args == nil {
			return ""
		}
		v, _ := a.args[k].(string)
		return v
	}
	money := strings.TrimSpace(arg("amount") + " " + arg("asset"))
	switch a.tool {
	case "send_payment":
		return strings.Join(strings.Fields(fmt.Sprintf("send %s to %s %s", money, arg("recipient"), onChainWord(arg("chain")))), " ")
	case "pay_agent":
		return fmt.Sprintf("pay %s %s", arg("agent_name"), money)
	case "schedule_payment":
		return fmt.Sprintf("send %s to %s %s", money, arg("recipient"), everyText(arg("interval")))
	case "withdraw_all":
		return "withdraw everything to " + arg("to")
	case "pay_invoice":
		return "pay invoice " + arg("invoice")
	case "fetch_paid":
		return strings.TrimSpace(fmt.Sprintf("fetch %s paying up to %s %s", arg("url"), arg("max_amount"), arg("asset")))
	case "withdraw":
		if arg("amount") != "" {
			return fmt.Sprintf("withdraw %s from %s to %s", arg("amount"), arg("from"), arg("to"))
		}
		return fmt.Sprintf("withdraw from %s to %s", arg("from"), arg("to"))
	}
	switch a.kind {
	case "schedule":
		return "send 5 USDC to bob every week"
	case "withdraw":
		return "withdraw everything to 0x…"
	case "payinvoice":
		return "pay invoice <id or payment link>"
	}
	return "send 5 USDC to bob"
}

func onChainWord(ch string) string {
	if ch == "" {
		return ""
	}
	return "on " + ch
}

// everyText is an interval in words ("every week", "every friday",
// "every 6 hours").
func everyText(iv string) string {
	iv = strings.TrimPrefix(iv, "every-")
	switch iv {
	case "daily":
		return "every day"
	case "weekly":
		return "every week"
	case "monthly":
		return "every month"
	case "hourly":
		return "every hour"
	case "":
		return "each time"
	}
	return "every " + strings.ReplaceAll(iv, "-", " ")
}

// affirmations answer a yes/no question.
var affirmations = map[string]bool{"yes": true, "y": true, "yeah": true, "yep": true, "yup": true, "sure": true, "ok": true,
	"okay": true, "confirm": true, "confirmed": true, "correct": true, "right": true, "please": true, "do": true, "it": true,
	"go": true, "ahead": true, "absolutely": true, "definitely": true, "indeed": true, "that's": true, "thats": true}

// confirmed answers a bare "yes" to the gate's confirming question: money
// moves only on the request in the user's own words (the tools check the
// amount is in the message of the turn), so it asks for exactly those.
func confirmed(messages []llms.MessageContent, h int, acts []action) (string, bool) {
	if h < 1 || !onlySmallTalk(acts) {
		return "", false
	}
	q, ok := aiText(messages[h-1])
	if !ok {
		return "", false
	}
	i := strings.LastIndex(q, "say “")
	if i < 0 {
		return "", false
	}
	rest := q[i+len("say “"):]
	j := strings.Index(rest, "”")
	if j <= 0 {
		return "", false
	}
	words := strings.Fields(strings.ToLower(strings.Trim(humanText(messages[h]), " .!")))
	if len(words) == 0 || len(words) > 4 {
		return "", false
	}
	for _, w := range words {
		if !affirmations[strings.Trim(w, ",.!")] {
			return "", false
		}
	}
	return fmt.Sprintf("To keep your money safe I only move it on a request written in your own words, not on a “yes”. Please send “%s” and I'll do it right away.", rest[:j]), true
}
