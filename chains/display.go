package chains

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// Amounts and chain errors as people read them: the CLI and the agent's
// replies show amounts in whole units of the asset, cut to DisplayDigits
// decimals, with the symbol, never the 18 decimals of wei or a raw
// integer of base units.

// DisplayDigits is how many decimals people see: enough for a fee on any
// of the six chains, not the 18 of wei.
const DisplayDigits = 6

// DisplayAmount shows a decimal amount of whole units with its symbol,
// cut (never rounded up: a balance must not look larger than it is) to
// DisplayDigits decimals, trailing zeros dropped: "9.999949976784703522"
// ETH is "9.999949 ETH". A non-zero amount below the last digit is
// "<0.000001 ETH". Text that is not a decimal is shown as given.
func DisplayAmount(dec, symbol string) string {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(dec))
	if !ok || strings.ContainsAny(dec, "eE/") {
		return strings.TrimSpace(dec + " " + symbol)
	}
	neg := r.Sign() < 0
	r.Abs(r)
	units := new(big.Int).Quo(new(big.Int).Mul(r.Num(), pow10(DisplayDigits)), r.Denom()) // truncated
	var s string
	switch {
	case units.Sign() == 0 && r.Sign() != 0:
		s = "<0." + strings.Repeat("0", DisplayDigits-1) + "1"
	default:
		txt := units.String()
		if len(txt) <= DisplayDigits {
			txt = strings.Repeat("0", DisplayDigits-len(txt)+1) + txt
		}
		s = txt[:len(txt)-DisplayDigits] + "." + txt[len(txt)-DisplayDigits:]
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if neg && s != "0" {
		s = "-" + s
	}
	if symbol == "" {
		return s
	}
	return s + " " + symbol
}

// NativeDecimals is the decimals of a chain's native asset: 18 on the EVM
// chains (wei), 7 on Stellar (stroops), 9 on Solana (lamports).
func NativeDecimals(c ID) int {
	switch c.Family() {
	case FamilySolana:
		return 9
	case FamilyStellar:
		return 7
	}
	return 18
}

// displayBaseUnits shows an integer of c's smallest native unit (wei) in
// whole units with the symbol.
func displayBaseUnits(v string, c ID) string {
	n, ok := new(big.Int).SetString(v, 10)
	if !ok {
		return v
	}
	d := NativeDecimals(c)
	return DisplayAmount(new(big.Rat).SetFrac(n, pow10(d)).FloatString(d), c.NativeAsset())
}

var (
	// geth, reth, erigon, anvil: "insufficient funds for gas * price +
	// value: balance 9999…, tx cost 500000…, overshot 490…".
	gethFunds = regexp.MustCompile(`(?i)insufficient funds for gas \* price \+ value: (?:address \S+ )?(?:have|balance) (\d+),? (?:want|tx cost) (\d+)`)
	// Veil's pre-check: "balance 123 wei does not cover the fee 456 wei".
	feeFunds = regexp.MustCompile(`balance (\d+) wei does not cover the fee (\d+) wei`)
	// the chain an error names: "send_payment on base: …", "chains:
	// insufficient funds: base: …".
	chainIn = regexp.MustCompile(`\b(?:on |: )(horizen|ethereum|polygon|base|stellar|solana)\b`)
	// a decimal with more digits than people read, and its symbol:
	// "holds 9.999949976784703522 ETH".
	longDecimal = regexp.MustCompile(`\b(\d+\.\d{7,}) ([A-Z][A-Z0-9]{1,11})\b`)
	// only balances and funds are cut: an amount the user typed (a "too
	// many decimals" error) is shown as typed.
	fundsWords = regexp.MustCompile(`(?i)insufficient|\bholds\b|\bbalance\b|\bavailable\b`)
)

// ErrorWords rewrites the raw numbers of a chain error into amounts
// people read: "insufficient funds on base: 9.999949 ETH available,
// 500.000021 ETH needed (amount + network fee); nothing was sent", and
// long decimals of a balance cut to DisplayDigits. Text it does not recognise is
// returned as is.
func ErrorWords(text string) string {
	c, where := Ethereum, ""
	if m := chainIn.FindStringSubmatch(text); m != nil {
		c, where = ID(m[1]), " on "+m[1]
	}
	return errorWords(c, where, text)
}

// ErrorWordsFor is ErrorWords for an error of chain c whose text need not
// name it.
func ErrorWordsFor(c ID, text string) string { return errorWords(c, "", text) }

func errorWords(c ID, where, text string) string {
	if m := gethFunds.FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("insufficient funds%s: %s available, %s needed (amount + network fee); nothing was sent", where, displayBaseUnits(m[1], c), displayBaseUnits(m[2], c))
	}
	if m := feeFunds.FindStringSubmatch(text); m != nil {
		return fmt.Sprintf("insufficient funds%s: %s available, the network fee alone is %s; nothing was sent", where, displayBaseUnits(m[1], c), displayBaseUnits(m[2], c))
	}
	if !fundsWords.MatchString(text) {
		return text
	}
	return longDecimal.ReplaceAllStringFunc(text, func(s string) string {
		m := longDecimal.FindStringSubmatch(s)
		return DisplayAmount(m[1], m[2])
	})
}
