package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/chzyer/readline"
)

// historyPath is the chat prompt's history file: VEIL_CHAT_HISTORY (a
// path, or "off"), else $XDG_STATE_HOME/veil/chat_history, else
// ~/.local/state/veil/chat_history. "" means no history.
func (a *app) historyPath() string {
	switch v := a.getenv("VEIL_CHAT_HISTORY"); v {
	case "off", "none":
		return ""
	case "":
	default:
		return v
	}
	dir := a.getenv("XDG_STATE_HOME")
	if dir == "" {
		home := a.getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "veil", "chat_history")
}

// openHistory makes sure the history file exists readable by its owner
// only (messages may name amounts and addresses) and returns its path, or
// "" when it cannot be written (the prompt then keeps history in memory).
func (a *app) openHistory() string {
	p := a.historyPath()
	if p == "" {
		return ""
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		fmt.Fprintf(a.stderr, "veil: chat history off: %v\n", err)
		return ""
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintf(a.stderr, "veil: chat history off: %v\n", err)
		return ""
	}
	_ = f.Close()
	return p
}

// slashCommands complete at the prompt with Tab.
var slashCommands = readline.NewPrefixCompleter(
	readline.PcItem("/new"), readline.PcItem("/id"), readline.PcItem("/history"),
	readline.PcItem("/help"), readline.PcItem("/quit"),
)

// interactive is the prompt on a terminal: line editing, history (arrow
// keys, Ctrl-R; kept across sessions in the history file), Tab completion
// of the slash commands. Ctrl-D on an empty line leaves (exit 0), Ctrl-C
// on an empty line leaves with 130 and otherwise clears the line; Ctrl-C
// while a request runs cancels the request.
func (s *chatSession) interactive() error {
	a := s.app
	// Ctrl-C cancels the running request instead of ending the program:
	// the process-wide signal context gives way to the handling below.
	a.stopSignals()
	a.ctx = context.Background()
	ints := make(chan os.Signal, 1)
	signal.Notify(ints, os.Interrupt)
	defer signal.Stop(ints)
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	defer signal.Stop(terms)

	stdin, _ := a.stdin.(*os.File)
	cfg := &readline.Config{
		Prompt:            s.app.paint(bold, "you>") + " ",
		HistoryFile:       a.openHistory(),
		HistoryLimit:      1000,
		HistorySearchFold: true,
		AutoComplete:      slashCommands,
		InterruptPrompt:   "^C",
		Stdout:            a.stdout,
		Stderr:            a.stderr,
	}
	// The prompt reads the terminal through a reader its Close can end:
	// readline's own Close waits for its reading goroutine, which may sit
	// in a read of the terminal (a Ctrl-D typed while the agent worked
	// reaches it as a NUL in raw mode, which readline takes for end of
	// input while reading on), and a plain *os.File read does not return.
	var in io.Reader = readline.Stdin
	if stdin != nil {
		in = stdin
	}
	cin := readline.NewCancelableStdin(in)
	cfg.Stdin = &homeEndKeys{r: cin}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		_ = cin.Close()
		return fmt.Errorf("open the prompt: %w", err)
	}
	closePrompt := func() { _ = cin.Close(); _ = rl.Close() }
	defer closePrompt()
	left := make(chan struct{})
	defer close(left)
	go func() {
		select {
		case <-terms:
			closePrompt() // Readline returns io.EOF: leave with 0
		case <-left:
		}
	}()

	where := "a new conversation"
	if s.conv != "" {
		where = "conversation " + s.conv
	}
	fmt.Fprintf(a.stdout, "Chatting with %s in %s. /help for commands, /quit or Ctrl-D to leave.\n", a.paint(cyan, s.agent.FullName()), where)
	for {
		l, err := rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			if strings.TrimSpace(l) != "" {
				continue // Ctrl-C clears a line being typed
			}
			return errInterrupted
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		line := strings.TrimSpace(l)
		switch {
		case line == "":
			continue
		case line == "/quit" || line == "/exit" || line == "/q":
			return nil
		case line == "/help" || line == "/?":
			fmt.Fprintln(a.stdout, chatHelp)
			continue
		case line == "/new":
			s.conv = ""
			fmt.Fprintln(a.stdout, "(a new conversation starts with your next message)")
			continue
		case line == "/id":
			if s.conv == "" {
				fmt.Fprintln(a.stdout, "(no conversation yet)")
			} else {
				fmt.Fprintln(a.stdout, s.conv)
			}
			continue
		case line == "/history":
			if err := s.history(); err != nil {
				fmt.Fprintf(a.stdout, "(%s)\n", errText(err))
			}
			continue
		case strings.HasPrefix(line, "/") && !strings.Contains(line, " "):
			fmt.Fprintf(a.stdout, "unknown command %s\n%s\n", line, chatHelp)
			continue
		}
		// Drop a SIGINT that arrived while idle (not from the keyboard:
		// the prompt reads Ctrl-C as a key).
		select {
		case <-ints:
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			select {
			case <-ints:
				cancel()
			case <-done:
			}
		}()
		resp, err := s.send(ctx, line)
		close(done)
		cancelled := ctx.Err() != nil
		cancel()
		switch {
		case cancelled:
			fmt.Fprintln(a.stdout, "(cancelled)")
		case err != nil:
			fmt.Fprintf(a.stdout, "%s\n", a.paint(red, "("+errText(err)+")"))
			if code := exitCode(err); code == exitAuth || code == exitNotFound && s.conv == "" {
				return err
			}
		default:
			s.printReply(resp, true)
		}
	}
}
