package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
)

func TestApprovalRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Approvals
		ok   bool
		want Approvals
	}{
		{"empty", Approvals{}, true, Approvals{}},
		{"normalised", Approvals{ApprovalAbove: map[string]string{" usdc ": "100"}, ApprovalExpiry: "90m", ApproveNewRecipients: true}, true,
			Approvals{ApprovalAbove: map[string]string{"USDC": "100"}, ApprovalExpiry: "1h30m0s", ApproveNewRecipients: true}},
		{"zero: every payment", Approvals{ApprovalAbove: map[string]string{"ETH": "0"}}, true, Approvals{ApprovalAbove: map[string]string{"ETH": "0"}}},
		{"bad asset", Approvals{ApprovalAbove: map[string]string{"E": "1"}}, false, Approvals{}},
		{"negative", Approvals{ApprovalAbove: map[string]string{"ETH": "-1"}}, false, Approvals{}},
		{"exponent", Approvals{ApprovalAbove: map[string]string{"ETH": "1e3"}}, false, Approvals{}},
		{"expiry too short", Approvals{ApprovalExpiry: "1m"}, false, Approvals{}},
		{"expiry too long", Approvals{ApprovalExpiry: "200h"}, false, Approvals{}},
		{"expiry not a duration", Approvals{ApprovalExpiry: "tomorrow"}, false, Approvals{}},
	} {
		got, err := Normalize(Policy{Approvals: tc.in})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.ok && (len(got.ApprovalAbove) != len(tc.want.ApprovalAbove) || got.ApprovalExpiry != tc.want.ApprovalExpiry ||
			got.ApproveNewRecipients != tc.want.ApproveNewRecipients || got.ApprovalAbove["USDC"] != tc.want.ApprovalAbove["USDC"]) {
			t.Errorf("%s: %+v, want %+v", tc.name, got.Approvals, tc.want)
		}
	}
}

// A policy without approval rules hashes as it did before they existed:
// signatures made then still match.
func TestHashWithoutApprovalsUnchanged(t *testing.T) {
	h, err := Hash(Policy{PerTransaction: map[string]string{"ETH": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"perTransaction":{"ETH":"1"}}`))
	if want := hex.EncodeToString(sum[:]); h != want {
		t.Fatalf("hash %s, want %s (the JSON of the policy as before approvals)", h, want)
	}
	h2, _ := Hash(Policy{PerTransaction: map[string]string{"ETH": "1"}, Approvals: Approvals{ApproveNewRecipients: true}})
	if h == h2 {
		t.Fatal("approval rules are not part of the signed hash")
	}
}

func TestApprovalReasons(t *testing.T) {
	a := Approvals{ApprovalAbove: map[string]string{"ETH": "0.5", "USDC": "0"}, ApproveNewRecipients: true}
	for _, tc := range []struct {
		asset, amount string
		isNew         bool
		want          int
		has           string
	}{
		{"ETH", "0.5", false, 0, ""},
		{"eth", "0.50000001", false, 1, "above the approval threshold"},
		{"ETH", "", false, 1, "all of a balance"},
		{"USDC", "0.01", false, 1, "every USDC payment"},
		{"SOL", "1000", false, 0, ""},
		{"SOL", "1", true, 1, "never paid"},
		{"ETH", "1", true, 2, "never paid"},
	} {
		var amount chains.Amount
		if tc.amount != "" {
			var err error
			if amount, err = chains.ParseAmountOf(tc.amount, 18); err != nil {
				t.Fatal(err)
			}
		}
		got := a.Reasons(tc.asset, amount, tc.amount == "", tc.isNew)
		if len(got) != tc.want || (tc.has != "" && !strings.Contains(strings.Join(got, ";"), tc.has)) {
			t.Errorf("Reasons(%s %s new=%v) = %q", tc.amount, tc.asset, tc.isNew, got)
		}
	}
	if (Approvals{}).Expiry() != DefaultApprovalExpiry || (Approvals{ApprovalExpiry: "2h0m0s"}).Expiry() != 2*time.Hour {
		t.Fatal("expiry")
	}
}
