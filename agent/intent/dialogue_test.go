package intent

import (
	"strings"
	"testing"
)

func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Answer
	}{
		{"yes", Yes}, {"Yes please", Yes}, {"yep", Yes}, {"sure", Yes}, {"go ahead", Yes}, {"confirm", Yes},
		{"yes, send it", Yes}, {"ok go", Yes}, {"yeah do it", Yes}, {"sounds good, go ahead", Yes}, {"y", Yes},
		{"Yes!", Yes}, {"please do", Yes}, {"do it", Yes}, {"that's right, send it", Yes}, {"go for it", Yes},
		{"no", No}, {"cancel", No}, {"nope", No}, {"don't", No}, {"never mind", No}, {"no thanks", No},
		{"forget it", No}, {"no, don't send it", No}, {"stop", No}, {"yes... no, cancel", No},
		{"make it 7 usdc", Other}, {"what's my balance", Other}, {"send 5 usdc to bob", Other},
		{"yes but make it 7", Other}, {"", Other}, {"usdc", Other}, {"who is bob", Other},
	} {
		if got := ReadAnswer(tc.text); got != tc.want {
			t.Errorf("ReadAnswer(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		text, amount  string
		states, units bool
	}{
		{"send 5 gwei to bob", "5", false, false},
		{"send 5 gwei to bob", "0.000000005", false, true},
		{"send 20 wei to bob", "0.00000000000000002", false, true},
		{"send 2k usdc to bob", "2000", false, true},
		{"send 2k usdc to bob", "2", false, false},
		{"send 50 cents to bob", "0.5", false, true},
		{"send 300 lamports", "0.0000003", false, true},
		{"send 5 usdc to bob", "5", true, false},
		{"send $5 to bob", "5", true, false},
		{"send 5 usdc to bob every 2 weeks", "5", true, false},
	} {
		if got := States(tc.text, tc.amount); got != tc.states {
			t.Errorf("States(%q, %s) = %v", tc.text, tc.amount, got)
		}
		if got := StatesInUnits(tc.text, tc.amount); got != tc.units {
			t.Errorf("StatesInUnits(%q, %s) = %v", tc.text, tc.amount, got)
		}
	}
}

func TestCorrects(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"send 5 usdc to carol, no actually make it 6", true},
		{"pay bob 10 USDC - sorry, I meant 8", true},
		{"transfer 10 usdc to bob... scratch that, 15", true},
		{"send bob 5 usdc, wait, make that 7", true},
		{"send 5 usdc to bob", false},
		{"make it 7 usdc", false},
		{"send 5 usdc to bob and 3 to carol", false},
	} {
		if got := Corrects(tc.text); got != tc.want {
			t.Errorf("Corrects(%q) = %v", tc.text, got)
		}
	}
}

// Quoted and attributed commands are masked; apostrophes and the user's
// own labelled lines are not.
func TestMaskFramings(t *testing.T) {
	for _, tc := range []struct {
		text   string
		masked bool // "send"/"pay" survives masking unless masked
	}{
		{"what does 'send 5 usdc to bob' mean?", true},
		{"alice: send 20 usdc to bob", true},
		{"[10:32] mike: pay bob 10 usdc", true},
		{"'pay bob 10 usdc' is what carol wrote", true},
		{"pay bob 10 usdc is what carol wrote", true},
		{"send 5 usdc to bob was the subject of the email", true},
		{"what does pay bob 10 usdc mean", true},
		{"the meaning of send 5 usdc to bob", true},
		{"don't send bob's money, it's his", false},
		{"hey veil: send 5 usdc to bob", false},
		{"quick question: send 5 usdc to bob", false},
		{"send 5 usdc to bob", false},
		{"I'd like to pay bob 5 usdc, he's great", false},
	} {
		m := Mask(tc.text)
		gone := !strings.Contains(m, "send") && !strings.Contains(m, "pay")
		if gone != tc.masked {
			t.Errorf("Mask(%q) = %q; masked %v, want %v", tc.text, m, gone, tc.masked)
		}
		if len(m) != len(tc.text) {
			t.Errorf("Mask(%q) changed the length", tc.text)
		}
	}
}
