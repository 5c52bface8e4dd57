package intent

import (
	"regexp"
	"strconv"
	"strings"
)

// fillers are skipped before the first word that decides a sentence's
// form ("hey veil, ok so could you …").
var fillers = set(`hey hi hello yo ok okay so um uh well oh alright right now veil agent buddy mate dude hiya heya gm
	good morning afternoon evening there quick question just also and then yes yeah yep sure great thanks cool`)

// politeStarts are requests however they end ("could you pay bob 5?").
var politeStarts = []string{
	"can you", "could you", "would you", "will you", "can u", "could u", "would u", "will u", "can ya", "could ya",
	"would you mind", "mind", "please", "pls", "plz", "pleas", "kindly", "i'd like you to", "i would like you to",
	"i want you to", "i need you to", "id like you to", "i'd like to", "i would like to", "i want to", "i wanna",
	"i need to", "id like to", "i'd love to", "i would love to", "let's", "lets", "let us", "go ahead and", "go ahead",
	"you can", "you may", "you should", "you must", "you need to", "time to", "i'd appreciate it if you",
	"i'd appreciate if you", "would you be able to", "are you able to", "any chance you could", "be a dear and",
	"do me a favor and", "do me a favour and", "help me", "i'd like", "i would like", "i want", "i need",
}

// deliberation marks a question about whether to act, wherever it is.
var deliberation = []string{
	"should i", "should we", "whether", "what if", "what happens", "what would happen", "what will happen",
	"is it safe", "is it ok", "is it okay", "is it wise", "is it a good idea", "is that safe", "would it be",
	"do you think", "i wonder", "wondering", "not sure", "thinking about", "thinking of", "considering",
	"good idea", "bad idea", "worth it", "any advice", "advise", "recommend", "would you recommend", "what do you think",
	"is there any risk", "what are the risks", "risky", "safe to", "better to", "should i be", "any risk", "risk in",
	"risks of", "risk of", "dangerous", "a scam", "legit", "hypothetically", "let's say", "lets say", "imagine", "suppose",
	"supposing", "in theory", "theoretically", "pretend", "what would my", "would i have", "how much would",
}

var howTo = []string{
	"how do i", "how can i", "how to", "how would i", "how should i", "how do you", "how does one", "how do we",
	"how can we", "how would one", "what's the way to", "whats the way to", "is there a way to", "steps to",
	"instructions for", "show me how", "explain how", "tell me how", "teach me", "how does sending", "how does paying",
	"how does it work", "how does this work", "walk me through", "what's the process", "whats the process",
	"what do i need to", "what is needed to", "how would you",
}

// questionStarts open a question when they begin a sentence.
var questionStarts = set(`what whats what's why is are was were would should do does did will who whom where which when
	isn't aren't am has have how hows how's shall whose wasn't weren't didn't doesn't don't`)

// ambiguousStarts: offers and suggestions that may or may not be requests.
var ambiguousStarts = []string{"can i", "could i", "may i", "can we", "could we", "shall i", "shall we", "why don't you",
	"why dont you", "why not", "how about", "what about", "maybe", "perhaps", "might", "i might", "i could", "i think",
	"i guess", "i suppose", "i'm thinking", "im thinking", "probably", "i should", "we should", "i was going to",
	"i'm going to", "im going to", "i am going to", "i'll", "ill", "i will", "gonna", "i'm gonna", "im gonna"}

var conditionals = set(`if unless whenever once provided assuming supposing`)

// politeIf: conditions that are only politeness.
var politeIf = []string{"if you can", "if possible", "if you don't mind", "if you dont mind", "if that's ok",
	"if thats ok", "if that's okay", "if you could", "if you would", "if you please", "if you have time",
	"when you can", "when you get a chance", "when possible", "when convenient", "when you have a moment",
	"when you have time", "whenever you can", "at once", "once a", "once per", "once every", "once more",
	"if it's not too much trouble", "if its not too much trouble", "if you would be so kind"}

var negations = set(`not never don't dont doesn't didnt didn't won't wont wouldn't wouldnt shouldn't shouldnt mustn't
	can't cant cannot nobody nothing nor no neither refrain avoid stop quit skip without halt hold nope nah dnt do'nt`)

