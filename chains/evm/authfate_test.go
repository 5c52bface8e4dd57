//go:build !nodevnet

package evm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
)

// TestAuthorizationFate: an x402 authorization the payee holds is followed
// until its fate is known, and reported once as a settlement under its key
// (the payer's x402 payment record), only once validBefore has passed by
// the connector's clock (a fake one here):
//   - never submitted, and the chain is past validBefore: failed, with the
//     reason (it can provably never be settled);
//   - submitted by the payee while valid (the payer never heard it):
//     confirmed, with the transaction that used it;
//   - never submitted, but the chain's clock still before validBefore: not
//     reported yet (it could still be settled).
func TestAuthorizationFate(t *testing.T) {
	d := startDevnet(t, chains.Base)
	cfg, _ := d.Config(chains.Base)
	e := newAuthEnv(t, cfg, "fate")
	chainNow := e.head

	for _, tc := range []struct {
		name        string
		validBefore time.Time // relative to the chain's head
		submit      bool      // the payee settles it while valid
		want        chains.SettlementStatus
		wantText    string // in the reason
	}{
		{"expired, never submitted", chainNow, false, chains.SettlementFailed, "expired"},
		{"submitted by the payee", chainNow.Add(time.Hour), true, chains.SettlementConfirmed, ""},
		{"chain still before validBefore", chainNow.Add(time.Hour), false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "x402/fate-" + tc.name
			auth, sig := e.sign(t, key, "0.25", tc.validBefore)
			var used string
			if tc.submit {
				used = e.settle(t, key, auth, sig)
			}
			// Before validBefore by our clock: nothing is reported.
			e.set(tc.validBefore.Add(-time.Minute))
			if rep, err := e.c.MaintainOnce(e.ctx, false); err != nil || rep.Authorizations != 0 || len(e.settled.Of(key)) != 0 {
				t.Fatalf("before validBefore: %+v %v, settlements %+v", rep, err, e.settled.Of(key))
			}
			// Past it: the fate, once.
			e.set(tc.validBefore.Add(time.Second))
			for range 2 {
				if _, err := e.c.MaintainOnce(e.ctx, false); err != nil {
					t.Fatal(err)
				}
			}
			got := e.settled.Of(key)
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("reported %+v while the chain could still settle it", got)
				}
				return
			}
			if len(got) != 1 || got[0].Status != tc.want || got[0].TxHash != used || got[0].AgentID != e.alice.ID ||
				!strings.Contains(got[0].Reason, tc.wantText) {
				t.Fatalf("settlements %+v; want one %s (tx %q, reason with %q)", got, tc.want, used, tc.wantText)
			}
		})
	}
}
