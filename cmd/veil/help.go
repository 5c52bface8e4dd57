package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

const topHelp = `veil — command-line client of the Veil agent platform

Usage:
  veil [global flags] COMMAND [arguments] [flags]

Commands:
%s
Global flags (anywhere on the line):
  -U, --url URL      server URL (env VEIL_URL; default http://127.0.0.1:8080)
  --api-key KEY      API key (env VEIL_API_KEY)
  --config FILE      config file (env VEIL_CONFIG; default $XDG_CONFIG_HOME/veil/config.json
                     or ~/.config/veil/config.json)
  --provider NAME    AI provider for chat: veil (default), openai, anthropic (env VEIL_AI_PROVIDER)
  --ai-key KEY       your key with that provider (env VEIL_AI_KEY)
  -j, --json         print JSON for scripts (errors too, on stderr)
  -t, --timeout D    time limit of each request (default 30s; chat 3m)

AGENT is an agent's name (alice or alice.veil), id, or owner wallet address;
when omitted, VEIL_AGENT or the config file's "agent" is used.

Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 auth, 5 conflict (name taken),
6 server unreachable or busy (429/503), 7 a payment chat asked for failed, 130 interrupted.

Shell completion: veil completion bash|zsh|fish (see veil completion --help).

Examples:
  veil config set apiKey veil_live_…
  veil agent create alice --chain base --keystore ~/.ethereum/keystore/UTC--…
  veil chat alice
  veil chat alice -m "what's my balance?"
  veil notifications alice --follow
  veil agent list --json | jq -r '.[].name'

Run 'veil help COMMAND' or 'veil COMMAND --help' for a command's flags and examples.
docs/cli.md is the manual.
`

func (a *app) printTopHelp(w io.Writer) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, c := range sortedCommands() {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.path, shortArgs(c.args), c.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, topHelp, b.String())
}

// groupOrder is the order of the command groups in the help.
var groupOrder = []string{"agent", "chat", "conversations", "notifications", "invoice", "invoices", "payments", "schedules", "tee", "config", "health", "version"}

func sortedCommands() []*command {
	rank := func(c *command) int {
		first := strings.Fields(c.path)[0]
		for i, g := range groupOrder {
			if g == first {
				return i
			}
		}
		return len(groupOrder)
	}
	out := append([]*command(nil), commands...)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

// shortArgs keeps the positional part of a command's argument synopsis.
func shortArgs(args string) string {
	var out []string
	for _, f := range strings.Fields(args) {
		if strings.HasPrefix(f, "-") || strings.HasPrefix(f, "[") {
			break
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
