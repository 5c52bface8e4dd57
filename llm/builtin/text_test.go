package builtin

import (
	"math/rand/v2"
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
	// Random strings of ASCII and Unicode spaces, letters, multi-byte
	// runes and broken UTF-8.
	pieces := []string{" ", "\t", "\n", "\v", "\f", "\r", "\u0085", "\u00a0", "\u1680", "\u2000", "\u200a",
		"\u2028", "\u202f", "\u3000", "\u200b", "a", "Z", "9", ",", "é", "語", "\U0001F600", "\xff", "\xc3", "\xe2\x80", "\x1c"}
	r := rand.New(rand.NewPCG(3, 8))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := wordCount(s), len(strings.Fields(s)); got != want {
			t.Fatalf("wordCount(%q) = %d, want %d", s, got, want)
		}
	}
}

func BenchmarkWordCount(b *testing.B) {
	s := strings.Repeat("You are the agent's assistant. Answer the owner's question in plain words; never move money unless asked.\n", 40)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		wordCount(s)
	}
}
