package tools

import (
	"errors"
	"testing"
)

// The restate guard for every model: a payment whose amount, asset or
// recipient the user's own words of this turn do not state waits for the
// user's confirmation (or is refused when nothing they wrote states it);
// confirmed, the same call runs.
func TestRestateGuardAsksBeforePaying(t *testing.T) {
	for _, tc := range []struct {
		name, text, earlier, args string
		confirmAbove              map[string]string
		want                      error // nil: pays at once
	}{
		{name: "stated", text: "send 5 usdc to bob", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`},
		{name: "dollars", text: "send $5 to bob", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`},
		{name: "bare number", text: "pay bob 5", args: `{"recipient":"bob","amount":"5"}`, want: ErrNeedsConfirmation},
		{name: "asset filled in by the model", text: "pay bob 5", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "gwei", text: "send 5 gwei to bob", args: `{"recipient":"bob","amount":"0.000000005","asset":"ETH"}`, want: ErrNeedsConfirmation},
		{name: "gwei read as ether", text: "send 5 gwei to bob", args: `{"recipient":"bob","amount":"5","asset":"ETH"}`, want: ErrNotConfirmed},
		{name: "k", text: "send 0.01k usdc to bob", args: `{"recipient":"bob","amount":"10","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "correction", text: "send 5 usdc to bob, no actually make it 7", args: `{"recipient":"bob","amount":"7","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "first amount of a correction", text: "send 5 usdc to bob, no actually make it 7", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "again", text: "again", earlier: "send 5 usdc to bob", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "same to carol", text: "the same to carol", earlier: "send 5 usdc to bob", args: `{"recipient":"carol","amount":"5","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "pronoun", text: "send him 5 usdc", earlier: "who is bob", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "recipient nobody named", text: "send 5 usdc", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`, want: ErrNotConfirmed},
		{name: "amount nobody stated", text: "again", earlier: "who is bob", args: `{"recipient":"bob","amount":"5","asset":"USDC"}`, want: ErrNotConfirmed},
		{name: "above the owner's amount", text: "send 50 usdc to bob", confirmAbove: map[string]string{"USDC": "20"}, args: `{"recipient":"bob","amount":"50","asset":"USDC"}`, want: ErrNeedsConfirmation},
		{name: "at the owner's amount", text: "send 20 usdc to bob", confirmAbove: map[string]string{"USDC": "20"}, args: `{"recipient":"bob","amount":"20","asset":"USDC"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, confirmed := range []bool{false, true} {
				f := newFixture(t)
				f.env.Earlier = tc.earlier
				f.env.ConfirmAbove = tc.confirmAbove
				f.env.Confirmed = confirmed
				_, err := f.run(t, "send_payment", tc.text, tc.args)
				want := tc.want
				if confirmed && errors.Is(want, ErrNeedsConfirmation) {
					want = nil
				}
				if want == nil && err != nil || want != nil && !errors.Is(err, want) {
					t.Fatalf("confirmed=%v: err = %v, want %v", confirmed, err, want)
				}
				if moved := f.chain.moneyMoves(); (len(moved) > 0) != (want == nil) {
					t.Errorf("confirmed=%v: moved %+v", confirmed, moved)
				}
			}
		})
	}
}