// notNegation: phrases with a negation word that do not negate a request.
var notNegation = []string{"no problem", "no worries", "not only", "no rush", "no hurry", "if not", "no matter",
	"without fail", "don't hesitate", "dont hesitate", "don't wait", "dont wait", "no later than", "not later than"}

// reminders are requests to remember, not to act now.
var reminders = []string{"don't forget", "dont forget", "do not forget", "remember to", "remind me", "make sure to remember"}

var retractions = []string{"jk", "j/k", "just kidding", "kidding", "just joking", "joking", "never mind", "nevermind", "nvm", "scratch that", "forget it", "forget that", "forget about it",
	"cancel that", "ignore that", "ignore this", "on second thought", "on second thoughts", "actually no", "actually don't",
	"actually dont", "wait no", "no wait", "hold on", "hold that", "changed my mind", "change of plans", "disregard"}

// pastVerbs are past forms of value-moving verbs.
var pastVerbs = set(`sent paid payed transferred transfered gave given wired tipped moved withdrew withdrawn scheduled
	settled shot remitted sended deposited cashed swept forwarded`)

var subjects = set(`i we you he she they i've ive we've you've they've he's she's i'd we'd it bob alice carol dave eve`)

var pastMarkers = set(`already yesterday ago earlier previously last`)

// passive: "get paid", "be paid" are not past acts.
var passive = set(`get gets getting got be been being is are`)

var reportVerbs = set(`said says told tells asked asks wants wanted wrote writes claims claimed mentioned suggested
	requested requests demanded demands instructed insists insisted texted emailed messaged replied says:`)

// relayVerbs start a message for someone else ("tell bob to pay me").
var relayVerbs = set(`tell ask remind message email text inform notify ping dm let`)

// statementVerbs follow a name that is the subject ("bob needs 5").
var statementVerbs = set(`should needs need wants want gets get will is owes deserves must has can could would may might
	shall am was were owe expects expect asked charges charged`)

var pronounSubjects = set(`i we he she they it i'm im i'll i've i'd we're we'll he's she's they're it's you're`)

// valueVerbs move value; an instruction with one of them and no amount
// ("settle it", "pay him") makes the statements of the message
// instructions ("I owe bob 20, settle it").
var valueVerbs = set(`send pay transfer give wire tip remit settle shoot move withdraw cash sweep schedule do handle
	process execute proceed ahead`)

// verbs that give a clause a verb of its own; a clause without one
// continues the previous clause ("don't pay bob 5 or carol 3").
var ownVerbs = set(`send pay transfer give wire tip remit settle shoot move withdraw cash sweep schedule check show
	create make set register put fund scan list pause cancel resume remember get tell look resolve invoice bill
	charge request find do handle process go let stop hold keep save note is are was were what who how`)

// introducers ask the agent to work on text rather than act on it.
var introducers = []string{"translate", "summarise", "summarize", "summarising",
	"summarizing", "tldr", "tl;dr", "paraphrase", "proofread", "rephrase", "rewrite", "reword", "fix the grammar",
	"correct the grammar", "spell check", "spellcheck", "what does this mean", "what does this say", "what does it say",
	"what does it mean", "explain this", "reply to", "respond to", "draft a reply", "write a reply", "analyze",
	"analyse", "is this legit", "is this a scam", "is this real", "is this safe", "does this look", "read this",
	"check this", "forwarded", "fwd", "fw", "original message", "email from", "message from", "text from",
	"note from", "dm from", "got this", "received this", "this email", "this message", "this text", "this note",
	"this memo", "the following", "below is", "below:", "copy of", "in french", "in spanish", "in german",
	"into french", "into spanish", "into german", "to french", "to spanish", "to german", "ignore previous",
	"ignore all previous", "ignore your instructions", "new instructions", "system prompt", "you are now"}

