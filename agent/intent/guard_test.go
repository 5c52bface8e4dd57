package intent

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestGuardsNeverHideAMatch checks each guarded regexp's needles: text
// the guard skips must be text the regexp does not match. Every sample is
// a mutation of a text that matches one of the regexp's alternatives, so
// the samples sit on both sides of each needle (a needle deleted, its case
// changed, a non-ASCII letter put in).
func TestGuardsNeverHideAMatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		re    guarded
		seeds []string
	}{
		{"reChatLine", reChatLine, []string{"bob: send 5 eth", "[10:01] Alice Smith: pay me", "@carol.x: hi there"}},
		{"reWhatWrote", reWhatWrote, []string{"send 5 eth is what bob wrote", "pay carol, that's exactly what she said",
			"tip all - was just what my friend Bob texted"}},
		{"reTitleOf", reTitleOf, []string{"Pay now was the subject line of the email", "send it is the name of the song",
			"tip big, is a tagline for the ad", "go now are the last line in the memo", "hello is my slogan from work"}},
		{"reMeans", reMeans, []string{"what does send 5 eth mean", "the meaning of pay bob?", "explain to me what pay all means",
			"translation of send it", "define pay all meant", "What would Tip Bob imply"}},
		{"reHeader", reHeader, []string{"From: bob\nsend", "Subject. x", "tell bob: hi", "Dear Bob,", "hi\n---", "On Monday bob wrote:",
			"he says: pay", "  e.g: pay", "Note to self: send"}},
		{"hereIs", hereIs, []string{"here's an email", "This is the message", "below is my note", "see the invoice", "Heres a DM",
			"here is the text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			matched, skipped := 0, 0
			for _, s := range tc.seeds {
				if !tc.re.MatchString(s) {
					t.Fatalf("seed %q does not match", s)
				}
			}
			for i := 0; i < 20000; i++ {
				s := mutate(r, tc.seeds[r.IntN(len(tc.seeds))])
				may, match := tc.re.may(s), tc.re.MatchString(s)
				if match && !may {
					t.Fatalf("the guard skips %q, which the regexp matches", s)
				}
				if match {
					matched++
				}
				if !may {
					skipped++
				}
			}
			// The samples must test something on both sides.
			if matched < 1000 || skipped < 200 {
				t.Fatalf("matched %d, skipped %d of 20000: the mutations no longer reach both sides", matched, skipped)
			}
		})
	}
}

// mutate changes s one to four times: a byte deleted, a run's case
// flipped, a token or a non-ASCII letter inserted.
func mutate(r *rand.Rand, s string) string {
	tokens := []string{" ", ":", ".", "-", "---", "\n", "\t", ",", "?", "'", "what", "mean", "line", "here", "this", "dear",
		"ſ", "\u212a", "é", "x"}
	b := []byte(s)
	for n := 1 + r.IntN(4); n > 0; n-- {
		switch r.IntN(4) {
		case 0:
			if len(b) > 0 {
				i := r.IntN(len(b))
				b = slices.Delete(b, i, i+1)
			}
		case 1:
			if len(b) > 0 {
				i := r.IntN(len(b))
				j := min(len(b), i+1+r.IntN(8))
				for k := i; k < j; k++ {
					switch c := b[k]; {
					case 'a' <= c && c <= 'z':
						b[k] = c - 'a' + 'A'
					case 'A' <= c && c <= 'Z':
						b[k] = c - 'A' + 'a'
					}
				}
			}
		default:
			i := r.IntN(len(b) + 1)
			b = slices.Insert(b, i, []byte(tokens[r.IntN(len(tokens))])...)
		}
	}
	return string(b)
}

// TestSeqAsFields checks seq and phraseAt against the definition they
// replace: p split with strings.Fields, compared word by word at every
// position.
func TestSeqAsFields(t *testing.T) {
	want := func(ws []word, p string) int {
		f := strings.Fields(p)
		for i := 0; i+len(f) <= len(ws); i++ {
			ok := true
			for k, w := range f {
				if ws[i+k].low != w {
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
	// Words hold no space: ScanWords splits at every one.
	vocab := []string{"send", "sen", "sending", "this", "is", "the", "following", "below:", "below", "a", "", "x"}
	phrases := append(slices.Clone(introducers), "this  is", " the following", "send\tit ", "below:", "a")
	r := rand.New(rand.NewPCG(2, 3))
	for i := 0; i < 20000; i++ {
		ws := make([]word, r.IntN(6))
		for k := range ws {
			ws[k].low = vocab[r.IntN(len(vocab))]
		}
		var p string
		if r.IntN(2) == 0 {
			p = phrases[r.IntN(len(phrases))]
		} else {
			var parts []string
			for n := 1 + r.IntN(3); n > 0; n-- {
				parts = append(parts, vocab[r.IntN(len(vocab))])
			}
			p = strings.Join(parts, " ")
		}
		if got, w := seq(ws, p), want(ws, p); got != w {
			t.Fatalf("seq(%q, %q) = %d, want %d", lows(ws), p, got, w)
		}
		if got, w := phraseAt(ws, p), len(strings.Fields(p)) <= len(ws) && want(ws[:len(strings.Fields(p))], p) == 0; got != w {
			t.Fatalf("phraseAt(%q, %q) = %v, want %v", lows(ws), p, got, w)
		}
	}
}

func lows(ws []word) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.low)
	}
	return out
}
