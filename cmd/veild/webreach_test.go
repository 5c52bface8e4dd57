package main

import (
	"flag"
	"testing"
)

func TestWebReach(t *testing.T) {
	for _, tc := range []struct {
		arg        string // "" leaves the default
		realChains int
		want       bool
	}{
		{"", 0, true},  // auto on devnets: loopback servers are reachable
		{"", 1, false}, // auto with a real network: public only
		{"auto", 6, false},
		{"public", 0, false},
		{"any", 3, true},
	} {
		var cfg config
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		cfg.bindFlags(fs)
		var args []string
		if tc.arg != "" {
			args = []string{"--agent-web-reach", tc.arg}
		}
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%q: %v", tc.arg, err)
		}
		if got := cfg.AgentWebReach.allowPrivate(tc.realChains); got != tc.want {
			t.Errorf("--agent-web-reach %q with %d real chains: allow private = %v, want %v", tc.arg, tc.realChains, got, tc.want)
		}
	}
	var cfg config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(new(discard))
	cfg.bindFlags(fs)
	if err := fs.Parse([]string{"--agent-web-reach", "everywhere"}); err == nil {
		t.Error("--agent-web-reach everywhere was accepted")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
