package chains

import (
	"encoding/json"
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

// Amount is a quantity of one asset in base units (wei, stroops, lamports,
// token units), with the asset's decimals so that it can be shown and
// compared in whole units. It is parsed once, where the asset is known
// (ParseAmountOf), and passed as a value; the zero Amount is 0 with 0
// decimals.
type Amount struct {
	units    big.Int
	decimals int
}

// NewAmount is units base units of an asset with decimals places (units is
// copied; nil means 0).
func NewAmount(units *big.Int, decimals int) Amount {
	var a Amount
	if units != nil {
		a.units.Set(units)
	}
	a.decimals = decimals
	return a
}

// ParseAmountOf parses a decimal in whole units ("1.5") for an asset with
// decimals places; the rules are ParseAmount's.
func ParseAmountOf(s string, decimals int) (Amount, error) {
	v, err := ParseAmount(s, decimals)
	if err != nil {
		return Amount{}, err
	}
	return NewAmount(v, decimals), nil
}

// Units returns the base units (a copy).
func (a Amount) Units() *big.Int { return new(big.Int).Set(&a.units) }

// Decimals is the asset's number of decimal places.
func (a Amount) Decimals() int { return a.decimals }

// Sign is -1, 0 or +1.
func (a Amount) Sign() int { return a.units.Sign() }

// Rat is the amount in whole units, exactly.
func (a Amount) Rat() *big.Rat {
	return new(big.Rat).SetFrac(a.Units(), pow10(a.decimals))
}

// String is the amount in whole units without trailing zeros ("1.5").
func (a Amount) String() string { return FormatAmount(&a.units, a.decimals) }

type amountJSON struct {
	Units    string `json:"units"`
	Decimals int    `json:"decimals"`
}

// MarshalJSON writes {"units":"<base units>","decimals":n}.
func (a Amount) MarshalJSON() ([]byte, error) {
	return json.Marshal(amountJSON{Units: a.units.String(), Decimals: a.decimals})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Amount) UnmarshalJSON(b []byte) error {
	var j amountJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Units == "" {
		j.Units = "0"
	}
	v, ok := new(big.Int).SetString(j.Units, 10)
	if !ok || j.Decimals < 0 || j.Decimals > 77 {
		return fmt.Errorf("%w: %q with %d decimals", ErrInvalidAmount, j.Units, j.Decimals)
	}
	*a = NewAmount(v, j.Decimals)
	return nil
}

// In is the amount in base units of an asset with decimals places: the
// same quantity, rescaled. A connector whose asset has fewer decimals than
// the amount carries refuses an amount it cannot represent exactly
// (ErrInvalidAmount), as ParseAmount refuses too many decimal places.
func (a Amount) In(decimals int) (*big.Int, error) {
	if decimals < 0 || decimals > 77 {
		return nil, fmt.Errorf("%w: unsupported decimals %d", ErrInvalidAmount, decimals)
	}
	v := a.Units()
	switch {
	case decimals > a.decimals:
		v.Mul(v, pow10(decimals-a.decimals))
	case decimals < a.decimals:
		q, r := new(big.Int).QuoRem(v, pow10(a.decimals-decimals), new(big.Int))
		if r.Sign() != 0 {
			return nil, fmt.Errorf("%w %q: more than %d decimal places", ErrInvalidAmount, a.String(), decimals)
		}
		v = q
	}
	return v, nil
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }
