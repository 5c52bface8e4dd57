package main

import (
	"strings"
	"testing"
)

// Completion scripts, suggestions for mistyped words, long flags with
// short aliases, and flag errors in words — no server needed.
func TestCompletionSuggestionsAndFlags(t *testing.T) {
	env := veilEnv(t, nil)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if r := ok(t, env, "completion", sh); !strings.Contains(r.stdout, "veil") || len(r.stdout) < 500 {
			t.Fatalf("completion %s: %.200s", sh, r.stdout)
		}
	}
	// The completion engine lists subcommands and flags.
	if r := ok(t, env, "__complete", "agent", ""); !strings.Contains(r.stdout, "create") || !strings.Contains(r.stdout, "status") {
		t.Fatalf("__complete agent: %s", r.stdout)
	}
	if r := ok(t, env, "__complete", "chat", "alice", "--"); !strings.Contains(r.stdout, "--message") || !strings.Contains(r.stdout, "--conversation") {
		t.Fatalf("__complete chat flags: %s", r.stdout)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"agnet", "list"}, "did you mean agent?"},
		{[]string{"notifcations", "alice"}, "did you mean notifications?"},
		{[]string{"agent", "lst"}, "did you mean list?"},
		{[]string{"chat", "alice", "--mesage", "hi"}, "did you mean --message?"},
		{[]string{"agent", "list", "--jsn"}, "did you mean --json?"},
		{[]string{"agent", "create", "alice", "--chain"}, "--chain needs a value"},
		{[]string{"chat", "alice", "-x"}, "has no flag"},
	}
	for _, tc := range tests {
		r := fails(t, env, exitUsage, tc.args...)
		if !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "flag provided but not defined") {
			t.Fatalf("veil %v: stderr %q, want %q", tc.args, r.stderr, tc.want)
		}
	}
	// Long flags everywhere, short aliases for the common ones; no more
	// single-dash long names in the help.
	r := ok(t, env, "chat", "--help")
	for _, want := range []string{"-m, --message", "-c, --conversation"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("chat --help lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "--m ") || strings.Contains(r.stdout, "--c ") {
		t.Fatalf("chat --help still shows --m/--c:\n%s", r.stdout)
	}
	if r := ok(t, env, "notifications", "--help"); !strings.Contains(r.stdout, "-f, --follow") {
		t.Fatalf("notifications --help:\n%s", r.stdout)
	}
}

// TestChainErrors: the CLI's words for chain errors (chains.ErrorWords,
// whose amounts chains.TestDisplayAmountAndErrorWords checks) without the
// "chains: " prefix.
func TestChainErrors(t *testing.T) {
	errs := []struct{ in, want string }{
		{"send_payment on base: chains: insufficient funds: base: send: the account cannot pay the amount plus the network fee (insufficient funds for gas * price + value: balance 9999949976784703522, tx cost 500000021000000000000, overshot 490000071023215296478)",
			"insufficient funds on base: 9.999949 ETH available, 500.000021 ETH needed (amount + network fee); nothing was sent"},
		{"send_payment on polygon: chains: insufficient funds: balance 1000 wei does not cover the fee 21000000000000 wei",
			"insufficient funds on polygon: <0.000001 POL available, the network fee alone is 0.000021 POL; nothing was sent"},
		{"recipient bob.veil not found", "recipient bob.veil not found"},
	}
	for _, tc := range errs {
		if got := chainErrorWords(tc.in); got != tc.want {
			t.Fatalf("chainErrorWords:\n got %q\nwant %q", got, tc.want)
		}
	}
}
