package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/veilhq/veil/llm"
	"github.com/veilhq/veil/llm/builtin"
	"github.com/veilhq/veil/llm/llmtest"
)

func testTools() []llms.Tool {
	out := make([]llms.Tool, 0, len(builtin.ToolNames))
	for _, n := range builtin.ToolNames {
		out = append(out, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: n, Description: "the " + n + " tool",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}},
		}})
	}
	return out
}

var errCap = errors.New("cap of 10 model calls reached")

// runLoop is the loop contract of the package doc, as the chat loop
// implements it: call the model, run every tool call, send all results
// back in one turn, at most 10 model calls.
func runLoop(ctx context.Context, model llms.Model, msgs []llms.MessageContent, exec func(llms.ToolCall) (string, string)) (string, int, error) {
	for n := 1; n <= 10; n++ {
		resp, err := model.GenerateContent(ctx, msgs, llms.WithTools(testTools()))
		if err != nil {
			return "", n, err
		}
		text, calls := llm.Reply(resp)
		if len(calls) == 0 {
			return text, n, nil
		}
		msgs = append(msgs, llm.AssistantMessage(text, calls))
		for _, c := range calls {
			status, detail := exec(c)
			msgs = append(msgs, llm.ToolMessage(c, llm.ResultContent(c.FunctionCall.Name, status, detail)))
		}
	}
	return "", 10, errCap
}

func conversation(user string) []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are alice.veil, a Veil agent."),
		llms.TextParts(llms.ChatMessageTypeSystem, "Memories:\n- prefers USDC"),
		llms.TextParts(llms.ChatMessageTypeHuman, "hi"),
		llms.TextParts(llms.ChatMessageTypeAI, "Hello! How can I help?"),
		llms.TextParts(llms.ChatMessageTypeHuman, user),
	}
}

// echoExec answers every call with a result naming it; a call with
// malformed arguments gets an error result, as the chat loop does.
func echoExec(c llms.ToolCall) (string, string) {
	var args map[string]any
	if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &args); err != nil {
		d, _ := json.Marshal(map[string]string{"error": "arguments are not valid JSON: " + err.Error()})
		return llm.StatusError, string(d)
	}
	d, _ := json.Marshal(map[string]any{"tool": c.FunctionCall.Name, "id": c.ID})
	return llm.StatusSuccess, string(d)
}

type provider struct {
	name   llm.Provider
	server func(testing.TB, llmtest.Script, ...llmtest.Option) *llmtest.Server
	config func(url string) llm.Config
}

var providers = []provider{
	{llm.OpenAI, llmtest.NewOpenAIServer, func(u string) llm.Config { return llm.Config{OpenAIBaseURL: u} }},
	{llm.Anthropic, llmtest.NewAnthropicServer, func(u string) llm.Config { return llm.Config{AnthropicBaseURL: u} }},
}

