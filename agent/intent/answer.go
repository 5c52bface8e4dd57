package intent

import "strings"

// Answer is how a short reply answers the agent's confirming question.
type Answer int

// The answers.
const (
	// Other: not an answer to the question (a new request, a change).
	Other Answer = iota
	// Yes confirms the action waiting for confirmation.
	Yes
	// No drops it.
	No
)

// yesCore are the words that confirm; yesWords may stand beside them
// ("yes please, go ahead and send it").
var (
	yesCore = set(`yes y ye yeah yea yep yup ya yass yes! sure ok okay k kk confirm confirmed confirming correct absolutely definitely
		certainly proceed approve approved affirmative go lgtm 👍 ✅ fine alright aight do send pay agreed agree`)
	yesWords = set(`please pls plz it that's thats that is right ahead now for do send pay sounds good great perfect thanks thank you
		just go yes sure ok okay exactly correct fine by me alright then and the payment yep yeah looks that's it ship`)
	noCore = set(`no n nope nah nay cancel cancelled canceled don't dont stop abort nevermind nvm forget wrong incorrect reject
		rejected decline declined negative never mind hold`)
	noWords = set(`no thanks thank you please pls it that this don't dont do not send pay the payment never mind
		forget about actually wait now i changed my mind cancel stop sorry oh off on hold lets skip yes ok okay hmm`)
)

// maxAnswerWords bounds a reply read as an answer.
const maxAnswerWords = 8

// ReadAnswer reads a reply to a confirming question ("send 5 ETH to bob?"):
// Yes for "yes", "go ahead", "sure, do it", "confirm"; No for "no",
// "cancel", "never mind", "don't send it"; Other for anything else (a new
// request, a change such as "make it 7 usdc", a question).
func ReadAnswer(text string) Answer {
	ws := strings.FieldsFunc(strings.ToLower(strings.ReplaceAll(text, "’", "'")), func(r rune) bool {
		return r == ' ' || r == ',' || r == '.' || r == '!' || r == '\n' || r == '\t' || r == ';' || r == '-' || r == ':'
	})
	if len(ws) == 0 || len(ws) > maxAnswerWords {
		return Other
	}
	no, yes := false, false
	for _, w := range ws {
		if noCore[w] {
			no = true
		}
		if yesCore[w] {
			yes = true
		}
	}
	switch {
	case no:
		for _, w := range ws {
			if !noCore[w] && !noWords[w] {
				return Other
			}
		}
		return No
	case yes:
		for _, w := range ws {
			if !yesCore[w] && !yesWords[w] {
				return Other
			}
		}
		return Yes
	}
	return Other
}
