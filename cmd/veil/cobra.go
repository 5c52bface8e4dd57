package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/veilhq/veil/internal/buildinfo"
)

// rootCommand builds the cobra tree of the registered commands. A
// two-word path ("agent create") hangs under its group ("agent"); a
// group's default command ("conversations AGENT" = "conversations list
// AGENT") is the one registered with the group's bare name. cobra gives
// every command -h/--help, `veil help …`, `veil completion bash|zsh|fish`,
// and flags anywhere on the line.
func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "veil",
		Short:         "command-line client of the Veil agent platform",
		Version:       buildinfo.Read(version).String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// An unknown command is a usage error with suggestions (cobra's own
		// check would not give it our exit code).
		Args: func(cmd *cobra.Command, args []string) error { return unknownCommand(cmd, args) },
		RunE: func(cmd *cobra.Command, args []string) error {
			a.printTopHelp(a.stderr)
			return usagef("no command given")
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error { return a.loadSettings() },
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate("veil {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	a.addGlobals(root.PersistentFlags())
	defaultHelp := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		if cmd == root {
			a.printTopHelp(cmd.OutOrStdout())
			return
		}
		defaultHelp(cmd, args)
	})

	groups := map[string]*cobra.Command{}
	var groupNames []string
	for _, c := range commands {
		words := strings.Fields(c.path)
		if len(words) == 2 && groups[words[0]] == nil {
			g := &cobra.Command{
				Use:   words[0],
				Short: words[0] + " commands",
				Args:  func(cmd *cobra.Command, args []string) error { return unknownCommand(cmd, args) },
				RunE: func(cmd *cobra.Command, args []string) error {
					_ = cmd.Usage()
					return usagef("%s: which subcommand? (see veil %s --help)", cmd.Name(), cmd.Name())
				},
			}
			g.SuggestionsMinimumDistance = 2
			groups[words[0]] = g
			groupNames = append(groupNames, words[0])
		}
	}
	for _, c := range commands {
		words := strings.Fields(c.path)
		if len(words) == 1 {
			if g := groups[words[0]]; g != nil {
				// The group's default command: its run, flags and help.
				a.fill(g, c)
				g.Args = cobra.ArbitraryArgs
				continue
			}
			cc := &cobra.Command{}
			a.fill(cc, c)
			root.AddCommand(cc)
			continue
		}
		cc := &cobra.Command{}
		a.fill(cc, c)
		groups[words[0]].AddCommand(cc)
	}
	sort.Strings(groupNames)
	for _, n := range groupNames {
		root.AddCommand(groups[n])
	}
	return root
}

// fill makes cc run c.
func (a *app) fill(cc *cobra.Command, c *command) {
	words := strings.Fields(c.path)
	cc.Use = words[len(words)-1]
	if c.args != "" {
		cc.Use += " " + c.args
	}
	cc.Short = c.summary
	cc.Long = capitalize(c.summary) + "."
	if c.detail != "" {
		cc.Long += "\n\n" + c.detail
	}
	if len(c.examples) > 0 {
		cc.Example = "  " + strings.Join(c.examples, "\n  ")
	}
	if c.flags != nil {
		c.flags(a, cc.Flags())
	}
	cc.Flags().SortFlags = false
	cc.RunE = func(cmd *cobra.Command, args []string) error { return c.run(a, args) }
	if strings.HasPrefix(c.args, "AGENT") {
		cc.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.agentNames(toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// agentNames completes AGENT from the account's agents (quietly nothing
// when the server or the key is missing).
func (a *app) agentNames(prefix string) []string {
	if a.loadSettings() != nil || a.g.apiKey == "" {
		return nil
	}
	c, err := a.api()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	list, err := c.ListAgents(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, ag := range list {
		if strings.HasPrefix(ag.Name, prefix) {
			out = append(out, ag.Name)
		}
	}
	return out
}

// unknownCommand is the usage error for a word that names no command,
// with cobra's suggestions ("did you mean agent?").
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	where := cmd.CommandPath()
	msg := fmt.Sprintf("unknown command %q for %q", args[0], where)
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s (see %s --help)", msg, where)
}

// flagError turns pflag's errors into sentences with the nearest flag.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	var name string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		name = strings.TrimPrefix(msg, "unknown flag: --")
		msg = fmt.Sprintf("%s has no flag --%s", cmd.CommandPath(), name)
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		msg = fmt.Sprintf("%s has no flag %s", cmd.CommandPath(), strings.TrimPrefix(msg, "unknown shorthand flag: "))
	case strings.HasPrefix(msg, "flag needs an argument: "):
		msg = fmt.Sprintf("%s needs a value", strings.TrimPrefix(msg, "flag needs an argument: "))
	}
	if name != "" {
		if s := nearestFlag(cmd, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return usagef("%s (see %s --help)", msg, cmd.CommandPath())
}

// nearestFlag is the flag of cmd closest to name (edit distance at most
// 2, or a prefix), or "".
func nearestFlag(cmd *cobra.Command, name string) string {
	best, bestD := "", 3
	visit := func(f *pflag.Flag) {
		d := levenshtein(name, f.Name)
		if strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return best
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