var hereIs = guarded{regexp.MustCompile(`(?i)\b(here'?s|here is|heres|this is|below is|see)\s+(an?|the|this|my|his|her|their)?\s*(email|e-mail|mail|message|msg|text|note|memo|letter|dm|chat|thread|post|tweet|reply|request|invoice)\b`),
	// "here's", "here is", "heres", "this is", "below is", "see".
	[]string{"here", "this", "below", "see"}}

// reHeader finds a pasted email or chat: header lines, a greeting line,
// an injected role or a label before a colon.
var reHeader = guarded{regexp.MustCompile(`(?im)^\s*(from|to|subject|cc|bcc|date|sent|re|fwd?|memo|note|message|msg|email|text|content|body|transcript|input|prompt|system|assistant|user|instructions?|reminder|todo|to-do|example|examples|e\.g|eg|for example|for instance|note to self)\s*[:.]\s|\b(?:tell|forward|message|email|text|write|reply|respond|ask|remind|dm)\b[^:\n]{0,40}:|^\s*dear\s+\S+|^\s*-{3,}|^\s*on .{3,80} wrote:\s*$|\b(memo|note|message|says|said|reads|wrote|writes)\s*:`),
	// A header's "[:.]", a label's colon, "dear", a "---" rule.
	[]string{":", ".", "dear", "---"}}

var reDearAgent = regexp.MustCompile(`(?i)^\s*dear\s+(veil|agent|assistant|bot)\b`)

// maskPasted blanks pasted text in masked: from a header or label, and
// what follows an introducer ("summarise this:" → the text after the
// colon, or the next sentences). It returns the offset from which the
// message is pasted (len(text) when nothing is).
func maskPasted(text, masked string) (string, int) {
	from := len(masked)
	var headers [][]int
	if reHeader.may(masked) {
		headers = reHeader.FindAllStringIndex(masked, -1)
	}
	for _, loc := range headers {
		// "Dear Veil, please send …" is the user writing to the agent.
		if reDearAgent.MatchString(masked[loc[0]:]) {
			continue
		}
		from = loc[0]
		break
	}
	if hereIs.may(masked) {
		if loc := hereIs.FindStringIndex(masked); loc != nil && loc[0] < from {
			from = loc[0]
		}
	}
	for _, sr := range Sentences(masked[:from]) {
		ws := words(text, masked, sr[0], sr[1])
		if !hasIntroducer(ws) {
			continue
		}
		from = min(from, sr[0])
		break
	}
	if from >= len(masked) {
		return masked, len(masked)
	}
	// The introducer's sentence stays readable (the planner answers it);
	// the text after its colon and everything after it are blanked.
	keepTo := from
	if end := strings.IndexAny(masked[from:], ":\n"); end >= 0 {
		keepTo = from + end
	} else {
		keepTo = len(masked)
	}
	b := []byte(masked)
	for i := keepTo; i < len(b); i++ {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b), from
}

// introducerWords and introducerPhrases are introducers split once: a
// single word is looked up, a phrase (or a word with a colon) searched.
var introducerWords, introducerPhrases = func() (map[string]bool, []string) {
	words := map[string]bool{}
	var phrases []string
	for _, p := range introducers {
		if strings.ContainsAny(p, " :") {
			phrases = append(phrases, p)
		} else {
			words[p] = true
		}
	}
	return words, phrases
}()

func hasIntroducer(ws []word) bool {
	if has(ws, introducerWords) {
		return true
	}
	return hasSeq(ws, introducerPhrases...)
}

