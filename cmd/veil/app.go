package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/veilhq/veil/client"
	"github.com/veilhq/veil/internal/buildinfo"
)

// Exit codes (docs/cli.md): scripts may rely on them.
const (
	exitOK          = 0 // success
	exitError       = 1 // an API error not listed below, or a local failure
	exitUsage       = 2 // bad command line: unknown command or flag, missing argument
	exitNotFound    = 3 // 404: agent, conversation, invoice or schedule not found
	exitAuth        = 4 // 401: API key missing, malformed or unknown
	exitConflict    = 5 // 409: the agent name is taken
	exitUnavailable = 6 // server unreachable, 503 or 429: retry later
	exitInterrupted = 130
)

// usageError is a bad command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// app is one run of the command: its streams, environment and settings.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	g   globals
	cfg config
	c   *client.Client
	// ctx is cancelled on SIGINT/SIGTERM; stopSignals ends that.
	ctx         context.Context
	stopSignals func()
}

// globals are the flags every command takes.
type globals struct {
	url, apiKey, configPath string
	provider, aiKey         string
	json                    bool
	timeout                 time.Duration
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
}

// addGlobals registers the global flags on fs.
func (a *app) addGlobals(fs *flag.FlagSet) {
	fs.StringVar(&a.g.url, "url", a.g.url, "server URL (env VEIL_URL; default "+client.DefaultURL+")")
	fs.StringVar(&a.g.apiKey, "api-key", a.g.apiKey, "API key (env VEIL_API_KEY)")
	fs.StringVar(&a.g.configPath, "config", a.g.configPath, "config file (env VEIL_CONFIG; default $XDG_CONFIG_HOME/veil/config.json)")
	fs.StringVar(&a.g.provider, "provider", a.g.provider, "AI provider for chat: veil, openai or anthropic (env VEIL_AI_PROVIDER)")
	fs.StringVar(&a.g.aiKey, "ai-key", a.g.aiKey, "your key with that AI provider (env VEIL_AI_KEY)")
	fs.BoolVar(&a.g.json, "json", a.g.json, "print JSON for scripts")
	fs.DurationVar(&a.g.timeout, "timeout", a.g.timeout, "time limit of each request, retries included (default 30s; chat 3m)")
}

// command is one leaf command.
type command struct {
	path     string // "agent create"
	args     string // "NAME --chain CHAIN [wallet flags]"
	summary  string
	detail   string
	examples []string
	flags    func(a *app, fs *flag.FlagSet) // its own flags
	run      func(a *app, args []string) error
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func (a *app) run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a.ctx, a.stopSignals = ctx, stop
	err := a.dispatch(args)
	code := exitCode(err)
	if err != nil && !errors.Is(err, flag.ErrHelp) && !errors.Is(err, errQuiet) && code != exitInterrupted {
		a.printError(err, code)
	}
	if code == exitError && a.ctx.Err() != nil {
		code = exitInterrupted
	}
	return code
}

// errQuiet ends a command with exit 1 after it said what went wrong.
var errQuiet = errors.New("")

func (a *app) dispatch(args []string) error {
	top := flag.NewFlagSet("veil", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	a.addGlobals(top)
	var showVersion bool
	top.BoolVar(&showVersion, "version", false, "print the version")
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.printTopHelp(a.stdout)
			return flag.ErrHelp
		}
		return usagef("%v (see veil --help)", err)
	}
	if showVersion {
		fmt.Fprintln(a.stdout, "veil", buildinfo.Read(version))
		return nil
	}
	rest := top.Args()
	if len(rest) == 0 {
		a.printTopHelp(a.stderr)
		return usagef("no command given")
	}
	if rest[0] == "help" {
		return a.help(rest[1:])
	}
	cmd, args, group := findCommand(rest)
	if cmd == nil {
		if len(group) > 0 {
			if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
				a.printGroupHelp(a.stdout, group)
				return flag.ErrHelp
			}
			a.printGroupHelp(a.stderr, group)
			if len(args) == 0 {
				return usagef("%s: which subcommand?", strings.Fields(group[0].path)[0])
			}
			return usagef("%s: unknown subcommand %q", strings.Fields(group[0].path)[0], args[0])
		}
		return usagef("unknown command %q (see veil --help)", rest[0])
	}
	fs := flag.NewFlagSet("veil "+cmd.path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	a.addGlobals(fs)
	if cmd.flags != nil {
		cmd.flags(a, fs)
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			a.printCommandHelp(a.stdout, cmd, fs)
			return flag.ErrHelp
		}
		return usagef("%v (see veil %s --help)", err, cmd.path)
	}
	if err := a.loadSettings(); err != nil {
		return err
	}
	return cmd.run(a, pos)
}

