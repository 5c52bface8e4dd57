// Package intent is the money gate: it reads a user's chat message and
// says which parts of it are instructions addressed to the agent, in the
// user's own words, this turn. A tool that moves value (tools.Tool's
// MovesValue: payments, withdrawals, schedules) runs only for an amount or
// address written in such a part. Everything else moves nothing:
// negations ("don't pay bob 5 yet"), questions ("should I pay bob 5?",
// "is it safe to send …"), how-to questions, conditionals ("if bob asks,
// pay him"), past tense ("I sent bob 5"), reported speech ("bob said to
// send him 5"), statements ("I owe bob 20") and text that is quoted or
// pasted (emails, "translate …", "summarise …", memos). Polite requests
// ("could you pay bob 5?", "please send …") are instructions.
//
// The builtin planner (llm/builtin) answers or asks instead of calling a
// money tool when the gate says so; the tools' restatement guard
// (agent/tools/restate.go) applies the same reading to every provider's
// calls, so a hosted model talked into a payment is stopped too. It is a
// leaf package (standard library only) so both can import it.
//
// The reading is deliberately cautious: when a message could be read two
// ways it is Ambiguous, and the agent asks. docs/tools.md lists the rules.
package intent

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mood is how a part of a message is meant.
type Mood int

// The moods, from "act on it" to "never act on it". When several apply to
// a clause the one listed last wins.
const (
	// Instruction: a request to the agent, imperative or polite.
	Instruction Mood = iota
	// Statement: "I owe bob 20", "bob needs 5 USDC" — information, not a
	// request. It becomes an instruction when the same message also says
	// "settle it", "pay him", "go ahead".
	Statement
	// Ambiguous: could be a request or not ("pay bob 5?", "can I send bob
	// 5?", "why don't you pay bob"); the agent asks.
	Ambiguous
	// Question: asks about something ("should I pay bob 5?", "what if I
	// send …", "is it safe to …").
	Question
	// HowTo: asks how to do something ("how do I send 5 USDC to bob?").
	HowTo
	// Reported: someone else's words or a message for someone else ("bob
	// said to send him 5", "tell bob to pay me").
	Reported
	// Past: something that already happened ("I sent bob 5 yesterday").
	Past
	// Future: for a later time the agent does not wait for ("pay bob 5
	// on friday", "send carol 3 tomorrow"); recurring payments are
	// schedules and are not this.
	Future
	// Negated: says not to ("don't pay bob yet", "never transfer …"), or
	// was taken back ("never mind").
	Negated
	// Conditional: depends on something the agent does not watch ("if bob
	// asks, pay him 5", "once the invoice is paid, send …").
	Conditional
	// Pasted: quoted or pasted text, and text to translate, summarise,
	// proofread or explain.
	Pasted
)

var moodNames = [...]string{"instruction", "statement", "ambiguous", "question", "how-to question", "reported speech", "past tense", "a later time", "negation", "conditional", "pasted or quoted text"}

func (m Mood) String() string {
	if int(m) < len(moodNames) {
		return moodNames[m]
	}
	return "unknown"
}

// Why says in words why a part in this mood moves no money.
func (m Mood) Why() string {
	switch m {
	case Statement:
		return "it states something rather than asking you to pay"
	case Ambiguous:
		return "it can be read as a request or not"
	case Question:
		return "it is a question, not a request"
	case HowTo:
		return "it asks how to do it, not to do it"
	case Reported:
		return "it reports someone else's words"
	case Past:
		return "it describes something that already happened"
	case Future:
		return "it is for a later time, and a one-off payment can only be made now"
	case Negated:
		return "it says not to (or takes the request back)"
	case Conditional:
		return "it depends on a condition"
	case Pasted:
		return "it is quoted or pasted text, not the user's own request"
	}
	return "it is a request"
}

// Clause is one part of a message and how it is meant. Start and End are
// byte offsets in the message.
type Clause struct {
	Start, End int
	Mood       Mood
}

// Reading is the gate's reading of one message.
type Reading struct {
	// Text is the message; Masked is Text with quoted and pasted text
	// blanked (same length, so offsets agree): only Masked is acted on.
	Text, Masked string
	Clauses      []Clause
}

// Read reads a message.
func Read(text string) Reading {
	r := Reading{Text: text}
	masked := Mask(text)
	masked, pasteFrom := maskPasted(text, masked)
	r.Masked = masked
	for _, sr := range Sentences(masked) {
		ws := words(text, masked, sr[0], sr[1])
		if len(ws) == 0 {
			continue
		}
		question := strings.HasSuffix(strings.TrimSpace(masked[sr[0]:sr[1]+min(1, len(masked)-sr[1])]), "?")
		r.Clauses = append(r.Clauses, readSentence(ws, sr, question, pasteFrom)...)
	}
	retract(r.Clauses, text, masked)
	promote(r.Clauses, text, masked)
	return r
}

// Mood is how the part [from, to) of the message is meant: the most
// cautious mood of the clauses it overlaps (Pasted when it overlaps none:
// it was masked).
func (r Reading) Mood(from, to int) Mood {
	found := false
	m := Instruction
	for _, c := range r.Clauses {
		if c.Start < to && from < c.End {
			found = true
			m = max(m, c.Mood)
		}
	}
	if !found {
		return Pasted
	}
	return m
}

