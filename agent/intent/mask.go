package intent

import (
	"strings"
	"unicode/utf8"
)

// Mask blanks out what the planner must never act on: quoted text ("…",
// “…”, «…», `…`), fenced code blocks, <tag>…</tag> data blocks (memories,
// context) and lines quoted with '>'. The result has the same length in
// bytes so offsets still point into the original. An unterminated quote
// masks to the end of the text.
func Mask(s string) string {
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

// Sentences splits masked text at . ! ? ; and newlines that end a
// sentence (followed by space or the end: "0.5" and "alice.veil" stay
// whole). It returns [start, end) byte ranges.
func Sentences(masked string) [][2]int {
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
