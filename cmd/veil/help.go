package main

import (
	"flag"
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
  --url URL          server URL (env VEIL_URL; default http://127.0.0.1:8080)
  --api-key KEY      API key (env VEIL_API_KEY)
  --config FILE      config file (env VEIL_CONFIG; default $XDG_CONFIG_HOME/veil/config.json
                     or ~/.config/veil/config.json)
  --provider NAME    AI provider for chat: veil (default), openai, anthropic (env VEIL_AI_PROVIDER)
  --ai-key KEY       your key with that provider (env VEIL_AI_KEY)
  --json             print JSON for scripts (errors too, on stderr)
  --timeout D        time limit of each request (default 30s; chat 3m)

AGENT is an agent's name (alice or alice.veil), id, or owner wallet address;
when omitted, VEIL_AGENT or the config file's "agent" is used.

Exit codes: 0 ok, 1 error, 2 usage, 3 not found, 4 auth, 5 conflict (name taken),
6 server unreachable or busy (429/503), 130 interrupted.

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
var groupOrder = []string{"agent", "chat", "conversations", "notifications", "invoice", "schedules", "tee", "config", "health", "version"}

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

func (a *app) printGroupHelp(w io.Writer, group []*command) {
	name := strings.Fields(group[0].path)[0]
	fmt.Fprintf(w, "Usage: veil %s SUBCOMMAND ...\n\nSubcommands:\n", name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range group {
		fmt.Fprintf(tw, "  veil %s %s\t%s\n", c.path, shortArgs(c.args), c.summary)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRun 'veil %s SUBCOMMAND --help' for details.\n", name)
}

func (a *app) printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: veil %s %s\n\n%s\n", c.path, c.args, capitalize(c.summary)+".")
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	var own []*flag.Flag
	global := map[string]bool{"url": true, "api-key": true, "config": true, "provider": true, "ai-key": true, "json": true, "timeout": true}
	fs.VisitAll(func(f *flag.Flag) {
		if !global[f.Name] {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nFlags:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range own {
			name, usage := flag.UnquoteUsage(f)
			arg := ""
			if name != "" {
				arg = " " + name
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				def = " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(tw, "  --%s%s\t%s%s\n", f.Name, arg, usage, def)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nGlobal flags: --url, --api-key, --config, --provider, --ai-key, --json, --timeout (see veil --help).")
	if len(c.examples) > 0 {
		fmt.Fprintln(w, "\nExamples:")
		for _, e := range c.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// help is `veil help [COMMAND...]`.
func (a *app) help(args []string) error {
	if len(args) == 0 {
		a.printTopHelp(a.stdout)
		return nil
	}
	cmd, rest, _ := findCommand(args)
	if group := groupOf(args[0]); len(args) == 1 && len(group) > 0 {
		a.printGroupHelp(a.stdout, group)
		return nil
	}
	if cmd == nil || len(rest) > 0 {
		return usagef("no such command: %s (see veil --help)", strings.Join(args, " "))
	}
	fs := flag.NewFlagSet("veil "+cmd.path, flag.ContinueOnError)
	a.addGlobals(fs)
	if cmd.flags != nil {
		cmd.flags(a, fs)
	}
	a.printCommandHelp(a.stdout, cmd, fs)
	return nil
}