// Several tool calls in one response (Anthropic with text before them);
// the second request must carry every result, in one turn, and each
// provider's protocol rules must hold (the fake servers enforce them).
func TestProvidersToolLoop(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p.name), func(t *testing.T) {
			srv := p.server(t, llmtest.Script{
				{Text: "Let me check a few things.", ToolCalls: []llmtest.ToolCall{
					llmtest.Call("get_balance", `{"chain":"base"}`),
					llmtest.Call("scan_payments", `{}`),
					llmtest.Call("send_payment", `{"recipient":"bob","amount":"0.5","asset":"USDC"}`),
				}},
				llmtest.Calls(llmtest.Call("check_invoices", `{}`)),
				llmtest.Text("You have 1 ETH; sent 0.5 USDC to bob."),
			})
			model, err := p.config(srv.URL).Model(p.name, srv.Key)
			if err != nil {
				t.Fatal(err)
			}
			var ran []llms.ToolCall
			answer, n, err := runLoop(context.Background(), model, conversation("check my balance, scan and pay bob 0.5 USDC"),
				func(c llms.ToolCall) (string, string) { ran = append(ran, c); return echoExec(c) })
			if err != nil {
				t.Fatal(err)
			}
			if answer != "You have 1 ETH; sent 0.5 USDC to bob." || n != 3 {
				t.Errorf("answer %q after %d calls", answer, n)
			}
			if len(ran) != 4 {
				t.Fatalf("ran %d tools, want 4", len(ran))
			}
			for _, c := range ran {
				if c.ID == "" || c.Type != "function" || !json.Valid([]byte(c.FunctionCall.Arguments)) {
					t.Errorf("call not normalised: %+v", c)
				}
			}
			if ran[2].FunctionCall.Name != "send_payment" || !strings.Contains(ran[2].FunctionCall.Arguments, `"amount":"0.5"`) {
				t.Errorf("third call %s %s", ran[2].FunctionCall.Name, ran[2].FunctionCall.Arguments)
			}

			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			for i, r := range reqs {
				if r.Problem != "" {
					t.Errorf("request %d rejected: %s", i, r.Problem)
				}
				if len(r.Tools) != len(builtin.ToolNames) {
					t.Errorf("request %d offered %d tools", i, len(r.Tools))
				}
				if !strings.Contains(r.System, "You are alice.veil") || !strings.Contains(r.System, "prefers USDC") {
					t.Errorf("request %d system prompt %q", i, r.System)
				}
			}
			want := map[llm.Provider]string{llm.OpenAI: llm.DefaultOpenAIModel, llm.Anthropic: llm.DefaultAnthropicModel}[p.name]
			if reqs[0].Model != want {
				t.Errorf("model %q, want %q", reqs[0].Model, want)
			}
			if got := reqs[0].ToolResults(); len(got) != 0 {
				t.Errorf("first request carries results %v", got)
			}
			results := reqs[1].ToolResults()
			if len(results) != 3 {
				t.Fatalf("second request carries %d tool results, want 3: %+v", len(results), reqs[1].Messages)
			}
			for i, res := range results {
				if res.ID != ran[i].ID {
					t.Errorf("result %d answers %s, want %s", i, res.ID, ran[i].ID)
				}
				var tr llm.ToolResult
				if err := json.Unmarshal([]byte(res.Content), &tr); err != nil || tr.Status != llm.StatusSuccess || tr.Name != ran[i].FunctionCall.Name || !strings.Contains(tr.Detail, ran[i].ID) {
					t.Errorf("result %d content %q (%v)", i, res.Content, err)
				}
			}
			// The assistant turn was sent back whole: its text and all three calls.
			var assistant *llmtest.Message
			for i := range reqs[1].Messages {
				if reqs[1].Messages[i].Role == "assistant" && len(reqs[1].Messages[i].ToolCalls) > 0 {
					assistant = &reqs[1].Messages[i]
				}
			}
			if assistant == nil || len(assistant.ToolCalls) != 3 || assistant.Text != "Let me check a few things." {
				t.Errorf("assistant turn sent back as %+v", assistant)
			}
			if got := reqs[2].ToolResults(); len(got) != 1 || got[0].ID != ran[3].ID {
				t.Errorf("third request results %+v", got)
			}
		})
	}
}

func TestProvidersUsage(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p.name), func(t *testing.T) {
			srv := p.server(t, llmtest.Script{{Text: "hi", InputTokens: 42, OutputTokens: 7}})
			model, _ := p.config(srv.URL).Model(p.name, srv.Key)
			resp, err := model.GenerateContent(context.Background(), conversation("hello"))
			if err != nil {
				t.Fatal(err)
			}
			if in, out := llm.Usage(resp); in != 42 || out != 7 {
				t.Errorf("usage %d/%d", in, out)
			}
			if len(resp.Choices) != 1 || resp.Choices[0].Content != "hi" {
				t.Errorf("response %+v", resp.Choices)
			}
		})
	}
}

// Malformed arguments come back as they are (OpenAI models produce them);
// the loop answers them with an error result and both providers accept
// the next request.
func TestProvidersMalformedArguments(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p.name), func(t *testing.T) {
			srv := p.server(t, llmtest.Script{
				llmtest.Calls(llmtest.Call("send_payment", `{"amount": 5,`), llmtest.Call("get_balance", `{}`)),
				llmtest.Text("Sorry, let me fix that."),
			})
			model, _ := p.config(srv.URL).Model(p.name, srv.Key)
			var statuses []string
			_, _, err := runLoop(context.Background(), model, conversation("pay"), func(c llms.ToolCall) (string, string) {
				st, d := echoExec(c)
				statuses = append(statuses, st)
				return st, d
			})
			if err != nil {
				t.Fatal(err)
			}
			// Anthropic's input is always an object (the fake sends {} for
			// broken text), so only OpenAI can return malformed arguments.
			want := map[llm.Provider]string{llm.OpenAI: "error success", llm.Anthropic: "success success"}[p.name]
			if got := strings.Join(statuses, " "); got != want {
				t.Errorf("statuses %q, want %q", got, want)
			}
			if res := srv.Requests()[1].ToolResults(); len(res) != 2 {
				t.Errorf("second request carries %d results", len(res))
			}
		})
	}
}

