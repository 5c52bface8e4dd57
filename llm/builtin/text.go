package builtin

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// tok is one word of the user's message. raw keeps the user's spelling
// (addresses are case-sensitive), low is for matching; start/end are byte
// offsets of raw in the original message.
type tok struct {
	raw, low   string
	start, end int
	comma      bool // a comma followed the word
}

// mask blanks out what the planner must never act on: quoted text ("…",
// “…”, «…», `…`), fenced code blocks, <tag>…</tag> data blocks (memories,
// context) and lines quoted with '>'. The result has the same length in
// bytes so offsets still point into the original. An unterminated quote
// masks to the end of the text.
func mask(s string) string {
	b := []byte(s)
	blank := func(from, to int) {
		for i := from; i < to && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	// Fenced code blocks.
	for from := 0; ; {
		i := strings.Index(s[from:], "```")
		if i < 0 {
			break
		}
		i += from
		j := strings.Index(s[i+3:], "```")
		if j < 0 {
			blank(i, len(b))
			break
		}
		blank(i, i+3+j+3)
		from = i + 3 + j + 3
	}
	// <tag> … </tag> blocks (tag names matched without regard to ASCII case).
	lower := asciiLower(string(b))
	for i := 0; i < len(lower); {
		lt := strings.IndexByte(lower[i:], '<')
		if lt < 0 {
			break
		}
		lt += i
		gt := strings.IndexByte(lower[lt:], '>')
		if gt < 0 {
			break
		}
		gt += lt
		name := lower[lt+1 : gt]
		if name == "" || len(name) > 40 || !isTagName(name) {
			i = lt + 1
			continue
		}
		end := strings.Index(lower[gt:], "</"+name+">")
		if end < 0 {
			// An unclosed tag hides only itself.
			blank(lt, gt+1)
			i = gt + 1
			continue
		}
		blank(lt, gt+end+len(name)+3)
		i = gt + end + len(name) + 3
	}
	// Lines quoted with '>'.
	lineStart := 0
	for i := 0; i <= len(b); i++ {
		if i == len(b) || b[i] == '\n' {
			line := strings.TrimLeft(string(b[lineStart:i]), " \t")
			if strings.HasPrefix(line, ">") {
				blank(lineStart, i)
			}
			lineStart = i + 1
		}
	}
	// Quotes.
	pairs := map[rune]rune{'"': '"', '“': '”', '”': '”', '«': '»', '`': '`', '„': '“'}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		closeR, ok := pairs[r]
		if !ok {
			i += size
			continue
		}
		j := i + size
		found := -1
		for j < len(b) {
			r2, s2 := utf8.DecodeRune(b[j:])
			if r2 == closeR || (closeR == '”' && r2 == '"') || (closeR == '"' && r2 == '”') {
				found = j + s2
				break
			}
			j += s2
		}
		if found < 0 {
			blank(i, len(b))
			break
		}
		blank(i, found)
		i = found
	}
	return string(b)
}

// asciiLower lowercases A-Z only, so byte offsets are kept.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isTagName(s string) bool {
	if s[0] < 'A' || s[0] > 'z' || (s[0] > 'Z' && s[0] < 'a') {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// sentences splits masked text at . ! ? ; and newlines that end a
// sentence (followed by space or the end: "0.5" and "alice.veil" stay
// whole). It returns [start, end) byte ranges.
func sentences(masked string) [][2]int {
	var out [][2]int
	start := 0
	for i := 0; i < len(masked); i++ {
		c := masked[i]
		end := false
		switch c {
		case '\n':
			end = true
		case '.', '!', '?', ';':
			end = i+1 == len(masked) || masked[i+1] == ' ' || masked[i+1] == '\n' || masked[i+1] == '\t'
		}
		if end {
			if strings.TrimSpace(masked[start:i]) != "" {
				out = append(out, [2]int{start, i})
			}
			start = i + 1
		}
	}
	if strings.TrimSpace(masked[start:]) != "" {
		out = append(out, [2]int{start, len(masked)})
	}
	return out
}

const leadTrim = "([{\"'“‘«<*_#"
const tailTrim = ".,!?;:)]}\"'”’»>*_…"

// tokenize splits masked[from:to] into words, with offsets into the
// original text orig (same length as masked).
func tokenize(orig, masked string, from, to int) []tok {
	var out []tok
	i := from
	for i < to {
		r, size := utf8.DecodeRuneInString(masked[i:])
		if unicode.IsSpace(r) {
			i += size
			continue
		}
		j := i
		for j < to {
			r2, s2 := utf8.DecodeRuneInString(masked[j:])
			if unicode.IsSpace(r2) {
				break
			}
			j += s2
		}
		s, e := i, j
		for s < e && strings.ContainsRune(leadTrim, rune(orig[s])) && orig[s] < utf8.RuneSelf {
			s++
		}
		comma := false
		for e > s {
			r3, s3 := utf8.DecodeLastRuneInString(orig[s:e])
			if !strings.ContainsRune(tailTrim, r3) {
				break
			}
			if r3 == ',' {
				comma = true
			}
			e -= s3
		}
		if e > s {
			raw := orig[s:e]
			out = append(out, tok{raw: raw, low: strings.ToLower(raw), start: s, end: e, comma: comma})
		} else if comma && len(out) > 0 {
			out[len(out)-1].comma = true
		}
		i = j
	}
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

// hasPrefix reports whether a word starts with one of ps.
func (c clause) hasPrefix(ps ...string) bool {
	for _, t := range c.toks {
		for _, p := range ps {
			if strings.HasPrefix(t.low, p) {
				return true
			}
		}
	}
	return false
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

// wordCount is a rough token count.
func wordCount(s string) int { return len(strings.Fields(s)) }
