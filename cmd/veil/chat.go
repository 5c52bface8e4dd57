package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/veilhq/veil/client"
)

const chatTimeout = 3 * time.Minute

const chatHelp = `Commands: /new starts a new conversation, /id prints the conversation id,
/history shows this conversation, /quit (or Ctrl-D) leaves. Ctrl-C cancels a
request that is running, or leaves at the prompt.`

func init() {
	var f struct {
		message, conv string
	}
	register(&command{
		path:    "chat",
		args:    "AGENT [-m MESSAGE] [-c CONVERSATION]",
		summary: "talk to an agent: an interactive prompt, or one message with -m",
		detail: `On a terminal, veil chat opens a prompt; a spinner runs while the agent works, then the tools
it ran are listed (✓ success, ✗ error), followed by its answer and the links it reported
(transactions, invoice pay pages). With -m it sends one message and exits. When standard input
is not a terminal, every line read is one message (with --json, one JSON answer per line).
Without -c a new conversation starts; -c last continues the most recent one.

` + chatHelp,
		examples: []string{
			"veil chat alice",
			`veil chat alice -m "send 0.5 USDC to bob.veil"`,
			`veil chat alice -c last -m "and create an invoice for 25 USDC for the logo work"`,
			`veil chat alice -m "what's my balance?" --json | jq -r .response`,
			`veil chat alice --provider openai --ai-key "$OPENAI_API_KEY"`,
			`printf 'balance\nscan payments\n' | veil chat alice --json`,
		},
		flags: func(a *app, fs *flag.FlagSet) {
			fs.StringVar(&f.message, "m", "", "send this one `message` and exit")
			fs.StringVar(&f.conv, "c", "", "continue this `conversation` (its id, or last)")
		},
		run: func(a *app, args []string) error {
			ref, rest, err := a.agentArg(args, "chat")
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return usagef("chat takes one AGENT; quote the message and pass it with -m")
			}
			if err := a.needKey(); err != nil {
				return err
			}
			c, err := a.api()
			if err != nil {
				return err
			}
			ctx, cancel := a.reqCtx(defaultTimeout)
			ag, err := a.resolve(ctx, ref)
			if err == nil && f.conv == "last" {
				f.conv, err = lastConversation(ctx, c, ag.ID)
			}
			cancel()
			if err != nil {
				return err
			}
			s := &chatSession{app: a, c: c, agent: ag, conv: f.conv}
			switch {
			case f.message != "":
				return s.oneShot(f.message)
			case isTerminal(a.stdin) && !a.g.json:
				return s.interactive()
			default:
				return s.lines()
			}
		},
	})
}

func lastConversation(ctx context.Context, c *client.Client, agentID string) (string, error) {
	convs, err := c.ListConversations(ctx, agentID)
	if err != nil {
		return "", err
	}
	if len(convs) == 0 {
		return "", nil
	}
	return convs[0].ID, nil
}

type chatSession struct {
	app   *app
	c     *client.Client
	agent *client.AgentInfo
	conv  string
}

