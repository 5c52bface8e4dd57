package builtin

import (
	"strings"
	"testing"
)

// TestWordCountAsFields: the count is the length of strings.Fields, for
// ASCII and Unicode spaces, and for bytes that are not UTF-8.
func TestWordCountAsFields(t *testing.T) {
	for _, s := range []string{"", " ", "hello", "  send 5\teth\n to  bob ", "a\u00a0b\u2003c", "\u3000x\u3000",
		"\xff\xfe y", "x\xc3", "{\"to\":\"bob\", \"amount\": 5}", "é é"} {
		if got, want := wordCount(s), len(strings.Fields(s)); got != want {
			t.Errorf("wordCount(%q) = %d, want %d", s, got, want)
		}
	}
}
