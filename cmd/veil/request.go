package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/veilhq/veil/client"
)

// The steps every command that talks to the server shares: check the API
// key, make the client, bound the request, resolve the AGENT argument,
// then print the answer as JSON (--json) or for people. A subcommand
// states only its request and its rendering.

// call runs fn with the client under one request's time limit, after
// checking that an API key is configured.
func (a *app) call(fn func(ctx context.Context, c *client.Client) error) error {
	if err := a.needKey(); err != nil {
		return err
	}
	return a.callWithoutKey(fn)
}

// callWithoutKey is call for the requests the server answers without a
// key (health).
func (a *app) callWithoutKey(fn func(ctx context.Context, c *client.Client) error) error {
	c, err := a.api()
	if err != nil {
		return err
	}
	ctx, cancel := a.reqCtx(defaultTimeout)
	defer cancel()
	return fn(ctx, c)
}

// agentFunc is a command's work on a resolved agent; rest are the
// arguments after AGENT.
type agentFunc func(ctx context.Context, c *client.Client, ag *client.AgentInfo, rest []string) error

// withAgent runs fn with the resolved agent of args[0] (or the default
// agent) and exactly `extra` more arguments, under one request's time
// limit.
func (a *app) withAgent(cmd string, args []string, extra int, fn agentFunc) error {
	return a.agentCall(cmd, args, func(rest []string) error {
		if len(rest) != extra {
			return usagef("%s: expected %d argument(s) after AGENT, got %d", cmd, extra, len(rest))
		}
		return nil
	}, fn)
}

// withOnlyAgent is withAgent for a command that takes AGENT alone and says
// tooMany when more arguments follow it.
func (a *app) withOnlyAgent(cmd string, args []string, tooMany string, fn agentFunc) error {
	return a.agentCall(cmd, args, func(rest []string) error {
		if len(rest) != 0 {
			return usagef("%s", tooMany)
		}
		return nil
	}, fn)
}

// agentCall resolves the AGENT argument once checkRest accepts the
// arguments after it, and runs fn within call.
func (a *app) agentCall(cmd string, args []string, checkRest func(rest []string) error, fn agentFunc) error {
	ref, rest, err := a.agentArg(args, cmd)
	if err != nil {
		return err
	}
	if err := checkRest(rest); err != nil {
		return err
	}
	return a.call(func(ctx context.Context, c *client.Client) error {
		ag, err := a.resolve(ctx, ref)
		if err != nil {
			return err
		}
		return fn(ctx, c, ag, rest)
	})
}

// print writes v as JSON with --json, else runs human, which prints it
// for people.
func (a *app) print(v any, human func() error) error {
	if a.g.json {
		return a.printJSON(v)
	}
	return human()
}

// table is a writer of aligned columns on standard output (Flush prints
// them).
func (a *app) table() *tabwriter.Writer {
	return tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
}

// printList prints a list: with --json the array (empty, never null);
// else a table of header and row(item) per item (tab-separated columns),
// or, for no items, the line empty on standard error.
func printList[T any](a *app, list []T, empty, header string, row func(T) string) error {
	if a.g.json {
		return a.printJSON(nonNil(list))
	}
	if len(list) == 0 {
		fmt.Fprintln(a.stderr, empty)
		return nil
	}
	tw := a.table()
	fmt.Fprintln(tw, header)
	for _, it := range list {
		fmt.Fprintln(tw, row(it))
	}
	return tw.Flush()
}

// agentList is a list command on AGENT: get reads the agent's list, which
// printList prints (empty says what to print when there is none).
func agentList[T any](a *app, cmd string, args []string, get func(ctx context.Context, c *client.Client, agentID string) ([]T, error), empty func(*client.AgentInfo) string, header string, row func(T) string) error {
	return a.withAgent(cmd, args, 0, func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
		list, err := get(ctx, c, ag.ID)
		if err != nil {
			return err
		}
		return printList(a, list, empty(ag), header, row)
	})
}

// stringFlag is a command's flags when it has one string flag.
func stringFlag(p *string, name, short, value, usage string) func(*app, *pflag.FlagSet) {
	return func(_ *app, fs *pflag.FlagSet) { fs.StringVarP(p, name, short, value, usage) }
}

// nonNil is list, or an empty list for nil: JSON output prints [], not
// null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// localTime is how a time is shown to people.
func localTime(t time.Time) string { return t.Local().Format(time.DateTime) }

// noArgs is the usage error of a command that takes no arguments.
func noArgs(cmd string, args []string) error {
	if len(args) != 0 {
		return usagef("%s takes no arguments", cmd)
	}
	return nil
}