// A conversation whose history holds a call with malformed arguments (or
// text around calls, several results in one tool message, several system
// messages) is still sent correctly to Anthropic.
func TestAnthropicHistoryShapes(t *testing.T) {
	srv := llmtest.NewAnthropicServer(t, llmtest.Script{llmtest.Text("ok")})
	model, _ := llm.Config{AnthropicBaseURL: srv.URL}.Model(llm.Anthropic, srv.Key)
	c1 := llms.ToolCall{ID: "call_a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "send_payment", Arguments: `{"amount": 5,`}}
	c2 := llms.ToolCall{ID: "call_b", FunctionCall: &llms.FunctionCall{Name: "get_balance", Arguments: ""}}
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "one"),
		llms.TextParts(llms.ChatMessageTypeHuman, "pay and check"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: "On it."}, c1, llms.TextContent{Text: ""}, c2}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_a", Content: `{"name":"send_payment","status":"error","detail":"{}"}`},
			llms.ToolCallResponse{ToolCallID: "call_b", Content: `{"name":"get_balance","status":"success","detail":"{}"}`},
		}},
		llms.TextParts(llms.ChatMessageTypeSystem, "two"),
	}
	resp, err := model.GenerateContent(context.Background(), msgs, llms.WithTools(testTools()))
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := llm.Reply(resp); text != "ok" {
		t.Errorf("reply %q", text)
	}
	r := srv.Requests()[0]
	if r.System != "one\n\ntwo" {
		t.Errorf("system %q", r.System)
	}
	if len(r.Messages) != 3 || len(r.Messages[1].ToolCalls) != 2 || r.Messages[1].ToolCalls[0].Arguments != "{}" || len(r.ToolResults()) != 2 {
		t.Errorf("messages %+v", r.Messages)
	}
}

func TestProviderErrorsNeverShowTheKey(t *testing.T) {
	const key = "sk-caller-secret-0123456789abcdef"
	for _, p := range providers {
		t.Run(string(p.name)+"/401", func(t *testing.T) {
			srv := p.server(t, nil, llmtest.WithKey("sk-the-right-one"), llmtest.Lenient())
			model, _ := p.config(srv.URL).Model(p.name, key)
			_, err := model.GenerateContent(context.Background(), conversation("hi"))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != http.StatusUnauthorized || pe.HTTPStatus() != http.StatusBadGateway {
				t.Fatalf("error %v (%T)", err, err)
			}
			if !llm.IsProviderError(err) || !errors.Is(err, llm.ErrProvider) || llm.IsRequestError(err) {
				t.Error("classification")
			}
			msg := err.Error()
			if strings.Contains(msg, key) || strings.Contains(msg, "secret") || strings.Contains(msg, "0123456789") {
				t.Errorf("key in error: %q", msg)
			}
			if !strings.Contains(msg, "rejected the API key") || !strings.Contains(msg, "401") {
				t.Errorf("unclear message %q", msg)
			}
			if got := srv.Requests()[0]; !strings.Contains(got.Header.Get("Authorization")+got.Header.Get("X-Api-Key"), key) {
				t.Error("the caller's key was not sent")
			}
		})
		t.Run(string(p.name)+"/5xx", func(t *testing.T) {
			srv := p.server(t, llmtest.Script{llmtest.Fail(503, "overloaded; your key "+llmtest.DefaultKey+" is fine")})
			model, _ := p.config(srv.URL).Model(p.name, srv.Key)
			_, err := model.GenerateContent(context.Background(), conversation("hi"))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || pe.Status != 503 {
				t.Fatalf("error %v", err)
			}
			if msg := err.Error(); strings.Contains(msg, llmtest.DefaultKey) || !strings.Contains(msg, "overloaded") || !strings.Contains(msg, "[redacted]") {
				t.Errorf("message %q", msg)
			}
		})
		t.Run(string(p.name)+"/429", func(t *testing.T) {
			srv := p.server(t, llmtest.Script{llmtest.Fail(429, "slow down")})
			model, _ := p.config(srv.URL).Model(p.name, srv.Key)
			_, err := model.GenerateContent(context.Background(), conversation("hi"))
			if !llm.IsProviderError(err) || !strings.Contains(err.Error(), "rate limiting") {
				t.Errorf("error %v", err)
			}
		})
	}
}

