package intent

import (
	"math/big"
	"regexp"
	"strings"
)

// Units: an amount written with a unit that scales it ("5 gwei", "2k",
// "50 cents", "300 lamports") states the converted amount, never the
// number as written: "5 gwei" states 0.000000005 (ETH), not 5. The
// planner converts exactly; the restatement guard asks the user to confirm
// a converted amount, and refuses the bare number.

// Unit is a word that scales the number before it.
type Unit struct {
	// Exp scales by 10^Exp ("gwei": -9, "k": 3).
	Exp int
	// Asset is the asset the unit implies ("gwei": ETH), "" for none.
	Asset string
}

var unitTable = map[string]Unit{
	"wei": {-18, "ETH"}, "gwei": {-9, "ETH"}, "kwei": {-15, "ETH"}, "mwei": {-12, "ETH"}, "szabo": {-6, "ETH"}, "finney": {-3, "ETH"},
	"milliether": {-3, "ETH"}, "millieth": {-3, "ETH"}, "microether": {-6, "ETH"}, "microeth": {-6, "ETH"},
	"lamport": {-9, "SOL"}, "lamports": {-9, "SOL"}, "millisol": {-3, "SOL"}, "microsol": {-6, "SOL"},
	"stroop": {-7, "XLM"}, "stroops": {-7, "XLM"},
	"cent": {-2, "USDC"}, "cents": {-2, "USDC"}, "¢": {-2, "USDC"},
	"k": {3, ""}, "thousand": {3, ""}, "grand": {3, ""}, "m": {6, ""}, "mil": {6, ""}, "million": {6, ""}, "mm": {6, ""},
	"bn": {9, ""}, "billion": {9, ""},
}

// UnitOf reads w (lower-case) as a scaling unit.
func UnitOf(w string) (Unit, bool) {
	u, ok := unitTable[w]
	return u, ok
}

// A number and the unit after it (glued: "2k", "5gwei"; or the next word:
// "5 gwei"). Spaced "k" and "m" are not read as units ("5 m" is too
// rarely money); "thousand" after digits is.
var reScaled = regexp.MustCompile(`(?i)(^|[^\w.,])\$?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:(k|m|mm|bn|gwei|wei|kwei|mwei|lamports?|stroops?|¢)|\s+(wei|gwei|kwei|mwei|szabo|finney|milliether|millieth|microether|microeth|lamports?|millisol|microsol|stroops?|cents?|¢|thousand|grand|million|mil|billion|bn))\b`)

// scaled is one number written with a scaling unit: its span in the text,
// the number as written and the converted value.
type scaled struct {
	from, to      int
	written, conv *big.Rat
	unit          Unit
}

func scaledAmounts(text string) []scaled {
	var out []scaled
	for _, m := range reScaled.FindAllStringSubmatchIndex(text, -1) {
		num := strings.ReplaceAll(text[m[4]:m[5]], ",", "")
		w := ""
		if m[6] >= 0 {
			w = strings.ToLower(text[m[6]:m[7]])
		} else {
			w = strings.ToLower(text[m[8]:m[9]])
		}
		u, ok := unitTable[w]
		if !ok {
			continue
		}
		v, ok := new(big.Rat).SetString(num)
		if !ok {
			continue
		}
		out = append(out, scaled{from: m[4], to: m[1], written: v, conv: Scale(v, u.Exp), unit: u})
	}
	return out
}

// Scale is v × 10^exp, exactly.
func Scale(v *big.Rat, exp int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
	f := new(big.Rat).SetInt(p)
	if exp < 0 {
		return new(big.Rat).Quo(v, f)
	}
	return new(big.Rat).Mul(v, f)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// withoutScaled blanks the numbers written with a scaling unit, so that
// "5 gwei" does not state 5.
func withoutScaled(text string) string {
	ss := scaledAmounts(text)
	if len(ss) == 0 {
		return text
	}
	b := []byte(text)
	for _, s := range ss {
		for i := s.from; i < s.to; i++ {
			b[i] = ' '
		}
	}
	return string(b)
}

// StatesInUnits reports whether text states amount only through a unit
// ("5 gwei" for 0.000000005, "2k" for 2000, "50 cents" for 0.5).
func StatesInUnits(text, amount string) bool {
	want, ok := new(big.Rat).SetString(strings.TrimSpace(amount))
	if !ok || !decimal.MatchString(strings.TrimSpace(amount)) {
		return false
	}
	for _, s := range scaledAmounts(text) {
		if s.conv.Cmp(want) == 0 {
			return true
		}
	}
	return false
}

// DecimalString writes r as an exact decimal ("0.000000005", "2000"); ok
// is false when r has no exact decimal form within 36 places.
func DecimalString(r *big.Rat) (s string, ok bool) {
	for n := 0; n <= 36; n++ {
		s = r.FloatString(n)
		if back, _ := new(big.Rat).SetString(s); back != nil && back.Cmp(r) == 0 {
			if strings.Contains(s, ".") {
				s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
			}
			return s, true
		}
	}
	return "", false
}

// correctionMarkers take back an amount just written and give another
// ("5 usdc, no actually make it 7", "sorry I meant 8").
var reCorrection = regexp.MustCompile(`(?i)\b(no,?\s+actually|actually,?\s+(make|change)|make\s+(it|that)\s+\$?\d|change\s+(it|that)\s+to|sorry,?\s+i\s+meant?|i\s+meant|i\s+mean\s+\$?\d|no\s+wait|wait,?\s+(no|make)|scratch\s+that|correction|oops)\b`)

// Corrects reports whether the message corrects an amount it wrote: a
// correction marker and at least two different numbers. A payment read
// from it is confirmed before it runs.
func Corrects(text string) bool {
	if !reCorrection.MatchString(text) {
		return false
	}
	ns := Numbers(text)
	for i := range ns {
		for j := i + 1; j < len(ns); j++ {
			if ns[i].Cmp(ns[j]) != 0 {
				return true
			}
		}
	}
	for _, s := range scaledAmounts(text) {
		for _, n := range ns {
			if n.Cmp(s.conv) != 0 {
				return true
			}
		}
	}
	return false
}
