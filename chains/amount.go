package chains

import (
	"fmt"
	"math/big"
	"strings"
)

// ParseAmount converts a decimal string in whole units ("1.5") to base
// units of an asset with decimals places ("1500000" for 6). It accepts
// digits with at most one '.', no sign, no exponent, no more fractional
// digits than decimals; the result must be positive. Errors match
// ErrInvalidAmount.
func ParseAmount(s string, decimals int) (*big.Int, error) {
	if decimals < 0 || decimals > 77 {
		return nil, fmt.Errorf("%w: unsupported decimals %d", ErrInvalidAmount, decimals)
	}
	if s == "" {
		return nil, fmt.Errorf("%w: empty amount", ErrInvalidAmount)
	}
	if strings.HasPrefix(s, "-") {
		return nil, fmt.Errorf("%w %q: negative", ErrInvalidAmount, s)
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" && frac == "" || hasDot && frac == "" && whole == "" {
		return nil, fmt.Errorf("%w %q: not a decimal number", ErrInvalidAmount, s)
	}
	for _, part := range []string{whole, frac} {
		for _, r := range part {
			if r < '0' || r > '9' {
				return nil, fmt.Errorf("%w %q: not a decimal number", ErrInvalidAmount, s)
			}
		}
	}
	if len(frac) > decimals {
		// Trailing zeros beyond the precision are harmless ("1.500000000").
		extra := strings.TrimRight(frac[decimals:], "0")
		if extra != "" {
			return nil, fmt.Errorf("%w %q: more than %d decimal places", ErrInvalidAmount, s, decimals)
		}
		frac = frac[:decimals]
	}
	digits := whole + frac + strings.Repeat("0", decimals-len(frac))
	v, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, fmt.Errorf("%w %q: not a decimal number", ErrInvalidAmount, s)
	}
	if v.Sign() == 0 {
		return nil, fmt.Errorf("%w %q: must be greater than zero", ErrInvalidAmount, s)
	}
	if v.BitLen() > 256 {
		return nil, fmt.Errorf("%w %q: too large", ErrInvalidAmount, s)
	}
	return v, nil
}

// FormatAmount renders base units v of an asset with decimals places as a
// decimal string in whole units without trailing zeros ("1.5", "0", "12").
func FormatAmount(v *big.Int, decimals int) string {
	if v == nil {
		return "0"
	}
	neg := v.Sign() < 0
	s := new(big.Int).Abs(v).String()
	if decimals > 0 {
		if len(s) <= decimals {
			s = strings.Repeat("0", decimals-len(s)+1) + s
		}
		whole, frac := s[:len(s)-decimals], strings.TrimRight(s[len(s)-decimals:], "0")
		s = whole
		if frac != "" {
			s += "." + frac
		}
	}
	if neg {
		s = "-" + s
	}
	return s
}
