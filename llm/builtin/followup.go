package builtin

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/agent/intent"
)

// Follow-ups (issue 33): the agent actor gives every model the
// conversation's state as data in a system message
// (<conversation-state>{…}</conversation-state>: the last action and its
// arguments, the people, chains and assets named, the action waiting for
// a yes). A message that names no request of its own is read against it:
// "again", "the same to carol", "and on solana?", "cancel that", "send him
// 5 usdc", and, while an action waits, "usdc" or "make it 7 usdc" (the
// same action, changed). The tools' restate guard makes each of these
// payments wait for the user's yes: its amount, asset or recipient comes
// from an earlier message. The "yes" and "no" themselves are the actor's
// (they never reach the planner while an action waits).

const (
	stateOpen  = "<conversation-state>"
	stateClose = "</conversation-state>"
)

// convState is the state as the actor writes it (actors/agent
// convstate.go stateView).
type convState struct {
	Last *struct {
		Tool string         `json:"tool"`
		Args map[string]any `json:"args"`
		ID   string         `json:"id"`
	} `json:"last"`
	People  []string `json:"people"`
	Chains  []string `json:"chains"`
	Assets  []string `json:"assets"`
	Pending *struct {
		Tool string         `json:"tool"`
		Args map[string]any `json:"args"`
		What string         `json:"what"`
	} `json:"pending"`
}

// readState finds the conversation state among the system messages.
func readState(messages []llms.MessageContent) *convState {
	for _, mc := range messages {
		if mc.Role != llms.ChatMessageTypeSystem {
			continue
		}
		for _, p := range mc.Parts {
			t, ok := p.(llms.TextContent)
			if !ok {
				continue
			}
			i := strings.Index(t.Text, stateOpen)
			j := strings.LastIndex(t.Text, stateClose)
			if i < 0 || j < i {
				continue
			}
			var st convState
			if json.Unmarshal([]byte(t.Text[i+len(stateOpen):j]), &st) == nil {
				return &st
			}
		}
	}
	return nil
}

var (
	reRepeat     = regexp.MustCompile(`^(?:ok |okay |now |and )?(?:please )?(?:again|same again|the same again|repeat(?: that| it| the (?:last )?payment)?|do (?:it|that|the same) again|send (?:it|that|the same) again|pay (?:him|her|them) again|one more time|once more|another one|same thing again)(?: please| pls)?$`)
	reSameTo     = regexp.MustCompile(`^(?:and |now |ok |okay )?(?:do |send |pay )?(?:the )?same (?:amount )?(?:to|for) ([a-z][a-z0-9_.-]*)(?: too| as well| please| pls)*$|^(?:and |now )([a-z][a-z0-9_.-]*) too(?:,? (?:the )?same(?: amount)?)?(?: please)?$`)
	reOtherChain = regexp.MustCompile(`^(?:and|what about|how about|and what about|same|now)(?: on| in| for)? ([a-z]+)(?: too| please| chain| network)?$`)
	reUndo       = regexp.MustCompile(`^(?:actually |ok |okay |no |please |wait |hmm )*(?:cancel|undo|stop|delete|remove|kill|revert)(?: that| it| this| the last one| what you just (?:did|made|created|set up))?(?: schedule| one| payment| subscription)?(?: please| pls| now)?$`)
	reChange     = regexp.MustCompile(`^(?:no,? |actually,? |sorry,? |ok,? |wait,? )*(?:make (?:it|that)|change (?:it|that) to|i meant|i mean|actually|rather|instead)? ?\$?([0-9][0-9,]*(?:\.[0-9]+)?|\.[0-9]+)( ?[a-z]+)?(?: instead| please| then)?$`)
	reAssetOnly  = regexp.MustCompile(`^(?:no,? |actually,? |sorry,? |oh,? )*(?:i meant |i mean |make it |in |use |pay in |send |it's |its |it was )?(?:in )?([a-z$]+)(?: please| pls| instead| then| coin| dollars)?$`)
	rePronoun    = regexp.MustCompile(`\b(him|her|them)\b`)
)

// normalize lower-cases a short reply and trims its punctuation.
func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	s = strings.ReplaceAll(s, "’", "'")
	return strings.Trim(s, " .!?,;")
}

