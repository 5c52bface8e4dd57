package tools

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/veilhq/veil/agent/intent"
	"github.com/veilhq/veil/chains"
)

// The restatement rule (docs/tools.md): a tool that moves money runs only
// when the user's own message of this turn states the amount (and, for a
// withdrawal, the destination address) in an instruction to the agent —
// the money gate's reading (package intent). Text the model read
// elsewhere — a memo, a tool result, a web page, an email the user pasted
// — and a negation, question, condition, past event or someone else's
// words in the user's message cannot start a payment.

// mentionsAmount reports whether text states amount anywhere (digits or
// words; "0.5", ".5" and "0.50" are the same amount).
func mentionsAmount(text, amount string) bool { return intent.States(text, amount) }

// numbersIn lists the numbers text states.
var numbersIn = intent.Numbers

// requireStated is the rule's one frame: nil for an explicit call, or when
// an instruction of the user's message this turn holds what contains looks
// for; else the error notNow makes from the mood that kept it out of the
// instructions when the message holds it elsewhere, or absent's when the
// message does not hold it at all.
func requireStated(env *Env, contains func(text string) bool, notNow func(why intent.Mood) error, absent func() error) error {
	if env.Explicit {
		return nil
	}
	r := intent.Read(env.UserText)
	if contains(r.Instructed()) {
		return nil
	}
	if contains(r.Text) {
		return notNow(r.Refusal(contains))
	}
	return absent()
}

// requireAmountStated enforces the rule for an amount. An amount the
// user wrote only in other units ("5 gwei", "2k", "50 cents"), corrected
// in the same message ("5, no actually make it 7"), or took from an
// earlier message of the conversation ("again", "the same to carol") needs
// the user's confirmation (ErrNeedsConfirmation) before it runs.
func requireAmountStated(env *Env, tool, amount string) error {
	why, err := amountStated(env, tool, amount)
	if err != nil {
		return err
	}
	if why == "" {
		why = env.askFirst
	}
	if why != "" && !env.Confirmed {
		return needsConfirmation(why, tool+" for "+amount)
	}
	return nil
}

// amountStated answers why an amount the user did state needs their
// confirmation ("" when it does not), or the restatement rule's error
// when they did not state it.
func amountStated(env *Env, tool, amount string) (string, error) {
	if env.Explicit {
		return "", nil
	}
	r := intent.Read(env.UserText)
	corrected := intent.Corrects(r.Masked)
	switch {
	case intent.States(r.Instructed(), amount) && !corrected:
		return "", nil
	case corrected && (intent.States(r.Masked, amount) || intent.StatesInUnits(r.Masked, amount)):
		return "the message corrects its own amount", nil
	case intent.StatesInUnits(r.Instructed(), amount):
		return fmt.Sprintf("the amount was written in other units (%s in whole units)", amount), nil
	case statedEarlier(env, func(text string) bool { return intent.States(text, amount) || intent.StatesInUnits(text, amount) }):
		return "the amount comes from an earlier message of the conversation", nil
	}
	return "", requireStated(env, func(text string) bool { return intent.States(text, amount) },
		func(why intent.Mood) error {
			return fmt.Errorf("%w: the user's message mentions %s, but not as an instruction to pay now: %s (%s). Do not call %s: answer the user, or ask one confirming question and let them say it in their own words (for example \"send %s USDC to bob\")",
				ErrNotConfirmed, amount, why.Why(), why, tool, amount)
		},
		func() error {
			return fmt.Errorf("%w: the user's message does not state the amount %s; %s moves money only for an amount the user wrote in this turn. Ask the user to confirm in their own words (for example \"send %s USDC to bob\"), then call %s again", ErrNotConfirmed, amount, tool, amount, tool)
		})
}

// statedEarlier reports whether an instruction in one of the user's
// earlier messages of the conversation (Env.Earlier) holds what contains
// looks for.
func statedEarlier(env *Env, contains func(text string) bool) bool {
	return earlier(env, contains, true)
}

// namedEarlier reports whether the user's own words in an earlier message
// (not quoted or pasted text) hold what contains looks for: a person or
// asset named in a question counts ("who is bob?" … "pay him 5 usdc").
func namedEarlier(env *Env, contains func(text string) bool) bool {
	return earlier(env, contains, false)
}