func TestProviderTimeout(t *testing.T) {
	for _, p := range providers {
		t.Run(string(p.name), func(t *testing.T) {
			srv := p.server(t, llmtest.Script{{Text: "late", Delay: 10 * time.Second}})
			cfg := p.config(srv.URL)
			cfg.Timeout = 300 * time.Millisecond
			model, _ := cfg.Model(p.name, srv.Key)
			start := time.Now()
			_, err := model.GenerateContent(context.Background(), conversation("hi"))
			var pe *llm.ProviderError
			if !errors.As(err, &pe) || !pe.Timeout || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v", err)
			}
			if !strings.Contains(err.Error(), "did not answer within 300ms") {
				t.Errorf("message %q", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// The caller giving up is not the provider's fault.
func TestCallerCancelIsNotAProviderError(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t, llmtest.Script{{Text: "late", Delay: 10 * time.Second}})
	model, _ := llm.Config{OpenAIBaseURL: srv.URL}.Model(llm.OpenAI, srv.Key)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := model.GenerateContent(ctx, conversation("hi"))
	if !errors.Is(err, context.DeadlineExceeded) || llm.IsProviderError(err) {
		t.Errorf("error %v", err)
	}
}

func TestProviderUnreachable(t *testing.T) {
	addr := refusingAddr(t)
	model, _ := llm.Config{AnthropicBaseURL: "http://" + addr + "/v1"}.Model(llm.Anthropic, "sk-x")
	_, err := model.GenerateContent(context.Background(), conversation("hi"))
	if !llm.IsProviderError(err) || !strings.Contains(err.Error(), "Anthropic could not be reached") {
		t.Errorf("error %v", err)
	}
}

func TestParseProvider(t *testing.T) {
	for in, want := range map[string]llm.Provider{
		"": llm.Veil, "veil": llm.Veil, " VEIL ": llm.Veil, "openai": llm.OpenAI, "OpenAI": llm.OpenAI,
		"anthropic": llm.Anthropic, "Claude": llm.Anthropic,
	} {
		if got, err := llm.ParseProvider(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	_, err := llm.ParseProvider("gemini")
	var re *llm.RequestError
	if !errors.As(err, &re) || re.HTTPStatus() != http.StatusBadRequest || !errors.Is(err, llm.ErrUnknownProvider) {
		t.Fatalf("error %v", err)
	}
	for _, w := range []string{`"gemini"`, "veil", "openai", "anthropic", "claude"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %s", err, w)
		}
	}
}

func TestModelKeys(t *testing.T) {
	var cfg llm.Config
	for _, p := range []llm.Provider{llm.OpenAI, llm.Anthropic} {
		_, err := cfg.Model(p, "  ")
		if !llm.IsRequestError(err) || !errors.Is(err, llm.ErrMissingKey) || !strings.Contains(err.Error(), "X-AI-Key is required") {
			t.Errorf("%s without key: %v", p, err)
		}
	}
	m, err := cfg.Model(llm.Veil, "sk-ignored")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*builtin.Model); !ok {
		t.Errorf("veil without a hosted URL is %T", m)
	}
	if _, err := cfg.Model("mistral", "k"); !errors.Is(err, llm.ErrUnknownProvider) {
		t.Errorf("unknown provider: %v", err)
	}
	if m, err := cfg.Model("Claude", "k"); err != nil || m == nil {
		t.Errorf("alias as Provider: %v", err)
	}
}

// The hosted default can be any OpenAI-compatible endpoint; it gets the
// configured key (or none), never the caller's, and the environment of
// langchaingo (OPENAI_*) is never read.
func TestHostedEndpoint(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORGANIZATION", "org-env")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")

	srv := llmtest.NewOpenAIServer(t, llmtest.Script{llmtest.Text("a"), llmtest.Text("b")}, llmtest.WithKey("none"))
	m, err := llm.Config{HostedURL: srv.URL, HostedModel: "llama3.1"}.Model(llm.Veil, "sk-caller")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GenerateContent(context.Background(), conversation("hi")); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	if r.Model != "llama3.1" || r.Header.Get("Authorization") != "Bearer none" || r.Header.Get("OpenAI-Organization") != "" {
		t.Errorf("hosted request: model %q auth %q org %q", r.Model, r.Header.Get("Authorization"), r.Header.Get("OpenAI-Organization"))
	}

	srv2 := llmtest.NewOpenAIServer(t, llmtest.Script{llmtest.Text("a")}, llmtest.WithKey("hosted-key"))
	m, _ = llm.Config{HostedURL: srv2.URL, HostedModel: "m", HostedKey: "hosted-key"}.Model(llm.Veil, "")
	if _, err := m.GenerateContent(context.Background(), conversation("hi")); err != nil {
		t.Fatal(err)
	}

	// Caller-keyed openai: the caller's key and our base URL, not the env's.
	srv3 := llmtest.NewOpenAIServer(t, llmtest.Script{llmtest.Text("a")}, llmtest.WithKey("sk-caller"))
	m, _ = llm.Config{OpenAIBaseURL: srv3.URL}.Model(llm.OpenAI, "sk-caller")
	if _, err := m.GenerateContent(context.Background(), conversation("hi")); err != nil {
		t.Fatal(err)
	}
	if org := srv3.Requests()[0].Header.Get("OpenAI-Organization"); org != "" {
		t.Errorf("organization %q from the environment was sent", org)
	}
}

func TestConfig(t *testing.T) {
	env := map[string]string{"VEIL_MODEL_URL": "http://localhost:11434/v1", "VEIL_MODEL_NAME": "llama3.1", "VEIL_MODEL_TIMEOUT": "90s"}
	cfg, err := llm.FromEnv(func(k string) string { return env[k] })
	if err != nil || cfg.HostedURL != env["VEIL_MODEL_URL"] || cfg.Timeout != 90*time.Second || cfg.HostedName() != "llama3.1 at http://localhost:11434/v1" {
		t.Errorf("%+v %v", cfg, err)
	}
	for _, bad := range []map[string]string{
		{"VEIL_MODEL_URL": "http://x"},
		{"VEIL_MODEL_NAME": "m"},
		{"VEIL_MODEL_URL": "localhost:1", "VEIL_MODEL_NAME": "m"},
		{"VEIL_MODEL_TIMEOUT": "soon"},
	} {
		if _, err := llm.FromEnv(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if (llm.Config{}).HostedName() != "builtin" {
		t.Error("HostedName")
	}
}

// The builtin planner through the same loop: plan, results, answer.
func TestBuiltinThroughTheLoop(t *testing.T) {
	model, _ := llm.Config{Now: func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }}.Model(llm.Veil, "")
	answer, n, err := runLoop(context.Background(), model, conversation("pay alice.veil 10 XLM and create an invoice for 25 USDC for the logo work"),
		func(c llms.ToolCall) (string, string) {
			switch c.FunctionCall.Name {
			case "pay_agent":
				return llm.StatusSuccess, `{"txHash":"0xfeed","txLink":"https://stellar.expert/tx/0xfeed","amount":"10","asset":"XLM","chain":"stellar","recipient":"alice.veil"}`
			case "create_invoice":
				return llm.StatusSuccess, `{"id":"inv1","amount":"25","asset":"USDC","memo":"the logo work","status":"pending","paymentLink":"https://veil.example/pay/inv1"}`
			}
			return llm.StatusError, `{"error":"unexpected"}`
		})
	if err != nil || n != 2 {
		t.Fatalf("%d calls: %v", n, err)
	}
	for _, w := range []string{"Sent 10 XLM to alice.veil on stellar. Transaction 0xfeed: https://stellar.expert/tx/0xfeed", "https://veil.example/pay/inv1"} {
		if !strings.Contains(answer, w) {
			t.Errorf("answer lacks %q:\n%s", w, answer)
		}
	}
}

// llmtest supports a model that never stops calling tools (the chat
// loop's cap test).
func TestNeverEndingModel(t *testing.T) {
	srv := llmtest.NewOpenAIServer(t, nil, llmtest.WithNext(func(i int, _ llmtest.Request) llmtest.Reply {
		return llmtest.Calls(llmtest.Call("scan_payments", `{}`))
	}))
	model, _ := llm.Config{OpenAIBaseURL: srv.URL}.Model(llm.OpenAI, srv.Key)
	_, n, err := runLoop(context.Background(), model, conversation("scan forever"), echoExec)
	if !errors.Is(err, errCap) || n != 10 || srv.Count() != 10 {
		t.Errorf("n=%d requests=%d err=%v", n, srv.Count(), err)
	}
}

func TestRedact(t *testing.T) {
	const key = "sk-proj-AbCdEfGh12345678"
	for in, want := range map[string]string{
		"bad key " + key + ".":                            "bad key [redacted].",
		"Incorrect API key provided: sk-pr**********5678": "Incorrect API key provided: [redacted]",
		"key AbCdEfGh123 is wrong":                        "key [redacted] is wrong",
		"model gpt-4o-mini not found":                     "model gpt-4o-mini not found",
	} {
		if got := llm.Redact(in, key); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// refusingAddr is a loopback address that refuses connections for the whole
// test: a socket bound to it and never listening holds the port, so no
// other process can take it (a listener closed and its port reused could
// be anyone's by then).
func refusingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
