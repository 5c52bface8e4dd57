package intent

import (
	"regexp"
	"unicode/utf8"
)

// guarded is a regexp with a cheap test that skips it: every match holds
// one of needles (lowercase ASCII), in any case. Reading a message runs
// the masking regexps on every chat turn, and most messages hold none of
// their words: running them anyway was a quarter of reading a short
// message. TestGuardsNeverHideAMatch checks each needle list against its
// regexp.
type guarded struct {
	*regexp.Regexp
	needles []string
}

// may reports whether the regexp can match s. Only ASCII text is judged
// by the needles: under (?i), a few non-ASCII letters fold to ASCII ones
// ("ſ" to "s", the Kelvin sign to "k"), so other text always runs the
// regexp.
func (g guarded) may(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	for _, n := range g.needles {
		if containsFoldASCII(s, n) {
			return true
		}
	}
	return false
}

// containsFoldASCII reports whether s holds needle (lowercase ASCII) in
// any ASCII case.
func containsFoldASCII(s, needle string) bool {
	n := len(needle)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for j < n && lowerASCII(s[i+j]) == needle[j] {
			j++
		}
		if j == n {
			return true
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
