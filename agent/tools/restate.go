package tools

import (
	"fmt"
	"strings"

	"github.com/veilhq/veil/agent/intent"
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

// requireAmountStated enforces the rule for an amount.
func requireAmountStated(env *Env, tool, amount string) error {
	return requireStated(env, func(text string) bool { return intent.States(text, amount) },
		func(why intent.Mood) error {
			return fmt.Errorf("%w: the user's message mentions %s, but not as an instruction to pay now: %s (%s). Do not call %s: answer the user, or ask one confirming question and let them say it in their own words (for example \"send %s USDC to bob\")",
				ErrNotConfirmed, amount, why.Why(), why, tool, amount)
		},
		func() error {
			return fmt.Errorf("%w: the user's message does not state the amount %s; %s moves money only for an amount the user wrote in this turn. Ask the user to confirm in their own words (for example \"send %s USDC to bob\"), then call %s again", ErrNotConfirmed, amount, tool, amount, tool)
		})
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
	why := intent.Pasted
	if len(r.Clauses) > 0 {
		why = r.Clauses[0].Mood
		for _, c := range r.Clauses {
			why = min(why, c.Mood)
		}
	}
	return fmt.Errorf("%w: the user's message is not an instruction to move money: %s (%s). Do not call %s: answer the user, or ask one confirming question", ErrNotConfirmed, why.Why(), why, tool)
}