// readSentence gives the clauses of one sentence their moods.
func readSentence(ws []word, sr [2]int, endsWithQ bool, pasteFrom int) []Clause {
	if sr[0] >= pasteFrom {
		return []Clause{{Start: sr[0], End: sr[1], Mood: Pasted}}
	}
	// The sentence's form, from its first words.
	head := 0
	for head < len(ws)-1 && fillers[ws[head].low] {
		head++
	}
	rest := ws[head:]
	polite := false
	for _, p := range politeStarts {
		if seq(rest, p) == 0 {
			polite = true
			break
		}
	}
	if !polite && (has(ws, set("please pls plz kindly")) || hasSeq(ws, "if you can", "if possible", "when you can", "if you could", "if you don't mind", "if you dont mind")) {
		polite = true
	}
	sentence := Instruction
	formOnly := false // the sentence's mood comes only from its form (a "?", its first words)
	switch {
	case hasSeq(ws, howTo...):
		sentence = HowTo
	case hasSeq(ws, deliberation...):
		sentence = Question
	case !polite && startsWith(rest, ambiguousStarts):
		sentence, formOnly = Ambiguous, true
	case !polite && questionStarts[rest[0].low] && !(doImperative(rest) && !endsWithQ):
		// "do it again", "do the same for carol" are requests, not questions.
		sentence, formOnly = Question, true
	case !polite && endsWithQ:
		sentence, formOnly = Ambiguous, true
	}
	if conditional(ws) {
		sentence = Conditional
	}
	spans := clauses(ws)
	if formOnly {
		// The "?" belongs to a later polite request ("I owe bob 5 usdc,
		// can you pay him?"): the sentence is a request.
		for k, sp := range spans {
			if k > 0 && startsWith(skipFillers(ws[sp[0]:sp[1]]), politeStarts) {
				sentence = Instruction
			}
		}
	}
	var out []Clause
	prev := Instruction
	carry := false // the previous clause was a bare "do not," that governs what follows
	for k, sp := range spans {
		cw := ws[sp[0]:sp[1]]
		// A later clause can be a polite request of its own ("I owe bob
		// 5 usdc for lunch, can you pay him?").
		clausePolite := k > 0 && startsWith(skipFillers(cw), politeStarts)
		m := clauseMood(cw, polite && k == 0 || clausePolite)
		if m == Instruction && k > 0 && (!has(cw, ownVerbs) || carry) {
			m = prev // "don't pay bob 5, or carol 3"; "do not, under any circumstances, send …"
		}
		carry = m == Negated && bareNegation(cw) || carry && !has(cw, ownVerbs)
		prev = m
		out = append(out, Clause{Start: cw[0].start, End: cw[len(cw)-1].end, Mood: max(m, sentence)})
	}
	// Clauses cover the whole sentence, so the planner's spans (which
	// include punctuation) always overlap one.
	out[0].Start = sr[0]
	out[len(out)-1].End = sr[1]
	for i := 1; i < len(out); i++ {
		out[i-1].End = out[i].Start
	}
	return out
}

func startsWith(ws []word, phrases []string) bool {
	for _, p := range phrases {
		if phraseAt(ws, p) {
			return true
		}
	}
	return false
}

func conditional(ws []word) bool {
	for i, w := range ws {
		if !conditionals[w.low] && w.low != "when" && w.low != "after" && !(w.low == "in" && i+1 < len(ws) && ws[i+1].low == "case") &&
			!(w.low == "as" && i+2 < len(ws) && ws[i+1].low == "soon" && ws[i+2].low == "as") {
			continue
		}
		if w.low == "after" && (i+1 >= len(ws) || ws[i+1].low == "that" || ws[i+1].low == "this") {
			continue
		}
		if w.low == "when" && i == 0 {
			continue // a question ("when is …"); read as one
		}
		polite := false
		for _, p := range politeIf {
			if seq(ws[i:], p) == 0 {
				polite = true
				break
			}
		}
		if !polite {
			return true
		}
	}
	return false
}

// clauseMood reads one clause (polite: the sentence opened with a polite
// request and this is its first clause).
func clauseMood(cw []word, polite bool) Mood {
	if hasSeq(cw, reminders...) {
		return Ambiguous
	}
	if negated(cw) {
		return Negated
	}
	// A clause that opens with a request to move value is read as one even
	// when it goes on about the past or someone else ("send bob 5 usdc (he
	// said it's fine)", "pay carol the 20 usdc she paid for lunch").
	imperative := startsWithValueVerb(cw)
	if !imperative && past(cw) {
		return Past
	}
	if m, ok := reported(cw); ok && !imperative {
		return m
	}
	if later(cw) {
		return Future
	}
	if polite {
		return Instruction
	}
	return statement(cw)
}