// findCommand matches the longest command path at the start of args. When
// no command matches but args[0] names a group, group lists its commands.
// A group's default command ("conversations AGENT" is "conversations
// list AGENT") is the one registered with the group's bare name.
func findCommand(args []string) (*command, []string, []*command) {
	group := groupOf(args[0])
	if len(args) >= 2 {
		for _, c := range commands {
			if c.path == args[0]+" "+args[1] {
				return c, args[2:], nil
			}
		}
	}
	for _, c := range commands {
		if c.path == args[0] {
			return c, args[1:], nil
		}
	}
	return nil, args[1:], group
}

// groupOf returns the two-word commands whose first word is name.
func groupOf(name string) []*command {
	var group []*command
	for _, c := range commands {
		words := strings.Fields(c.path)
		if len(words) == 2 && words[0] == name {
			group = append(group, c)
		}
	}
	return group
}

// parseInterspersed parses flags anywhere among the arguments ("veil chat
// alice -m hi"); everything after "--" is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	for i, s := range args {
		if s == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, tail...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// loadSettings resolves each setting: flag, then environment, then config
// file, then default.
func (a *app) loadSettings() error {
	path := firstNonEmpty(a.g.configPath, a.getenv("VEIL_CONFIG"))
	explicit := path != ""
	if path == "" {
		path = defaultConfigPath(a.getenv)
	}
	cfg, err := readConfig(path)
	if err != nil && (explicit || !errors.Is(err, os.ErrNotExist)) {
		return err
	}
	a.cfg = cfg
	a.cfg.path = path
	a.g.url = firstNonEmpty(a.g.url, a.getenv("VEIL_URL"), cfg.URL, client.DefaultURL)
	a.g.apiKey = firstNonEmpty(a.g.apiKey, a.getenv("VEIL_API_KEY"), cfg.APIKey)
	a.g.provider = firstNonEmpty(a.g.provider, a.getenv("VEIL_AI_PROVIDER"), cfg.Provider)
	a.g.aiKey = firstNonEmpty(a.g.aiKey, a.getenv("VEIL_AI_KEY"), cfg.AIKey)
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// api returns the client, made on first use.
func (a *app) api() (*client.Client, error) {
	if a.c != nil {
		return a.c, nil
	}
	opts := []client.Option{client.WithUserAgent("veil-cli/" + version)}
	if a.g.provider != "" || a.g.aiKey != "" {
		opts = append(opts, client.WithAIProvider(a.g.provider, a.g.aiKey))
	}
	c, err := client.New(a.g.url, a.g.apiKey, opts...)
	if err != nil {
		return nil, usagef("%v", strings.TrimPrefix(err.Error(), "veil: "))
	}
	a.c = c
	return c, nil
}

// needKey fails early, with a hint, when no API key is configured.
func (a *app) needKey() error {
	if a.g.apiKey == "" {
		return &authError{"no API key: pass --api-key, set VEIL_API_KEY, or run `veil config set apiKey KEY` (veild prints a key at first start; `veild apikey create --account NAME` makes more)"}
	}
	return nil
}

type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }

// reqCtx bounds one request.
func (a *app) reqCtx(def time.Duration) (context.Context, context.CancelFunc) {
	d := a.g.timeout
	if d <= 0 {
		d = def
	}
	return context.WithTimeout(a.ctx, d)
}

const defaultTimeout = 30 * time.Second

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var ue *usageError
	var ae *authError
	var te *url.Error
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ae):
		return exitAuth
	}
	switch client.StatusCode(err) {
	case 0:
	case 404:
		return exitNotFound
	case 401:
		return exitAuth
	case 409:
		return exitConflict
	case 429, 502, 503, 504:
		return exitUnavailable
	default:
		return exitError
	}
	if errors.Is(err, context.Canceled) {
		return exitInterrupted
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
		return exitUnavailable
	}
	return exitError
}

// printError writes err to stderr: a line for people, or with --json the
// API's error shape {message, statusCode} plus the exit code.
func (a *app) printError(err error, code int) {
	msg := strings.TrimPrefix(err.Error(), "veil: ")
	var ae *client.Error
	status := 0
	if errors.As(err, &ae) {
		msg, status = ae.Message, ae.StatusCode
	}
	if a.g.json {
		_ = json.NewEncoder(a.stderr).Encode(map[string]any{"message": msg, "statusCode": status, "exitCode": code})
		return
	}
	if status != 0 {
		fmt.Fprintf(a.stderr, "veil: %s (%d)\n", msg, status)
	} else {
		fmt.Fprintf(a.stderr, "veil: %s\n", msg)
	}
	if code == exitUnavailable && status == 0 {
		fmt.Fprintf(a.stderr, "veil: is veild running at %s? (set --url or VEIL_URL)\n", a.g.url)
	}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	if file, ok := f.(*os.File); ok {
		return term.IsTerminal(int(file.Fd()))
	}
	return false
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
