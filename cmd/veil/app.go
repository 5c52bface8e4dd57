package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/veilhq/veil/client"
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
	exitPayment     = 7 // chat: a payment the message asked for failed (the answer is printed)
	exitPending     = 8 // chat: a payment is on its way, its outcome not known yet: do not send it again
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
func (a *app) addGlobals(fs *pflag.FlagSet) {
	fs.StringVarP(&a.g.url, "url", "U", a.g.url, "server URL (env VEIL_URL; default "+client.DefaultURL+")")
	fs.StringVar(&a.g.apiKey, "api-key", a.g.apiKey, "API key (env VEIL_API_KEY)")
	fs.StringVar(&a.g.configPath, "config", a.g.configPath, "config file (env VEIL_CONFIG; default $XDG_CONFIG_HOME/veil/config.json)")
	fs.StringVar(&a.g.provider, "provider", a.g.provider, "AI provider for chat: veil, openai or anthropic (env VEIL_AI_PROVIDER)")
	fs.StringVar(&a.g.aiKey, "ai-key", a.g.aiKey, "your key with that AI provider (env VEIL_AI_KEY)")
	fs.BoolVarP(&a.g.json, "json", "j", a.g.json, "print JSON for scripts")
	fs.DurationVarP(&a.g.timeout, "timeout", "t", a.g.timeout, "time limit of each request, retries included (default 30s; chat 3m)")
}

// command is one leaf command.
type command struct {
	path     string // "agent create"
	args     string // "NAME --chain CHAIN [wallet flags]"
	summary  string
	detail   string
	examples []string
	flags    func(a *app, fs *pflag.FlagSet) // its own flags
	run      func(a *app, args []string) error
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func (a *app) run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a.ctx, a.stopSignals = ctx, stop
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	code := exitCode(err)
	var quiet errQuietCode
	if err != nil && !errors.Is(err, pflag.ErrHelp) && !errors.Is(err, errQuiet) && !errors.As(err, &quiet) && code != exitInterrupted {
		a.printError(err, code)
	}
	if code == exitError && a.ctx.Err() != nil {
		code = exitInterrupted
	}
	return code
}

// errQuiet ends a command with exit 1 after it said what went wrong.
var errQuiet = errors.New("")

// errQuietCode ends a command with its exit code after it said what went
// wrong.
type errQuietCode struct{ code int }

func (e errQuietCode) Error() string { return "" }

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
		return &authError{"no API key: pass --api-key, set VEIL_API_KEY, or run `veil config set apiKey KEY` (veild prints an admin key at first start; `veil keys create NAME` makes more)"}
	}
	return nil
}

type authError struct{ msg string }

func (e *authError) Error() string { return e.msg }

// reqCtx bounds one request.
func (a *app) reqCtx(def time.Duration) (context.Context, context.CancelFunc) {
	return a.limit(a.ctx, def)
}

// limit bounds one request under parent: --timeout, else def.
func (a *app) limit(parent context.Context, def time.Duration) (context.Context, context.CancelFunc) {
	d := a.g.timeout
	if d <= 0 {
		d = def
	}
	return context.WithTimeout(parent, d)
}

const defaultTimeout = 30 * time.Second

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var ue *usageError
	var ae *authError
	var te *url.Error
	var pe *errPaymentFailed
	var pp *errPaymentPending
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return exitOK
	case errors.As(err, &pe):
		return exitPayment
	case errors.As(err, &pp):
		return exitPending
	case errors.As(err, new(errQuietCode)):
		var q errQuietCode
		errors.As(err, &q)
		return q.code
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
