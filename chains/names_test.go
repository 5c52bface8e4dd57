package chains_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

func TestNameRule(t *testing.T) {
	for _, tc := range []struct {
		in    string
		valid bool   // ValidName(in)
		parse string // ParseName(in); "" means ErrInvalidName
	}{
		{in: "bob", valid: true, parse: "bob"},
		{in: "abc", valid: true, parse: "abc"},
		{in: "bob-2", valid: true, parse: "bob-2"},
		{in: "007", valid: true, parse: "007"},
		{in: strings.Repeat("a", 32), valid: true, parse: strings.Repeat("a", 32)},
		// Hyphens may stand first and last (the spec lists characters and
		// length only; the on-chain registries accept them).
		{in: "-bob", valid: true, parse: "-bob"},
		{in: "bob-", valid: true, parse: "bob-"},
		{in: "---", valid: true, parse: "---"},
		// ParseName folds what a person writes; ValidName does not.
		{in: "Bob", parse: "bob"},
		{in: "bob.veil", parse: "bob"},
		{in: "Bob.VEIL", parse: "bob"},
		{in: " bob-2 ", parse: "bob-2"},
		// Neither accepts these.
		{in: ""},
		{in: "ab"},
		{in: "ab.veil"},
		{in: ".veil"},
		{in: strings.Repeat("a", 33)},
		{in: "bob.eth"},
		{in: "bo b"},
		{in: "bob_1"},
		{in: "bob.1"},
		{in: "ünï"},
		{in: "bob\x00"},
	} {
		if got := chains.ValidName(tc.in); got != tc.valid {
			t.Errorf("ValidName(%q) = %v, want %v", tc.in, got, tc.valid)
		}
		got, err := chains.ParseName(tc.in)
		switch {
		case tc.parse == "" && !errors.Is(err, chains.ErrInvalidName):
			t.Errorf("ParseName(%q) = %q, %v; want ErrInvalidName", tc.in, got, err)
		case tc.parse == "" && !strings.Contains(err.Error(), chains.NameRule):
			t.Errorf("ParseName(%q) error %q does not say the rule", tc.in, err)
		case tc.parse != "" && (err != nil || got != tc.parse):
			t.Errorf("ParseName(%q) = %q, %v; want %q", tc.in, got, err, tc.parse)
		}
	}
}