func negated(cw []word) bool {
	for i, w := range cw {
		if !negations[w.low] {
			continue
		}
		skip := false
		for _, p := range notNegation {
			if j := seq(cw, p); j >= 0 && j <= i && i < j+phraseLen(p) {
				skip = true
			}
		}
		if w.low == "hold" && i > 0 && cw[i-1].low == "on" {
			skip = true
		}
		if !skip {
			return true
		}
	}
	return false
}

func past(cw []word) bool {
	for i, w := range cw {
		if !pastVerbs[w.low] {
			continue
		}
		if i > 0 && passive[cw[i-1].low] {
			continue
		}
		if has(cw, pastMarkers) {
			return true
		}
		for k := max(0, i-3); k < i; k++ {
			if subjects[cw[k].low] || cw[k].low == "have" || cw[k].low == "has" || cw[k].low == "had" || cw[k].low == "was" || cw[k].low == "were" || cw[k].low == "did" {
				return true
			}
		}
	}
	return false
}

// reported: someone else's words ("bob said to send him 5"), or a
// message for someone else ("tell bob to pay me"). The user quoting
// themselves ("I said send bob 5") is Ambiguous.
func reported(cw []word) (Mood, bool) {
	for i, w := range cw {
		if reportVerbs[w.low] || (w.low == "according" && i+1 < len(cw) && cw[i+1].low == "to") {
			if i > 0 && (cw[i-1].low == "i" || cw[i-1].low == "we") {
				return Ambiguous, true
			}
			return Reported, true
		}
	}
	head := 0
	for head < len(cw)-1 && fillers[cw[head].low] {
		head++
	}
	if relayVerbs[cw[head].low] && head+1 < len(cw) {
		next := cw[head+1].low
		if next != "me" && next != "us" && !(cw[head].low == "let" && (next == "me" || next == "us" || next == "'s")) {
			return Reported, true
		}
	}
	return Instruction, false
}

// statement: a clause led by its subject ("I owe bob 20", "bob needs 5
// USDC") informs; "bob should get 5 USDC from me" and "you should pay …"
// are requests.
func statement(cw []word) Mood {
	head := 0
	for head < len(cw)-1 && fillers[cw[head].low] {
		head++
	}
	rest := cw[head:]
	if startsWith(rest, ambiguousStarts) {
		return Ambiguous
	}
	first := rest[0].low
	if first == "you" || first == "u" {
		return Instruction
	}
	if pronounSubjects[first] {
		return Statement
	}
	if len(rest) > 1 && statementVerbs[rest[1].low] && !ownVerbs[first] && !isNumberWord(first) {
		if hasSeq(rest, "from me", "from my", "from us", "off me") {
			return Instruction
		}
		return Statement
	}
	return Instruction
}

// retract: "never mind", "scratch that", "no wait" take back what came
// before them in the message.
func retract(cs []Clause, text, masked string) {
	for i, c := range cs {
		ws := words(text, masked, c.Start, c.End)
		if !hasSeq(ws, retractions...) && !onlyNo(ws) {
			continue
		}
		for k := 0; k <= i; k++ {
			cs[k].Mood = max(cs[k].Mood, Negated)
		}
	}
}

// promote: a statement becomes an instruction when the message also holds
// an instruction to move value that names no amount ("I owe bob 20,
// settle it", "bob needs 5 USDC. send it to him").
func promote(cs []Clause, text, masked string) {
	trigger := false
	for _, c := range cs {
		if c.Mood != Instruction {
			continue
		}
		seg := masked[c.Start:c.End]
		ws := words(text, masked, c.Start, c.End)
		if has(ws, valueVerbs) && len(Numbers(seg)) == 0 {
			trigger = true
		}
	}
	if !trigger {
		return
	}
	for i := range cs {
		if cs[i].Mood == Statement {
			cs[i].Mood = Instruction
		}
	}
}

// bareNegation: a clause that is only a negation ("do not,", "never,"),
// so the negated request follows it.
func bareNegation(cw []word) bool {
	for _, w := range cw {
		if w.low == "no" || w.low == "nope" || w.low == "nah" {
			return false // a correction of what came before ("pay alice… no, pay bob")
		}
		if !negations[w.low] && !fillers[w.low] && w.low != "do" && w.low != "please" && w.low != "ever" && w.low != "i" {
			return false
		}
	}
	return true
}

