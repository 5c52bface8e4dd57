package intent

import (
	"math/big"
	"regexp"
	"strings"
	"unicode"
)

// Amounts: the numbers a message states, in digits ("0.5", "$1,250.00",
// "5usdc") or in words ("twenty", "two and a half", "a hundred", "fifty
// five", "twenty-five", "one point five"). One rule for the planner, which
// reads them as amounts, and the restatement guard, which checks a money
// tool's amount was stated.

var thousands = regexp.MustCompile(`^\d{1,3}(,\d{3})+(\.\d+)?$`)
var decimal = regexp.MustCompile(`^(\d+\.?\d*|\.\d+)$`)

// Numbers lists the numbers written in text: digit tokens standing alone
// (digits inside a word or hex string such as "0x5f" or "abc12" do not
// count; "5usdc" does) and numbers in words.
func Numbers(text string) []*big.Rat {
	out := digitNumbers(text)
	ws := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && r != '\''
	})
	for i := 0; i < len(ws); {
		if v, n := WordNumber(ws[i:]); n > 0 {
			if r, ok := new(big.Rat).SetString(v); ok {
				out = append(out, r)
			}
			i += n
			continue
		}
		i++
	}
	return out
}

// States reports whether text states amount (numerically: "0.5", ".5" and
// "0.50" are the same amount; "twenty" states 20). A number written with
// a scaling unit ("5 gwei", "2k") states only its converted value
// (StatesInUnits), never the number as written.
func States(text, amount string) bool {
	want, ok := new(big.Rat).SetString(strings.TrimSpace(amount))
	if !ok || !decimal.MatchString(strings.TrimSpace(amount)) {
		return false
	}
	for _, v := range Numbers(withoutScaled(text)) {
		if v.Cmp(want) == 0 {
			return true
		}
	}
	return false
}

func digitNumbers(text string) []*big.Rat {
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
		if k > j && !gluedAsset(string(rs[j:k])) {
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

func gluedAsset(w string) bool {
	switch strings.ToUpper(w) {
	case "ETH", "ZEN", "POL", "XLM", "SOL", "USDC", "USDT", "DAI", "EURC", "WETH", "USD":
		return true
	}
	return false
}

var units = map[string]int64{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
	"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
	"seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fourty": 40,
	"fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}

func isNumberWord(w string) bool {
	_, ok := units[w]
	return ok || w == "hundred" || w == "thousand"
}

// WordNumber reads a number in words at the start of ws (lower-case words;
// hyphenated ones such as "twenty-five" are split here): the decimal
// string and how many words of ws it used, or n = 0.
func WordNumber(ws []string) (value string, n int) {
	var parts []string // hyphen-split words, with the index of ws they came from
	var from []int
	for i, w := range ws {
		if i > 12 {
			break
		}
		for _, p := range strings.Split(strings.Trim(w, ".,!?;:"), "-") {
			parts = append(parts, p)
			from = append(from, i)
		}
	}
	total, cur := new(big.Rat), new(big.Rat)
	seen := false
	used := 0
	at := func(i int) string {
		if i < len(parts) {
			return parts[i]
		}
		return ""
	}
	i := 0
	for i < len(parts) {
		w := parts[i]
		switch {
		case units[w] > 0 || (w == "zero" && !seen):
			if seen && i > 0 && w != "dozen" {
				// "twenty five" and "hundred five" go on; "five five" stops.
				prev := units[parts[i-1]]
				if !(prev >= 20 && prev%10 == 0 && units[w] < 10) && parts[i-1] != "hundred" && parts[i-1] != "thousand" && parts[i-1] != "and" {
					goto done
				}
			}
			if w == "dozen" && seen {
				cur.Mul(cur, big.NewRat(12, 1))
			} else {
				cur.Add(cur, big.NewRat(units[w], 1))
			}
			seen = true
			i++
		case (w == "a" || w == "an") && !seen && (at(i+1) == "hundred" || at(i+1) == "thousand" || at(i+1) == "dozen"):
			cur.SetInt64(1)
			if at(i+1) == "dozen" {
				cur.SetInt64(12)
			} else if at(i+1) == "hundred" {
				cur.SetInt64(100)
			} else {
				cur.SetInt64(1000)
			}
			seen = true
			i += 2
		case w == "hundred" && seen:
			cur.Mul(cur, big.NewRat(100, 1))
			i++
		case w == "thousand" && seen:
			cur.Mul(cur, big.NewRat(1000, 1))
			total.Add(total, cur)
			cur = new(big.Rat)
			i++
		case w == "and" && seen && (at(i+1) == "a" || at(i+1) == "one") && (at(i+2) == "half" || at(i+2) == "quarter"):
			frac := big.NewRat(1, 2)
			if at(i+2) == "quarter" {
				frac = big.NewRat(1, 4)
			}
			cur.Add(cur, frac)
			i += 3
			used = i
			goto done
		case w == "and" && seen && units[at(i+1)] > 0 && i > 0 && (parts[i-1] == "hundred" || parts[i-1] == "thousand"):
			i++
			continue
		case w == "point" && seen && (units[at(i+1)] > 0 || at(i+1) == "zero") && units[at(i+1)] < 10:
			digits := ""
			i++
			for i < len(parts) && (at(i) == "zero" || units[at(i)] > 0 && units[at(i)] < 10) {
				digits += string(rune('0' + units[at(i)]))
				i++
			}
			frac, _ := new(big.Rat).SetString("0." + digits)
			cur.Add(cur, frac)
			used = i
			goto done
		default:
			goto done
		}
		used = i
	}
done:
	if !seen || used == 0 {
		return "", 0
	}
	total.Add(total, cur)
	return ratString(total), from[used-1] + 1
}

// ratString renders r as a plain decimal ("2.5", "20").
func ratString(r *big.Rat) string {
	s := r.FloatString(8)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
