package main

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/client"
)

// chatServer starts veild with one agent, "chatter", and skips the test
// while the server has no chat endpoint.
func chatServer(t *testing.T) (*server, []string) {
	t.Helper()
	s := startVeild(t)
	env := veilEnv(t, s)
	key, _ := crypto.GenerateKey()
	ok(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(key))), "agent", "create", "chatter", "--chain", "base")
	r := veil(t, env, "", "chat", "chatter", "-m", "hello", "--json")
	if r.code == exitNotFound && strings.Contains(r.stderr, "no such endpoint") {
		t.Skip("POST /agent/{id}/chat is not routed by this veild yet; this test runs once it is")
	}
	if r.code != 0 {
		t.Fatalf("first chat: %s", r)
	}
	resp := chatJSON(t, r.stdout)
	if resp.Response == "" || !client.IsAgentID(resp.ConversationID) {
		t.Fatalf("chat --json %+v", resp)
	}
	return s, env
}

// chatJSON decodes veil chat --json: the API's ChatResponse, but each
// tool's detail is an object, turned back into the client's form here.
func chatJSON(t *testing.T, s string) client.ChatResponse {
	t.Helper()
	var raw struct {
		Response       string `json:"response"`
		ConversationID string `json:"conversationId"`
		ToolCalls      []struct {
			Name   string          `json:"name"`
			Status string          `json:"status"`
			Detail json.RawMessage `json:"detail"`
		} `json:"toolCalls"`
	}
	raw2 := decode[json.RawMessage](t, s)
	if err := json.Unmarshal(raw2, &raw); err != nil {
		t.Fatal(err)
	}
	out := client.ChatResponse{Response: raw.Response, ConversationID: raw.ConversationID}
	for _, tc := range raw.ToolCalls {
		if len(tc.Detail) > 0 && tc.Detail[0] == '"' {
			t.Fatalf("tool %s: detail is a JSON string, want an object: %s", tc.Name, tc.Detail)
		}
		out.ToolCalls = append(out.ToolCalls, client.ToolCall{Name: tc.Name, Status: tc.Status, Detail: string(tc.Detail)})
	}
	return out
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func TestChatOneShotAndScripted(t *testing.T) {
	_, env := chatServer(t)

	// One message, for people: the answer on stdout, how to continue on
	// stderr; -c last continues the newest conversation.
	r := ok(t, env, "chat", "chatter", "-m", "what's my balance?")
	if strings.TrimSpace(r.stdout) == "" || !strings.Contains(r.stderr, "continue with -c ") {
		t.Fatalf("one-shot: %s", r)
	}
	conv := uuidRE.FindString(r.stderr)
	r = ok(t, env, "chat", "chatter", "-c", "last", "-m", "create an invoice for 25 USDC for the logo work", "--json")
	resp := chatJSON(t, r.stdout)
	if resp.ConversationID != conv {
		t.Fatalf("-c last went to %s, want %s", resp.ConversationID, conv)
	}
	// When the agent made the invoice, the human form prints its pay link
	// and invoice show finds it.
	for _, tc := range resp.ToolCalls {
		if tc.Name == "create_invoice" && tc.OK() {
			id := tc.Field("id")
			r := veil(t, env, "", "invoice", "show", id, "--json")
			if strings.Contains(r.stderr, "no such endpoint") {
				t.Log("GET /invoice/{id} is not routed yet: invoice show not checked")
				continue
			}
			inv := decode[client.Invoice](t, r.stdout)
			if inv.ID != id || inv.Status != client.InvoicePending || inv.Amount != "25" {
				t.Fatalf("invoice %+v", inv)
			}
			if r := ok(t, env, "invoice", "show", id); !strings.Contains(r.stdout, inv.PaymentLink) {
				t.Fatalf("invoice show: %s", r.stdout)
			}
		}
	}
	for _, tc := range resp.ToolCalls {
		if tc.Name == "create_invoice" && tc.OK() {
			r := ok(t, env, "chat", "chatter", "-c", conv, "-m", "create an invoice for 3 USDC for coffee")
			if !strings.Contains(r.stdout, "✓ create_invoice") || !strings.Contains(r.stdout, "  pay  http") {
				t.Fatalf("tool calls and pay link not printed: %s", r)
			}
		}
	}

	// A script pipes messages: one JSON answer per line, one conversation.
	r = veil(t, env, "what's my balance?\n\nhello again\n", "chat", "chatter", "--json")
	if r.code != 0 {
		t.Fatalf("piped: %s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 JSON lines, got %q", r.stdout)
	}
	a, b := chatJSON(t, lines[0]), chatJSON(t, lines[1])
	if a.ConversationID == "" || a.ConversationID != b.ConversationID {
		t.Fatalf("piped conversations %s %s", a.ConversationID, b.ConversationID)
	}
	msgs := decode[[]client.Message](t, ok(t, env, "conversations", "show", "chatter", a.ConversationID, "--json").stdout)
	if len(msgs) < 4 || msgs[0].Text != "what's my balance?" {
		t.Fatalf("messages %+v", msgs)
	}
	if r := ok(t, env, "conversations", "show", "chatter", "last"); !strings.Contains(r.stdout, "you> what's my balance?") || !strings.Contains(r.stdout, "chatter> ") {
		t.Fatalf("conversation for people: %s", r.stdout)
	}

	// A payment the message asked for that fails: the answer is printed,
	// the chain's refusal is in words, and the exit status is 7.
	key2, _ := crypto.GenerateKey()
	ok(t, append(env, "VEIL_EVM_KEY=0x"+hex.EncodeToString(crypto.FromECDSA(key2))), "agent", "create", "payee", "--chain", "base")
	r = veil(t, env, "", "chat", "chatter", "-m", "send 500 ETH to payee.veil on base")
	if r.code != exitPayment || !strings.Contains(r.stderr, "payment failed") || !strings.Contains(r.stdout, "✗ ") {
		t.Fatalf("failed payment: %s", r)
	}
	if strings.Contains(r.stdout+r.stderr, "wei") {
		t.Fatalf("raw wei shown: %s", r)
	}
	t.Logf("failed payment as shown:\n%s%s", r.stdout, r.stderr)
	r = veil(t, env, "", "chat", "chatter", "-m", "send 500 ETH to payee.veil on base", "--json")
	if e := decode[jsonError](t, r.stderr); r.code != exitPayment || e.ExitCode != exitPayment {
		t.Fatalf("failed payment --json: %s", r)
	}

	// Errors: an unknown conversation is 404 (exit 3), an unknown provider
	// 400 (exit 1), a provider without its key 400.
	fails(t, env, 3, "chat", "chatter", "-c", "00000000-0000-4000-8000-000000000000", "-m", "hi")
	r = fails(t, env, 1, "chat", "chatter", "-m", "hi", "--provider", "nonsense", "--json")
	if e := decode[jsonError](t, r.stderr); e.StatusCode != 400 || !strings.Contains(e.Message, "X-AI-Provider") {
		t.Fatalf("unknown provider %+v", e)
	}
	fails(t, env, 1, "chat", "chatter", "-m", "hi", "--provider", "openai")
}

// ptyTerm is veil running in a pseudo-terminal.
type ptyTerm struct {
	t   *testing.T
	cmd *exec.Cmd
	pty io.ReadWriteCloser
	out *syncBuf
}

func startTerm(t *testing.T, env []string, args ...string) *ptyTerm {
	t.Helper()
	cmd := exec.Command(veilBin, args...)
	cmd.Env = append(env, "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	tm := &ptyTerm{t: t, cmd: cmd, pty: f, out: &syncBuf{}}
	go func() { _, _ = io.Copy(tm.out, f) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = f.Close() })
	return tm
}

// waitFor waits until the output holds n occurrences of s.
func (tm *ptyTerm) waitFor(s string, n int) {
	tm.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for strings.Count(tm.out.String(), s) < n {
		if time.Now().After(deadline) {
			tm.t.Fatalf("no %d× %q on the terminal; it shows:\n%s", n, s, tm.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitForPrompt waits until the prompt is drawn again after the last
// answer ("chatter> "): a key sent before it can reach the terminal while
// the answer is still being printed and be lost.
func (tm *ptyTerm) waitForPrompt() {
	tm.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		out := tm.out.String()
		if i := strings.LastIndex(out, "chatter> "); i >= 0 && strings.Contains(out[i:], "you> ") {
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("no prompt after the answer; the terminal shows:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (tm *ptyTerm) typeLine(s string) {
	tm.t.Helper()
	if _, err := tm.pty.Write([]byte(s + "\r")); err != nil {
		tm.t.Fatal(err)
	}
}

// wait waits for the process to end and returns its exit code.
func (tm *ptyTerm) wait() int {
	tm.t.Helper()
	done := make(chan struct{})
	go func() { _ = tm.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		tm.t.Fatalf("veil did not exit; terminal:\n%s", tm.out.String())
	}
	return tm.cmd.ProcessState.ExitCode()
}

// waitForRE waits until the output matches re.
func (tm *ptyTerm) waitForRE(re *regexp.Regexp) string {
	tm.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := re.FindString(tm.out.String()); m != "" {
			return m
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("no %s on the terminal; it shows:\n%s", re, tm.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const arrowUp = "\x1b[A"

func TestChatInteractiveTerminal(t *testing.T) {
	_, env := chatServer(t)
	histFile := filepath.Join(t.TempDir(), "state", "chat_history")
	env = append(env, "VEIL_CHAT_HISTORY="+histFile)
	plain := append(env, "NO_COLOR=1")

	tm := startTerm(t, plain, "chat", "chatter")
	tm.waitFor("Chatting with chatter.veil in a new conversation", 1)
	tm.waitFor("you> ", 1)
	tm.typeLine("/help")
	tm.waitFor("/quit (or Ctrl-D) leaves", 1)
	tm.typeLine("/id")
	tm.waitFor("(no conversation yet)", 1)
	// Home and End as tmux and screen send them (ESC [ 1 ~, ESC [ 4 ~):
	// "d", Home, "/i", End, Enter is /id.
	tm.typeLine("d" + "\x1b[1~" + "/i" + "\x1b[4~")
	tm.waitFor("(no conversation yet)", 2)

	tm.typeLine("what's my balance?")
	tm.waitFor("chatter> ", 1)
	if !strings.Contains(tm.out.String(), "chatter is working…") {
		t.Fatalf("no spinner while the agent worked:\n%s", tm.out.String())
	}
	tm.typeLine("/id")
	conv := tm.waitForRE(uuidRE)

	tm.typeLine("create an invoice for 7 USDC for stickers")
	tm.waitFor("chatter> ", 2)
	tm.typeLine("/history")
	tm.waitFor("] you> what's my balance?", 1)
	// Line editing: the up arrow recalls /history (not "^[[A").
	tm.typeLine(arrowUp)
	tm.waitFor("] you> what's my balance?", 2)
	out := tm.out.String()
	if strings.Contains(out, "✓ create_invoice") && !strings.Contains(out, "  pay  http") {
		t.Fatalf("invoice made but no pay link printed:\n%s", out)
	}
	if strings.Contains(out, "^[[A") || strings.Contains(out, "\x1b[32m") {
		t.Fatalf("raw escape or colour despite NO_COLOR:\n%q", out)
	}
	tm.typeLine("/quit")
	if code := tm.wait(); code != 0 {
		t.Fatalf("/quit: exit %d\n%s", code, tm.out.String())
	}
	// The history is kept, readable by its owner only.
	fi, err := os.Stat(histFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file %v %v", fi, err)
	}
	raw, _ := os.ReadFile(histFile)
	if !strings.Contains(string(raw), "what's my balance?") {
		t.Fatalf("history file: %q", raw)
	}
	// How many lines back /history is: whether the recalled /history and
	// /quit were kept as entries of their own is the line editor's choice,
	// so count them in the file rather than assume.
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	back := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "/history" {
			back = len(lines) - i
			break
		}
	}
	if back < 1 {
		t.Fatalf("history file has no /history: %q", raw)
	}

	// A new session recalls the last one's lines: up `back` times is
	// /history. Continue that conversation; Ctrl-D leaves with 0.
	tm = startTerm(t, plain, "chat", "chatter", "-c", conv)
	tm.waitFor("Chatting with chatter.veil in conversation "+conv, 1)
	tm.waitFor("you> ", 1)
	tm.typeLine(strings.Repeat(arrowUp, back))
	tm.waitFor("] you> what's my balance?", 1)
	tm.typeLine("hello again")
	tm.waitFor("chatter> ", 1)
	tm.waitForPrompt()
	// Ctrl-D typed ahead while the agent works (the terminal is not in
	// raw mode then) leaves once the answer is shown.
	tm.typeLine("what's my balance?")
	tm.waitFor("chatter is working", 2)
	if _, err := tm.pty.Write([]byte{4}); err != nil {
		t.Fatal(err)
	}
	tm.waitFor("chatter> ", 2)
	if code := tm.wait(); code != 0 {
		t.Fatalf("Ctrl-D: exit %d\n%s", code, tm.out.String())
	}

	// Colour on a terminal without NO_COLOR; Ctrl-C at the prompt leaves
	// with 130.
	tm = startTerm(t, env, "chat", "chatter")
	tm.waitFor("you>", 1)
	if !strings.Contains(tm.out.String(), "\x1b[36mchatter.veil") {
		t.Fatalf("no colour on a terminal:\n%q", tm.out.String())
	}
	if _, err := tm.pty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	if code := tm.wait(); code != exitInterrupted {
		t.Fatalf("Ctrl-C: exit %d\n%s", code, tm.out.String())
	}
}

func TestHomeEndKeys(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", "abc"},
		{"\x1b[1~x\x1b[4~", "\x1b[Hx\x1b[F"},
		{"\x1b[7~\x1b[8~", "\x1b[H\x1b[F"},
		{"\x1b[3~\x1b[A", "\x1b[3~\x1b[A"}, // Delete and Up pass unchanged
	} {
		h := &homeEndKeys{r: strings.NewReader(tc.in)}
		got, err := io.ReadAll(h)
		if err != nil || string(got) != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
