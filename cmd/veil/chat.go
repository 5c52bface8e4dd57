package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"strings"
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
		args:    "AGENT [--message TEXT] [--conversation ID|last]",
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
		flags: func(a *app, fs *pflag.FlagSet) {
			fs.StringVarP(&f.message, "message", "m", "", "send this one `message` and exit")
			fs.StringVarP(&f.conv, "conversation", "c", "", "continue this `conversation` (its id, or last)")
		},
		run: func(a *app, args []string) error {
			var s *chatSession
			err := a.withOnlyAgent("chat", args, "chat takes one AGENT; quote the message and pass it with -m", func(ctx context.Context, c *client.Client, ag *client.AgentInfo, _ []string) error {
				var err error
				if f.conv == "last" {
					f.conv, err = lastConversation(ctx, c, ag.ID)
				}
				s = &chatSession{app: a, c: c, agent: ag, conv: f.conv}
				return err
			})
			if err != nil {
				return err
			}
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
	ctx, cancel := a.limit(ctx, chatTimeout)
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
		if err := s.app.printJSON(toJSONChat(resp)); err != nil {
			return err
		}
	} else {
		s.printReply(resp, false)
		fmt.Fprintf(s.app.stderr, "(conversation %s: continue with -c %s)\n", resp.ConversationID, resp.ConversationID)
	}
	return failedPayment(resp)
}

// failedPayment is the error (exit 7) of an answer in which a payment
// the user asked for failed, else nil.
func failedPayment(resp *client.ChatResponse) error {
	if tc, failed := paymentFailed(resp); failed {
		return &errPaymentFailed{tool: tc.Name, text: tc.ErrorText()}
	}
	if tc, pending := paymentPending(resp); pending {
		return &errPaymentPending{tool: tc.Name, id: tc.Field("paymentId")}
	}
	return nil
}

// lines sends every line of standard input as one message. A failed
// payment does not stop the later lines; the exit status reports it.
func (s *chatSession) lines() error {
	var failed error
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
		if failed == nil {
			failed = failedPayment(resp)
		}
		if s.app.g.json {
			if err := enc.Encode(toJSONChat(resp)); err != nil {
				return err
			}
			continue
		}
		s.printReply(resp, false)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return failed
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
	s.app.printMessages(s.app.stdout, s.agent, msgs)
	return nil
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