// Instructed is the text of the instruction clauses (the rest blanked), the
// only text a money tool may take an amount or address from.
func (r Reading) Instructed() string {
	b := []byte(strings.Repeat(" ", len(r.Masked)))
	for _, c := range r.Clauses {
		if c.Mood == Instruction {
			copy(b[c.Start:c.End], r.Masked[c.Start:c.End])
		}
	}
	return string(b)
}

// Refusal is the mood that kept the text s (an amount or address written
// in the message) from being an instruction: the mood of the first
// clause holding it, or Pasted when only quoted or pasted text holds it.
func (r Reading) Refusal(contains func(clause string) bool) Mood {
	for _, c := range r.Clauses {
		if c.Mood != Instruction && contains(r.Masked[c.Start:c.End]) {
			return c.Mood
		}
	}
	return Pasted
}

// word is one word of a sentence: low is lower-cased with ’ as ', and
// trimmed of punctuation; start/end are byte offsets.
type word struct {
	low        string
	start, end int
	comma      bool // a comma (or colon, dash) followed the word
}

func words(orig, masked string, from, to int) []word {
	var out []word
	ScanWords(orig, masked, from, to, ".,!?;:)]}\"'”’»>*_…-–—", ",:-–—", func(s, e int, comma bool) {
		switch {
		case e > s:
			low := strings.ReplaceAll(strings.ToLower(orig[s:e]), "’", "'")
			out = append(out, word{low: low, start: s, end: e, comma: comma})
		case comma && len(out) > 0:
			out[len(out)-1].comma = true
		}
	})
	return out
}

// LeadTrim is the punctuation a word starts with that is not part of it.
// ScanWords matches it byte by byte, so there only its ASCII characters
// are trimmed.
const LeadTrim = "([{\"'“‘«<*_#"

// ScanWords calls word for each word of masked[from:to], split at white
// space as masked says, with its bounds [s, e) in orig (the text masked
// was made from, the same length), trimmed of LeadTrim at its start and of
// the characters of tail at its end; comma says that one of those trimmed
// at its end is in breaks. A word that is all such punctuation is reported
// with s == e (its comma belongs to the word before). The gate (words) and
// the builtin planner's tokenizer split words with it, each with its own
// tail and breaks.
func ScanWords(orig, masked string, from, to int, tail, breaks string, word func(s, e int, comma bool)) {
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
		for s < e && orig[s] < utf8.RuneSelf && strings.IndexByte(LeadTrim, orig[s]) >= 0 {
			s++
		}
		comma := false
		for e > s {
			r3, s3 := utf8.DecodeLastRuneInString(orig[s:e])
			if !strings.ContainsRune(tail, r3) {
				break
			}
			if strings.ContainsRune(breaks, r3) {
				comma = true
			}
			e -= s3
		}
		word(s, e, comma)
		i = j
	}
}

// splitters end a clause; "and"/"but"/"then" start the next one.
var splitters = map[string]bool{"and": true, "but": true, "then": true, "also": true, "plus": true, "&": true, "so": true, "+": true, "or": true}

// clauses splits a sentence's words at commas and connectors.
func clauses(ws []word) [][2]int {
	var out [][2]int
	start := 0
	for i, w := range ws {
		if splitters[w.low] && i > start {
			out = append(out, [2]int{start, i})
			start = i
			continue
		}
		if w.comma && i+1 > start {
			out = append(out, [2]int{start, i + 1})
			start = i + 1
		}
	}
	if start < len(ws) {
		out = append(out, [2]int{start, len(ws)})
	}
	return out
}

func has(ws []word, set map[string]bool) bool {
	for _, w := range ws {
		if set[w.low] {
			return true
		}
	}
	return false
}

// seq is the index where the phrase p (space separated) starts in ws, or -1.
// It reads p's words in place (phraseAt): the rules call it for every
// phrase of every clause of every chat. Splitting the constant phrases into
// slices was a quarter of a chat's allocations, and counting each phrase's
// words before the search was half of reading a one-word message.
func seq(ws []word, p string) int {
	p = trimSpaceLeft(p)
	if p == "" {
		return 0 // no words: found where the search starts
	}
	for i, w := range ws {
		if w.low != "" && w.low[0] != p[0] {
			continue
		}
		if phraseAt(ws[i:], p) {
			return i
		}
	}
	return -1
}

// phraseLen is the number of words of p.
func phraseLen(p string) int {
	n := 0
	for range strings.FieldsSeq(p) {
		n++
	}
	return n
}

// phraseAt: ws begins with the words of p. The phrases are the rules'
// constants, in ASCII, and a word holds no space (ScanWords splits at
// each), so a word is compared with p's next bytes in place: a phrase
// that differs in its first letter costs one compare.
func phraseAt(ws []word, p string) bool {
	p = trimSpaceLeft(p)
	for k := 0; p != ""; k++ {
		if k >= len(ws) {
			return false
		}
		w := ws[k].low
		if w == "" || !strings.HasPrefix(p, w) {
			return false
		}
		p = p[len(w):]
		if p != "" && !asciiSpace(p[0]) {
			return false // w is only the start of p's word
		}
		p = trimSpaceLeft(p)
	}
	return true
}

func trimSpaceLeft(p string) string {
	for p != "" && asciiSpace(p[0]) {
		p = p[1:]
	}
	return p
}

// asciiSpace: the bytes strings.Fields splits an ASCII phrase at.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func hasSeq(ws []word, ps ...string) bool {
	for _, p := range ps {
		if seq(ws, p) >= 0 {
			return true
		}
	}
	return false
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}