// followUp reads the user's message against the conversation state when
// the message alone asked for nothing the planner could do.
func followUp(user string, acts []action, st *convState, now time.Time) ([]action, bool) {
	if st == nil {
		return nil, false
	}
	msg := normalize(user)
	if st.Pending != nil && onlySmallTalkOrAsk(acts) {
		if a, ok := changePending(msg, st); ok {
			return []action{a}, true
		}
	}
	if st.Last != nil {
		last := st.Last
		if a, ok := historyFollowUp(msg, acts, st); ok {
			return []action{a}, true
		}
		switch {
		case reUndo.MatchString(strings.ReplaceAll(msg, ",", "")) || last.Tool == "create_invoice" && asksWhichInvoice(acts):
			switch last.Tool {
			case "schedule_payment":
				if last.ID != "" {
					return []action{call("manage", "manage_schedule", map[string]any{"schedule_id": last.ID, "action": "cancel"})}, true
				}
			case "create_invoice":
				// The invoice just created: cancel_invoice refuses it if it
				// was paid meanwhile.
				if last.ID != "" {
					return []action{call("cancelinvoice", "cancel_invoice", map[string]any{"invoice_id": last.ID})}, true
				}
			case "send_payment", "pay_agent", "pay_invoice", "withdraw", "withdraw_all", "fetch_paid":
				return []action{ask("undo", "That payment has already gone out, and payments on chain can't be undone. If it went to the wrong place, ask the recipient to send it back.")}, true
			}
		case reRepeat.MatchString(msg) && onlySmallTalkOrAsk(acts):
			return []action{call(kindOf(last.Tool), last.Tool, copyArgs(last.Args))}, true
		}
		if m := reSameTo.FindStringSubmatch(msg); m != nil && onlySmallTalkOrAsk(acts) {
			who := firstNonEmpty(m[1], m[2])
			args := copyArgs(last.Args)
			switch last.Tool {
			case "send_payment", "schedule_payment":
				args["recipient"] = who
			case "pay_agent":
				args["agent_name"] = who
			case "resolve_name":
				args["name"] = who
			default:
				return nil, false
			}
			return []action{call(kindOf(last.Tool), last.Tool, args)}, true
		}
		if m := reOtherChain.FindStringSubmatch(msg); m != nil && onlySmallTalkOrAsk(acts) {
			if ch, ok := chainNames[m[1]]; ok {
				switch last.Tool {
				case "get_balance", "scan_payments", "send_payment", "register_name":
					args := copyArgs(last.Args)
					args["chain"] = ch
					return []action{call(kindOf(last.Tool), last.Tool, args)}, true
				}
			}
		}
	}
	if len(st.People) > 0 && rePronoun.MatchString(msg) && !hasCall(acts) {
		who := st.People[len(st.People)-1]
		re := regexp.MustCompile(`(?i)\b(him|her|them)\b`)
		if acts2 := plan(re.ReplaceAllLiteralString(user, who), now); hasCall(acts2) {
			return acts2, true
		}
	}
	return nil, false
}

// changePending reads "usdc" or "make it 7 usdc" while an action waits:
// the same action with the asset or amount changed.
func changePending(msg string, st *convState) (action, bool) {
	p := st.Pending
	switch p.Tool {
	case "send_payment", "pay_agent", "schedule_payment":
	default:
		return action{}, false
	}
	if m := reChange.FindStringSubmatch(msg); m != nil {
		args := copyArgs(p.Args)
		args["amount"] = strings.ReplaceAll(m[1], ",", "")
		if w := strings.TrimSpace(m[2]); w != "" {
			sym, ok := assets[w]
			if !ok {
				return action{}, false
			}
			args["asset"] = sym
		} else if strings.Contains(msg, "$") {
			args["asset"] = "USDC"
		}
		return call(kindOf(p.Tool), p.Tool, args), true
	}
	if m := reAssetOnly.FindStringSubmatch(msg); m != nil {
		w := m[1]
		if w == "$" || w == "dollars" || w == "usd" {
			w = "usdc"
		}
		if sym, ok := assets[w]; ok {
			args := copyArgs(p.Args)
			args["asset"] = sym
			return call(kindOf(p.Tool), p.Tool, args), true
		}
	}
	return action{}, false
}

func onlySmallTalkOrAsk(acts []action) bool { return !hasCall(acts) }

// asksWhichInvoice: the message asked to cancel an invoice without
// naming one ("cancel that invoice", "void the invoice I just made").
func asksWhichInvoice(acts []action) bool {
	return len(acts) > 0 && !hasCall(acts) && acts[len(acts)-1].kind == "cancelinvoice"
}

// reHistoryMore is a follow-up to a history answer: "what about carol?",
// "and on base?", "how about to dave".
var reHistoryMore = regexp.MustCompile(`^(?:and|what about|how about|and what about|now|same for|and for)(?: to| for| on| in| with)? ([a-z0-9][a-z0-9_.-]*)(?: too| then| please)?$`)

// historyFollowUp asks payment_history again with another recipient or
// chain, keeping the rest of the last question.
func historyFollowUp(msg string, acts []action, st *convState) (action, bool) {
	if st.Last == nil || st.Last.Tool != "payment_history" || hasCall(acts) {
		return action{}, false
	}
	m := reHistoryMore.FindStringSubmatch(msg)
	if m == nil {
		return action{}, false
	}
	args := copyArgs(st.Last.Args)
	if ch, ok := chainNames[m[1]]; ok {
		args["chain"] = ch
		return call("history", "payment_history", args), true
	}
	if who, ok := recipientOf(tok{raw: m[1], low: m[1]}); ok {
		args["recipient"] = who
		delete(args, "status")
		return call("history", "payment_history", args), true
	}
	return action{}, false
}