func earlier(env *Env, contains func(text string) bool, instructed bool) bool {
	for _, m := range strings.Split(env.Earlier, earlierSep) {
		if m = strings.TrimSpace(m); m == "" {
			continue
		}
		r := intent.Read(m)
		text := r.Masked
		if instructed {
			text = r.Instructed()
		}
		if contains(text) {
			return true
		}
	}
	return false
}

// earlierSep separates the messages of Env.Earlier.
const earlierSep = "\n\x1e\n"

// JoinEarlier joins the user's earlier messages for Env.Earlier.
func JoinEarlier(msgs []string) string { return strings.Join(msgs, earlierSep) }

// needsConfirmation is the error of a call that runs only on the user's
// yes: why, and what would run ("send 5 ETH to bob on ethereum"), after
// the marker the planners read ("; to confirm: ").
func needsConfirmation(why, what string) error {
	return fmt.Errorf("%w (%s): nothing has been sent yet; ask the user to confirm exactly this, and it runs on their yes; to confirm: %s", ErrNeedsConfirmation, why, what)
}

// requireSpendStated is the restate guard of a payment (send_payment,
// pay_agent) for every model: the user's own words must state its amount
// (requireAmountStated), its asset and its recipient. An asset they never
// named (the chain's own coin by default, or one a hosted model filled
// in), or an asset or recipient only an earlier message names ("send him 5
// usdc"), makes the payment wait for their confirmation; so does an
// amount above the owner's confirmation amount (Env.ConfirmAbove). A
// recipient the user never named is refused. amountArg and who are the
// call's amount and recipient arguments as the user may have written
// them; req is what they were read into.
func requireSpendStated(env *Env, amountArg, who string, req PaymentRequest) error {
	tool, asset, c, amount := req.Tool(), req.Asset(), req.Chain(), req.Amount()
	why, err := amountStated(env, tool, amountArg)
	if err != nil {
		return err
	}
	var whys []string
	for _, w := range []string{why, env.askFirst} {
		if w != "" {
			whys = append(whys, w)
		}
	}
	if !env.Explicit {
		r := intent.Read(env.UserText)
		said := r.Instructed()
		if intent.Corrects(r.Masked) {
			said = r.Masked
		}
		switch {
		case namesAsset(said, asset.Symbol):
		case namedEarlier(env, func(text string) bool { return namesAsset(text, asset.Symbol) }):
			whys = append(whys, "the asset comes from an earlier message")
		case nativeAsset(c).Symbol == asset.Symbol:
			whys = append(whys, fmt.Sprintf("the user did not say which asset; %s is %s's own coin", asset.Symbol, c))
		default:
			whys = append(whys, fmt.Sprintf("the user did not name %s", asset.Symbol))
		}
		switch {
		case namesRecipient(said, who):
		case namedEarlier(env, func(text string) bool { return namesRecipient(text, who) }):
			whys = append(whys, "the recipient comes from an earlier message")
		default:
			return fmt.Errorf("%w: the user's message does not name the recipient %s; %s pays only a recipient the user named. Ask the user who to pay", ErrNotConfirmed, clip(who, 60), tool)
		}
	}
	if limit, ok := env.ConfirmAbove[asset.Symbol]; ok {
		if l, err := asset.Parse(limit); err == nil && amount.Rat().Cmp(l.Rat()) > 0 {
			whys = append(whys, fmt.Sprintf("it is more than %s %s, above which the owner wants each payment confirmed", limit, asset.Symbol))
		}
	}
	if len(whys) == 0 || env.Confirmed {
		return nil
	}
	return needsConfirmation(strings.Join(whys, "; "), fmt.Sprintf("send %s %s to %s on %s", amount, asset.Symbol, clip(req.who(), 60), c))
}

// assetWords are the words that name an asset besides its symbol.
var assetWords = map[string][]string{
	"USDC": {"usdc", "usd", "dollar", "dollars", "buck", "bucks", "cent", "cents", "usdcs"},
	"ETH":  {"eth", "ether", "wei", "gwei", "kwei", "mwei", "szabo", "finney", "milliether", "millieth", "microether", "microeth"},
	"XLM":  {"xlm", "lumen", "lumens", "stroop", "stroops"},
	"SOL":  {"sol", "sols", "lamport", "lamports", "millisol", "microsol"},
	"POL":  {"pol", "matic"},
}

