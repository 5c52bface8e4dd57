package tools

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"unicode"
)

// The restatement rule (docs/tools.md): a tool that moves money runs only
// when the user's own message of this turn states the amount (and, for a
// withdrawal, the destination address). Text the model read elsewhere —
// a memo, a tool result, a web page — cannot start a payment by itself.

var thousands = regexp.MustCompile(`^\d{1,3}(,\d{3})+(\.\d+)?$`)
var decimal = regexp.MustCompile(`^(\d+\.?\d*|\.\d+)$`)

// numbersIn extracts the decimal numbers written in text as standalone
// tokens: "send 0.5 USDC", "$1,250.00", "5usdc" count; digits inside a
// word or a hex string ("0x5f", "abc12") do not.
func numbersIn(text string) []*big.Rat {
	var out []*big.Rat
	rs := []rune(text)
	for i := 0; i < len(rs); {
		r := rs[i]
		startsNum := unicode.IsDigit(r) || (r == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1]))
		if !startsNum || r > unicode.MaxASCII {
			i++
			continue
		}
		if i > 0 && (unicode.IsLetter(rs[i-1]) || unicode.IsDigit(rs[i-1]) || rs[i-1] == '_') {
			// Inside a word: skip the whole run.
			for i < len(rs) && (isNumRune(rs[i]) || unicode.IsLetter(rs[i])) {
				i++
			}
			continue
		}
		j := i
		for j < len(rs) && isNumRune(rs[j]) {
			j++
		}
		tok := strings.TrimRight(string(rs[i:j]), ".,")
		// A token glued to letters counts only when they spell an asset
		// symbol ("5usdc"), not "10k" or "0x…".
		k := j
		for k < len(rs) && (unicode.IsLetter(rs[k]) || unicode.IsDigit(rs[k])) {
			k++
		}
		i = k
		if k > j && !isAssetWord(string(rs[j:k])) {
			continue
		}
		var parts []string
		if thousands.MatchString(tok) {
			parts = []string{strings.ReplaceAll(tok, ",", "")}
		} else {
			parts = strings.Split(tok, ",")
		}
		for _, p := range parts {
			if !decimal.MatchString(p) {
				continue
			}
			if v, ok := new(big.Rat).SetString(p); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

func isNumRune(r rune) bool { return r >= '0' && r <= '9' || r == '.' || r == ',' }

func isAssetWord(w string) bool {
	switch strings.ToUpper(w) {
	case "ETH", "ZEN", "POL", "XLM", "SOL", "USDC":
		return true
	}
	return false
}

// mentionsAmount reports whether text states amount (numerically: "0.5",
// ".5" and "0.50" are the same amount).
func mentionsAmount(text, amount string) bool {
	want, ok := new(big.Rat).SetString(amount)
	if !ok || !decimal.MatchString(amount) {
		return false
	}
	for _, v := range numbersIn(text) {
		if v.Cmp(want) == 0 {
			return true
		}
	}
	return false
}

// requireAmountStated enforces the rule for an amount.
func requireAmountStated(env *Env, tool, amount string) error {
	if mentionsAmount(env.UserText, amount) {
		return nil
	}
	return fmt.Errorf("%w: the user's message does not state the amount %s; %s moves money only for an amount the user wrote in this turn. Ask the user to confirm in their own words (for example \"send %s USDC to bob\"), then call %s again", ErrNotConfirmed, amount, tool, amount, tool)
}

// requireAddressStated enforces the rule for a withdrawal address (case
// matters except for EVM hex).
func requireAddressStated(env *Env, tool, addr string) error {
	text := env.UserText
	ok := strings.Contains(text, addr)
	if !ok && (strings.HasPrefix(addr, "0x") || strings.HasPrefix(addr, "0X")) {
		ok = strings.Contains(strings.ToLower(text), strings.ToLower(addr))
	}
	if ok {
		return nil
	}
	return fmt.Errorf("%w: the user's message does not contain the destination address %s; %s sends funds only to an address the user wrote in this turn. Ask the user to confirm the address, then call %s again", ErrNotConfirmed, addr, tool, tool)
}