// send sends one message, with a spinner on a terminal.
func (s *chatSession) send(ctx context.Context, msg string) (*client.ChatResponse, error) {
	a := s.app
	d := a.g.timeout
	if d <= 0 {
		d = chatTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var stop func()
	if !a.g.json && isTerminal(a.stderr) {
		stop = startSpinner(a.stderr, s.agent.Name+" is working")
	}
	resp, err := s.c.Chat(ctx, s.agent.ID, client.ChatRequest{Message: msg, ConversationID: s.conv})
	if stop != nil {
		stop()
	}
	if err != nil {
		return nil, err
	}
	s.conv = resp.ConversationID
	return resp, nil
}

func (s *chatSession) oneShot(msg string) error {
	resp, err := s.send(s.app.ctx, msg)
	if err != nil {
		return err
	}
	if s.app.g.json {
		return s.app.printJSON(resp)
	}
	s.printReply(resp, false)
	fmt.Fprintf(s.app.stderr, "(conversation %s: continue with -c %s)\n", resp.ConversationID, resp.ConversationID)
	return nil
}

// lines sends every line of standard input as one message.
func (s *chatSession) lines() error {
	sc := bufio.NewScanner(s.app.stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	enc := json.NewEncoder(s.app.stdout)
	for sc.Scan() {
		msg := strings.TrimSpace(sc.Text())
		if msg == "" {
			continue
		}
		resp, err := s.send(s.app.ctx, msg)
		if err != nil {
			return err
		}
		if s.app.g.json {
			if err := enc.Encode(resp); err != nil {
				return err
			}
			continue
		}
		s.printReply(resp, false)
	}
	return sc.Err()
}

// interactive is the prompt on a terminal.
func (s *chatSession) interactive() error {
	a := s.app
	// Ctrl-C cancels the running request instead of ending the program:
	// the process-wide signal context gives way to the handling below.
	a.stopSignals()
	a.ctx = context.Background()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	input := make(chan string)
	inputErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(a.stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			input <- sc.Text()
		}
		inputErr <- sc.Err()
		close(input)
	}()

	where := "a new conversation"
	if s.conv != "" {
		where = "conversation " + s.conv
	}
	fmt.Fprintf(a.stdout, "Chatting with %s in %s. /help for commands, /quit or Ctrl-D to leave.\n", s.agent.FullName(), where)
	for {
		fmt.Fprint(a.stdout, "you> ")
		var line string
		select {
		case l, ok := <-input:
			if !ok {
				fmt.Fprintln(a.stdout)
				return <-inputErr
			}
			line = strings.TrimSpace(l)
		case sig := <-sigs:
			fmt.Fprintln(a.stdout)
			if sig == syscall.SIGTERM {
				return nil
			}
			return errInterrupted
		}
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
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			select {
			case <-sigs:
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
			fmt.Fprintf(a.stdout, "(%s)\n", errText(err))
			if code := exitCode(err); code == exitAuth || code == exitNotFound && s.conv == "" {
				return err
			}
		default:
			s.printReply(resp, true)
		}
	}
}

var errInterrupted = errors.New("interrupted")

func errText(err error) string {
	var ae *client.Error
	if errors.As(err, &ae) {
		return fmt.Sprintf("%s (%d)", ae.Message, ae.StatusCode)
	}
	return strings.TrimPrefix(err.Error(), "veil: ")
}

func (s *chatSession) history() error {
	if s.conv == "" {
		fmt.Fprintln(s.app.stdout, "(no conversation yet)")
		return nil
	}
	ctx, cancel := s.app.reqCtx(defaultTimeout)
	defer cancel()
	msgs, err := s.c.ListMessages(ctx, s.agent.ID, s.conv)
	if err != nil {
		return err
	}
	printMessages(s.app.stdout, s.agent, msgs)
	return nil
}

// printReply prints the tools the agent ran, its answer and the links.
func (s *chatSession) printReply(resp *client.ChatResponse, prompt bool) {
	w := s.app.stdout
	for _, tc := range resp.ToolCalls {
		fmt.Fprintln(w, toolLine(tc))
	}
	if prompt {
		fmt.Fprintf(w, "%s> %s\n", s.agent.Name, resp.Response)
	} else {
		fmt.Fprintln(w, resp.Response)
	}
	for _, l := range resp.Links() {
		fmt.Fprintf(w, "  %-4s %s\n", linkLabel(l.Kind), l.URL)
	}
}

func linkLabel(kind string) string {
	switch strings.ToLower(kind) {
	case "txlink":
		return "tx"
	case "paymentlink":
		return "pay"
	}
	return strings.TrimSuffix(strings.TrimSuffix(kind, "Link"), "link")
}

// toolLine is one line per tool call: mark, name and the short scalar
// members of its result (links are printed apart), or its error.
func toolLine(tc client.ToolCall) string {
	if !tc.OK() {
		return fmt.Sprintf("  ✗ %s: %s", tc.Name, oneLine(tc.ErrorText(), 140))
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(tc.Detail), &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// The spec's known members first, then the rest by name.
	rank := map[string]int{"txHash": 0, "id": 1, "count": 2, "amount": 3, "asset": 4, "status": 5}
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		if strings.HasSuffix(strings.ToLower(k), "link") {
			continue
		}
		switch v := m[k].(type) {
		case string:
			if v != "" && len(v) <= 70 {
				parts = append(parts, k+" "+v)
			}
		case float64:
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		case bool:
			parts = append(parts, fmt.Sprintf("%s %v", k, v))
		}
		if len(parts) == 4 {
			break
		}
	}
	return "  " + oneLine(fmt.Sprintf("✓ %s  %s", tc.Name, strings.Join(parts, ", ")), 160)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// printMessages prints a conversation for people.
func printMessages(w io.Writer, ag *client.AgentInfo, msgs []client.Message) {
	for _, m := range msgs {
		at := m.CreatedAt.Local().Format("15:04")
		switch m.Role {
		case client.RoleUser:
			fmt.Fprintf(w, "[%s] you> %s\n", at, m.Text)
		case client.RoleAgent:
			fmt.Fprintf(w, "[%s] %s> %s\n", at, ag.Name, m.Text)
		case client.RoleTool:
			if tc, ok := m.ToolCall(); ok {
				fmt.Fprintf(w, "[%s] %s\n", at, strings.TrimSpace(toolLine(tc)))
			} else {
				fmt.Fprintf(w, "[%s] tool: %s\n", at, m.Text)
			}
		default:
			fmt.Fprintf(w, "[%s] %s: %s\n", at, m.Role, m.Text)
		}
	}
}

// startSpinner animates label on w until the returned function is called,
// which erases the line.
func startSpinner(w io.Writer, label string) func() {
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	stop := make(chan struct{})
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(w, "\r%s %s… %.0fs", frames[i%len(frames)], label, time.Since(start).Seconds())
			select {
			case <-stop:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(stop); <-done }
}
