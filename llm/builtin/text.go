package builtin

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/veilhq/veil/agent/intent"
)

// tok is one word of the user's message. raw keeps the user's spelling
// (addresses are case-sensitive), low is for matching; start/end are byte
// offsets of raw in the original message.
type tok struct {
	raw, low   string
	start, end int
	comma      bool // a comma followed the word
}

// tailTrim is what a word's end is trimmed of (the gate also trims
// dashes); a trimmed comma marks the word as followed by a comma.
const tailTrim = ".,!?;:)]}\"'”’»>*_…"

// tokenize splits masked[from:to] into words, with offsets into the
// original text orig (same length as masked): the gate's ScanWords.
func tokenize(orig, masked string, from, to int) []tok {
	var out []tok
	intent.ScanWords(orig, masked, from, to, tailTrim, ",", func(s, e int, comma bool) {
		switch {
		case e > s:
			raw := orig[s:e]
			out = append(out, tok{raw: raw, low: strings.ToLower(raw), start: s, end: e, comma: comma})
		case comma && len(out) > 0:
			out[len(out)-1].comma = true
		}
	})
	return out
}

// clause is a run of words that expresses (at most) one request.
type clause struct {
	toks []tok
	// text is the whole message; [from, to) is the clause's span in it,
	// quoted text included (for memos).
	text     string
	from, to int
}

// raw is the clause's original text.
func (c clause) raw() string {
	if c.to <= c.from || c.to > len(c.text) {
		return ""
	}
	return c.text[c.from:c.to]
}

// hasSuffix reports whether a word ends with suf.
func (c clause) hasSuffix(suf string) bool {
	for _, t := range c.toks {
		if strings.HasSuffix(t.low, suf) {
			return true
		}
	}
	return false
}

// has reports whether any word equals one of ws.
func (c clause) has(ws ...string) bool { return c.find(ws...) >= 0 }

// find is the index of the first word equal to one of ws, or -1.
func (c clause) find(ws ...string) int {
	for i, t := range c.toks {
		for _, w := range ws {
			if t.low == w {
				return i
			}
		}
	}
	return -1
}

// seq is the index where the words ws appear in a row, or -1.
func (c clause) seq(ws ...string) int {
	for i := 0; i+len(ws) <= len(c.toks); i++ {
		ok := true
		for k, w := range ws {
			if c.toks[i+k].low != w {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// connectors separate clauses.
var connectors = map[string]bool{"and": true, "then": true, "also": true, "plus": true, "&": true, "afterwards": true, "+": true}

// clauses splits a sentence's words at connectors and commas. Connector
// words are dropped; indexes into ws are kept so clauses can be merged.
func clauses(ws []tok) [][2]int {
	var out [][2]int
	start := 0
	flush := func(end int) {
		if end > start {
			out = append(out, [2]int{start, end})
		}
	}
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w.low == "and" && i > 0 && i+1 < len(ws) && (numberWord(ws[i-1].low) &&
			(ws[i+1].low == "a" || ws[i+1].low == "one" || numberWord(ws[i+1].low)) || ws[i-1].low == "each" && ws[i+1].low == "every") {
			continue // "two and a half", "a hundred and five", "each and every day"
		}
		if connectors[w.low] {
			flush(i)
			start = i + 1
			continue
		}
		if w.low == "after" && i+1 < len(ws) && ws[i+1].low == "that" {
			flush(i)
			start = i + 2
			i++
			continue
		}
		if w.comma {
			flush(i + 1)
			start = i + 1
		}
	}
	flush(len(ws))
	return out
}

// wordCount is a rough token count: the words strings.Fields would
// split s into, counted without building them (the whole history is
// counted on every turn). ASCII bytes are looked up in a table, as
// strings.Fields does; only other bytes are decoded as runes.
func wordCount(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); {
		var space bool
		if c := s[i]; c < utf8.RuneSelf {
			space = asciiSpace[c] != 0
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// asciiSpace marks the ASCII bytes unicode.IsSpace accepts.
var asciiSpace = [utf8.RuneSelf]uint8{'\t': 1, '\n': 1, '\v': 1, '\f': 1, '\r': 1, ' ': 1}

// numberWord reports whether w is part of a number in words.
func numberWord(w string) bool {
	_, n := intent.WordNumber([]string{w})
	return n > 0 || w == "hundred" || w == "thousand"
}
