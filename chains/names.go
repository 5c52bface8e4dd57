package chains

import (
	"fmt"
	"strings"
)

// The name rule, in one place: the API's create and lookup, the tools, the
// builtin planner, the Go client and every connector's name registry call
// ValidName or ParseName. An agent name is 3 to 32 characters of lowercase
// letters, digits and hyphens; a hyphen may stand anywhere (first and last
// included), as the spec's rule lists characters and length only and the
// on-chain registries (contracts/src/VeilNames.sol, the Stellar and Solana
// name records) accept the same set. docs/api.md states the decision.
const (
	// NameSuffix is appended to a name to form its full name (alice.veil).
	NameSuffix = ".veil"
	// NameMinLen and NameMaxLen bound a name's length, suffix excluded.
	NameMinLen, NameMaxLen = 3, 32
	// NameRule says the rule in words, for error messages.
	NameRule = "a name is 3 to 32 characters of lowercase letters, digits and hyphens"
)

// ValidName reports whether name, exactly as given (no suffix, no case
// folding, no spaces), satisfies the name rule. The API uses it: "Alice" is
// a 400 there, not a different spelling of "alice".
func ValidName(name string) bool {
	if len(name) < NameMinLen || len(name) > NameMaxLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ParseName reads a name as a person or a model writes it: "Bob", " bob "
// and "bob.veil" all give "bob". The result satisfies ValidName; anything
// else is ErrInvalidName with the rule in the message.
func ParseName(s string) (string, error) {
	n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), NameSuffix)
	if !ValidName(n) {
		return "", fmt.Errorf("%w %q: %s, optionally followed by %s", ErrInvalidName, clipName(s), NameRule, NameSuffix)
	}
	return n, nil
}

// clipName shortens what an error message quotes back.
func clipName(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