func copyArgs(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func kindOf(tool string) string {
	switch tool {
	case "send_payment", "pay_agent":
		return "pay"
	case "schedule_payment":
		return "schedule"
	case "get_balance":
		return "balance"
	case "scan_payments":
		return "scan"
	}
	return "followup"
}

// answerWithoutPending answers a yes or no when nothing waits for one.
func answerWithoutPending(user string, acts []action) (action, bool) {
	if hasCall(acts) {
		return action{}, false
	}
	switch intent.ReadAnswer(user) {
	case intent.Yes:
		return ask("confirm", "There's nothing waiting for your confirmation right now, so nothing was sent. (A question I ask before a payment stays open for 5 minutes.) Tell me what you'd like to do, e.g. “send 5 USDC to bob”."), true
	case intent.No:
		return ask("confirm", "OK. Nothing is waiting for your confirmation, and nothing was sent."), true
	}
	return action{}, false
}

// ownerRule: a standing spending rule asked for in chat ("always ask me
// before paying more than 50 usdc") is the owner's policy, not a payment.
var reOwnerRule = regexp.MustCompile(`(?i)\b(always|never|don'?t ever|do not ever|make sure to|i want you to|you (?:must|should)|from now on)\b.{0,40}\b(ask|check with|confirm with|pay|send|spend|approv)\w*\b.{0,50}\b(more than|over|above|bigger than|larger than|exceeding|greater than|at least|without (?:asking|checking|confirming))\b`)

const ownerRuleText = "Rules like that are your owner's spending policy, not a chat request, so I haven't sent or changed anything. The policy can:\n" +
	"- ask you here before a payment above an amount (`confirmAbove`, e.g. {\"USDC\": \"50\"}): I'll state the payment and wait for your “yes”;\n" +
	"- hold a payment above an amount, or to someone new, for the owner's wallet to approve (`approvalAbove`, `approveNewRecipients`; docs/approvals.md);\n" +
	"- cap each payment and each day's spending (`perTransaction`, `daily`) and limit who can be paid (`allowlist`).\n" +
	"To set one, preview it with POST /agent/<id>/policy/preview {\"policy\": …}: it answers the exact text the owner wallet signs; send the policy with that signature to PUT /agent/<id>/policy."

func ownerRule(text string) bool {
	m := intent.Mask(text)
	return reOwnerRule.MatchString(m) && !strings.Contains(strings.ToLower(m), "remember")
}

// A message that corrects its own amount ("send 5 usdc to bob, no actually
// make it 7", "pay bob 10 usdc - sorry, I meant 8") is read with the
// corrected amount; the tools' restate guard then asks the user to
// confirm it (intent.Corrects).
var (
	reCorrected   = regexp.MustCompile(`(?is)^(.*?\d.*?)[\s,.;:!—–-]*\b(?:no,?\s+actually|actually|sorry,?\s+i\s+meant|i\s+meant|i\s+mean|no\s+wait|wait|scratch\s+that|correction|oops)\b[\s,:.!-]*(?:no,?\s+)?(?:make\s+(?:it|that)|change\s+(?:it|that)\s+to|it'?s|it\s+should\s+be|should\s+be)?\s*(\$?\d[\d,]*(?:\.\d+)?)\s*([a-z]+)?\s*(?:instead|please|then)?[\s.!]*$`)
	reFirstAmount = regexp.MustCompile(`\$?\d[\d,]*(?:\.\d+)?(?:\s+([A-Za-z]+))?`)
)

// corrected rewrites a self-correcting request with its corrected amount.
func corrected(text string) (string, bool) {
	if !intent.Corrects(text) {
		return "", false
	}
	m := reCorrected.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	req, num, unit := m[1], m[2], strings.ToLower(m[3])
	loc := reFirstAmount.FindStringSubmatchIndex(req)
	if loc == nil {
		return "", false
	}
	repl := num
	end := loc[1]
	if unit != "" {
		if _, ok := assets[unit]; !ok {
			if _, ok := intent.UnitOf(unit); !ok {
				return "", false
			}
		}
		repl += " " + unit
	} else if loc[2] >= 0 {
		// Keep the asset written after the first amount ("5 usdc").
		end = loc[2] - 1
	}
	if strings.HasPrefix(req[loc[0]:], "$") && !strings.HasPrefix(repl, "$") {
		repl = "$" + repl
	}
	return req[:loc[0]] + repl + req[end:], true
}
