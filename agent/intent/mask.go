package intent

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mask blanks out what the planner must never act on: quoted text ("…",
// “…”, «…», `…`, '…' and ‘…’ but not apostrophes), someone else's words
// (maskFramed), fenced code blocks, <tag>…</tag> data blocks (memories,
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
	maskSingleQuotes(b)
	maskFramed(b)
	return string(b)
}

// maskSingleQuotes blanks text in single quotes ('…', ‘…’): a quote opens
// after a space, a line start or punctuation and before a letter, digit or
// "$", and closes before a space, punctuation or the end, so apostrophes
// ("don't", "bob's", "bobs' fees") are not quotes. An unclosed quote
// masks nothing.
func maskSingleQuotes(b []byte) {
	letter := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	prevRune := func(i int) rune {
		if i == 0 {
			return ' '
		}
		r, _ := utf8.DecodeLastRune(b[:i])
		return r
	}
	nextRune := func(i int) rune {
		if i >= len(b) {
			return ' '
		}
		r, _ := utf8.DecodeRune(b[i:])
		return r
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if (r != '\'' && r != '‘') || letter(prevRune(i)) || !(letter(nextRune(i+size)) || nextRune(i+size) == '$') {
			i += size
			continue
		}
		found := -1
		for j := i + size; j < len(b) && b[j] != '\n'; {
			r2, s2 := utf8.DecodeRune(b[j:])
			if (r2 == '\'' || r2 == '’') && !unicode.IsSpace(prevRune(j)) && !letter(nextRune(j+s2)) {
				found = j + s2
				break
			}
			j += s2
		}
		if found < 0 {
			i += size
			continue
		}
		for k := i; k < found; k++ {
			b[k] = ' '
		}
		i = found
	}
}

// Framings that make a command someone else's words or the thing asked
// about, not a request: "<who>: <text>" chat lines, "<text> is what <who>
// wrote", "<text> was the subject of …", "what does <text> mean", "the
// meaning of <text>". The <text> part is blanked.
var (
	reChatLine  = guarded{regexp.MustCompile(`(?m)^[ \t]*(?:\[[^\]\n]{1,30}\][ \t]*)?(@?[A-Za-z][\w.@-]{0,30}(?:[ \t][A-Za-z][\w.-]{0,30})?)[ \t]*:[ \t]+(\S[^\n]*)$`), []string{":"}}
	reWhatWrote = guarded{regexp.MustCompile(`(?im)^(.{3,}?)[ \t,-]+(?:is|was|were|are|that's|thats)[ \t]+(?:exactly[ \t]+|just[ \t]+)?what[ \t]+(?:\S+[ \t]+){1,3}?(?:wrote|write|writes|said|say|says|texted|sent|posted|asked|typed|messaged|emailed|told|tweeted|suggested|meant|mean|means|put)\b`), []string{"what"}}
	reTitleOf   = guarded{regexp.MustCompile(`(?im)^(.{3,}?)[ \t,-]+(?:is|was|were|are)[ \t]+(?:the|a|an|my|his|her|their|our)[ \t]+(?:title|subject|subject line|name|caption|heading|headline|tagline|text|content|description|first line|last line|line|message|memo|label|slogan|lyric|quote)[ \t]+(?:of|in|on|for|from)\b`),
		// "headline", "tagline", "first line" and "last line" hold "line".
		[]string{"title", "subject", "name", "caption", "heading", "line", "text", "content", "description", "message", "memo", "label", "slogan", "lyric", "quote"}}
	reMeans = guarded{regexp.MustCompile(`(?i)\bwhat[ \t]+(?:does|do|did|would)[ \t]+(.+?)[ \t]+(?:mean|means|imply|say)\b|\b(?:meaning|definition|translation)[ \t]+of[ \t]+(.+?)(?:\?|$)|\b(?:explain|define|interpret|quote)[ \t]+(?:to[ \t]+me[ \t]+)?(?:what[ \t]+)?(.+?)[ \t]+(?:means|meant)\b`),
		// "meaning", "means" and "meant" hold "mean".
		[]string{"what", "mean", "definition", "translation"}}
)

// chatLabelStop: words that make "<word>: …" the user's own line ("hey
// veil: send …", "quick question: …"), not someone's quoted chat line.
var chatLabelStop = set(`hey hi hello yo veil agent bot assistant ok okay so also btw fyi please pls question quick update task
	request todo ps p.s edit note reminder important urgent fine well now then step first second next last finally and
	but or send pay transfer tip give`)

func maskFramed(b []byte) {
	s := string(b)
	blank := func(from, to int) {
		for i := from; i < to && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	for _, m := range findAll(reChatLine, s) {
		label := strings.Fields(strings.ToLower(s[m[2]:m[3]]))
		stop := false
		for _, w := range label {
			if chatLabelStop[strings.Trim(w, "@.")] {
				stop = true
			}
		}
		if !stop {
			blank(m[4], m[5])
		}
	}
	for _, re := range []guarded{reWhatWrote, reTitleOf} {
		for _, m := range findAll(re, s) {
			blank(m[2], m[3])
		}
	}
	for _, m := range findAll(reMeans, s) {
		for g := 1; g <= 3; g++ {
			if m[2*g] >= 0 {
				blank(m[2*g], m[2*g+1])
			}
		}
	}
}

// findAll is re's FindAllStringSubmatchIndex, skipped when re cannot match.
func findAll(re guarded, s string) [][]int {
	if !re.may(s) {
		return nil
	}
	return re.FindAllStringSubmatchIndex(s, -1)
}

// asciiLower lowercases A-Z only, so byte offsets are kept.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lowerASCII(c)
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
