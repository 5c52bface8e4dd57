package builtin

import (
	"encoding/json"
	"github.com/veilhq/veil/agent/intent"
	"github.com/veilhq/veil/chains"

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
	if ownerRule(text) {
		return []action{ask("rule", ownerRuleText)}
	}
	if fixed, ok := corrected(text); ok {
		text = fixed
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
	out = dedupe(gate(reading, joinFetchMaximum(text, masked, out)))
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
	// "remember to always ask me first": the rule itself.
	if low := strings.ToLower(content); strings.HasPrefix(low, "to ") && len(content) > 3 {
		content = content[3:]
	}
	switch strings.ToLower(content) {
	case "", "please", "pls", "this", "that", "it", "something":
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
	for _, w := range []string{chains.NameSuffix, "address", "st:", " 0x", "'s name", "is my ", "contact", "friend", "colleague", "brother", "sister", "mom", "dad", "partner", "wife", "husband", "boss"} {
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
			if len(acts) == 1 && acts[0].kind == "split" {
				// "send 20 usdc to wendy and zoe": 20 each, or split? Ask
				// instead of paying the first one.
				acts[0].kind = last.kind
				if n := len(last.acts); n > 0 && last.acts[n-1].tool != "" {
					prev := last.acts[n-1]
					who := argText(prev.args, "recipient", "agent_name")
					acts[0].say = fmt.Sprintf("Should %s and %s each get %s, or should they share it? I can pay one recipient per request: say it per person, e.g. “send %s to %s and %s to %s”.",
						who, firstRecipient(c), moneyArgs(prev.args), moneyArgs(prev.args), who, moneyArgs(prev.args), firstRecipient(c))
					last.acts = last.acts[:n-1]
				}
			}
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
	if ref := invoiceRef(c); ref != "" {
		return ask("unknown", fmt.Sprintf("Do you want me to pay this invoice? If so, say “pay %s”, and I'll pay exactly what it asks.", ref))
	}
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
			return []action{ask("split", fmt.Sprintf("Should %s also get %s? Please say it with the amount, e.g. “send %s to %s”.", rs[0], what, what, rs[0]))}, true
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

// dedupe drops a call identical to an earlier one in the same message
// ("list all my standing orders and schedules"): one request, one call.
func dedupe(acts []action) []action {
	seen := map[string]bool{}
	out := acts[:0:0]
	for _, a := range acts {
		if a.tool != "" {
			k, _ := json.Marshal(a.args)
			key := a.tool + string(k)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, a)
	}
	return out
}

func argText(args map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := args[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

func moneyArgs(args map[string]any) string {
	return strings.TrimSpace(argText(args, "amount") + " " + argText(args, "asset"))
}

func firstRecipient(c clause) string {
	if rs, _ := recipients(c, true); len(rs) > 0 {
		return rs[0]
	}
	return "them"
}