// onlyNo: a clause that is just "no", "nope" or "nah" takes back what came
// before it ("pay alice… no, pay bob").
func onlyNo(ws []word) bool {
	no := false
	for _, w := range ws {
		switch {
		case w.low == "no" || w.low == "nope" || w.low == "nah":
			no = true
		case fillers[w.low] || w.low == "wait" || w.low == "sorry":
		default:
			return false
		}
	}
	return no
}

// imperatives: value-moving verbs in the form that opens a request.
var imperatives = set(`send pay transfer give wire tip remit settle shoot move withdraw sweep schedule reimburse repay zap`)

func startsWithValueVerb(cw []word) bool {
	head := 0
	for head < len(cw)-1 && (fillers[cw[head].low] || cw[head].low == "please" || cw[head].low == "pls" || cw[head].low == "kindly" || cw[head].low == "just") {
		head++
	}
	return imperatives[cw[head].low]
}

// laterDays are days and times a one-off request may be put off to.
var laterWords = set(`tomorrow tmrw tmr tonight later tomorow afterwards`)

var weekdayWords = set(`monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun`)

// later: the clause puts the request off to a later time ("on friday",
// "tomorrow", "next week", "in 3 days", "at 5pm"), and is not a recurring
// payment ("every friday", "weekly … until march").
func later(cw []word) bool {
	recurring := false
	for _, w := range cw {
		switch w.low {
		case "every", "each", "weekly", "daily", "monthly", "hourly", "per", "until", "till", "til", "starting", "recurring", "schedule", "fridays", "mondays":
			recurring = true
		}
		if strings.HasSuffix(w.low, "days") && w.low != "days" {
			recurring = true // "on fridays"
		}
	}
	if recurring {
		return false
	}
	for i, w := range cw {
		next := ""
		if i+1 < len(cw) {
			next = cw[i+1].low
		}
		switch {
		case laterWords[w.low]:
			return true
		case w.low == "next" && (next == "week" || next == "month" || next == "year" || weekdayWords[next]):
			return true
		case w.low == "on" && (weekdayWords[next] || next == "the" && i+2 < len(cw) && reOrdinal.MatchString(cw[i+2].low)):
			return true
		case w.low == "this" && (next == "weekend" || next == "evening" || next == "afternoon" || weekdayWords[next]):
			return true
		case w.low == "in" && i+2 < len(cw) && (isCount(next)) && strings.TrimSuffix(cw[i+2].low, "s") != "" &&
			(strings.HasPrefix(cw[i+2].low, "day") || strings.HasPrefix(cw[i+2].low, "week") || strings.HasPrefix(cw[i+2].low, "hour") || strings.HasPrefix(cw[i+2].low, "month") || strings.HasPrefix(cw[i+2].low, "minute")):
			return true
		case w.low == "at" && reClock.MatchString(next):
			return true
		case w.low == "end" && next == "of":
			return true
		}
	}
	return false
}

var (
	reOrdinal = regexp.MustCompile(`^\d{1,2}(st|nd|rd|th)$`)
	reClock   = regexp.MustCompile(`^\d{1,2}(:\d\d)?(am|pm)?$|^noon$|^midnight$`)
)

func isCount(w string) bool {
	if _, err := strconv.Atoi(w); err == nil {
		return true
	}
	return isNumberWord(w) || w == "a" || w == "an" || w == "a few" || w == "few"
}

func skipFillers(cw []word) []word {
	head := 0
	for head < len(cw)-1 && (fillers[cw[head].low] || splitters[cw[head].low]) {
		head++
	}
	return cw[head:]
}

// doImperative: "do it …", "do that …", "do the same …" open a request.
func doImperative(ws []word) bool {
	return len(ws) > 1 && ws[0].low == "do" && (ws[1].low == "it" || ws[1].low == "that" || ws[1].low == "this" || ws[1].low == "the" || ws[1].low == "so")
}