// namesAsset reports whether text names the asset symbol.
func namesAsset(text, symbol string) bool {
	low := strings.ToLower(text)
	if symbol == "USDC" && (strings.Contains(low, "$") || strings.Contains(low, "¢")) {
		return true
	}
	words := assetWords[symbol]
	if words == nil {
		words = []string{strings.ToLower(symbol)}
	}
	for _, w := range strings.FieldsFunc(low, func(r rune) bool { return !unicode.IsLetter(r) }) {
		for _, a := range words {
			if w == a {
				return true
			}
		}
	}
	// Glued to the number: "5usdc", "20gwei".
	for _, f := range strings.Fields(low) {
		f = strings.TrimLeft(f, "0123456789.,$")
		for _, a := range words {
			if strings.TrimRight(f, ".,!?;:") == a {
				return true
			}
		}
	}
	return false
}

// namesRecipient reports whether text names who (a name, with or without
// ".veil", or a meta-address), as a whole word.
func namesRecipient(text, who string) bool {
	w := strings.ToLower(strings.TrimSpace(who))
	if w == "" {
		return false
	}
	low := strings.ToLower(text)
	for _, cand := range []string{w, strings.TrimSuffix(w, chains.NameSuffix)} {
		for i := 0; cand != ""; {
			j := strings.Index(low[i:], cand)
			if j < 0 {
				break
			}
			j += i
			before, after := rune(' '), rune(' ')
			if j > 0 {
				before = rune(low[j-1])
			}
			if k := j + len(cand); k < len(low) {
				after = rune(low[k])
			}
			if !isNameRune(before) && (!isNameRune(after) || after == '.') {
				return true
			}
			i = j + 1
		}
	}
	return false
}

func isNameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == ':'
}

// requireAddressStated enforces the rule for a withdrawal address (case
// matters except for EVM hex).
func requireAddressStated(env *Env, tool, addr string) error {
	contains := func(text string) bool {
		if strings.Contains(text, addr) {
			return true
		}
		return (strings.HasPrefix(addr, "0x") || strings.HasPrefix(addr, "0X")) && strings.Contains(strings.ToLower(text), strings.ToLower(addr))
	}
	return requireStated(env, contains,
		func(why intent.Mood) error {
			return fmt.Errorf("%w: the user's message contains the address %s, but not in an instruction to send funds there now: %s (%s). Do not call %s: answer the user, or ask one confirming question", ErrNotConfirmed, addr, why.Why(), why, tool)
		},
		func() error {
			return fmt.Errorf("%w: the user's message does not contain the destination address %s; %s sends funds only to an address the user wrote in this turn. Ask the user to confirm the address, then call %s again", ErrNotConfirmed, addr, tool, tool)
		})
}

// askFirstTools read Env.askFirst (requireAmountStated): only they may
// pass the gate on a statement or an ambiguous request.
var askFirstTools = map[string]bool{"send_payment": true, "pay_agent": true, "schedule_payment": true}

// Gate is the money gate for a tool that moves value (Tool.MovesValue):
// the user's message must hold at least one instruction to the agent.
// The tools check the amount and address themselves (requireAmountStated,
// requireAddressStated); Gate covers every value-moving tool, also one
// added later that forgets to.
func Gate(env *Env, tool string) error {
	if env.Explicit {
		return nil
	}
	r := intent.Read(env.UserText)
	for _, c := range r.Clauses {
		if c.Mood == intent.Instruction {
			return nil
		}
	}
	if intent.Corrects(r.Masked) {
		// "send 10 usdc to bob... scratch that, 15": the correction takes
		// the first amount back, not the request; the tool asks the user
		// to confirm the corrected payment (requireAmountStated).
		return nil
	}
	why := intent.Pasted
	worst := intent.Instruction
	if len(r.Clauses) > 0 {
		why = r.Clauses[0].Mood
		for _, c := range r.Clauses {
			why = min(why, c.Mood)
			worst = max(worst, c.Mood)
		}
	}
	if worst <= intent.Ambiguous && askFirstTools[tool] && len(r.Clauses) > 0 {
		// A statement or an ambiguous request ("I meant usdc", "pay bob
		// 5?") is asked about: the payment tools, which read askFirst,
		// make the call wait for the user's yes instead of refusing it.
		env.askFirst = fmt.Sprintf("the message reads as %s, not as a request", why)
		return nil
	}
	return fmt.Errorf("%w: the user's message is not an instruction to move money: %s (%s). Do not call %s: answer the user, or ask one confirming question", ErrNotConfirmed, why.Why(), why, tool)
}
