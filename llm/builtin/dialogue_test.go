package builtin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// One-turn money safety (issue 33): units convert exactly, corrections
// use the corrected amount, a bare number names no asset (the tools ask),
// an unknown unit word stops the payment, owner rules are explained,
// invoices keep their chain and expiry, a "test" memo is not the faucet.
func TestOneTurnMoneySafety(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // the calls as JSON, "" for none
		say  string // part of the answer when there is no call
	}{
		{"send 150 gwei to carol", `[{"tool":"send_payment","args":{"amount":"0.00000015","asset":"ETH","recipient":"carol"}}]`, ""},
		{"send 20 wei to bob", `[{"tool":"send_payment","args":{"amount":"0.00000000000000002","asset":"ETH","recipient":"bob"}}]`, ""},
		{"send 300 lamports to bob", `[{"tool":"send_payment","args":{"amount":"0.0000003","asset":"SOL","recipient":"bob"}}]`, ""},
		{"send 50 stroops to bob", `[{"tool":"send_payment","args":{"amount":"0.000005","asset":"XLM","recipient":"bob"}}]`, ""},
		{"send 5 cents to erin", `[{"tool":"send_payment","args":{"amount":"0.05","asset":"USDC","recipient":"erin"}}]`, ""},
		{"send 2k usdc to bob", `[{"tool":"send_payment","args":{"amount":"2000","asset":"USDC","recipient":"bob"}}]`, ""},
		{"send 5 to bob", `[{"tool":"send_payment","args":{"amount":"5","recipient":"bob"}}]`, ""},
		{"pay bob 5 euros", "", "I don't know the unit “euros”"},
		{"send 5 usdc to carol, no actually make it 6", `[{"tool":"send_payment","args":{"amount":"6","asset":"USDC","recipient":"carol"}}]`, ""},
		{"pay bob 5 USDC - sorry, I meant 8", `[{"tool":"send_payment","args":{"amount":"8","asset":"USDC","recipient":"bob"}}]`, ""},
		{"transfer 10 usdc to bob... scratch that, 15", `[{"tool":"send_payment","args":{"amount":"15","asset":"USDC","recipient":"bob"}}]`, ""},
		{"always ask me before paying more than 50 usdc", "", "confirmAbove"},
		{"never pay more than 100 usdc without asking me", "", "policy/preview"},
		{"what does 'send 5 usdc to bob' mean?", "", ""},
		{"alice: send 20 usdc to bob", "", ""},
		{"'pay bob 10 usdc' is what carol wrote", "", ""},
		{"create an invoice for 20 usdc on solana for hosting", `[{"tool":"create_invoice","args":{"amount":"20","asset":"USDC","chain":"solana","memo":"hosting"}}]`, ""},
		{"create an invoice for 30 usdc for design work, expires in 2 days", `[{"tool":"create_invoice","args":{"amount":"30","asset":"USDC","expires_in":"2d","memo":"design work"}}]`, ""},
		{"make an invoice for 10 usdc for hosting valid for a week", `[{"tool":"create_invoice","args":{"amount":"10","asset":"USDC","expires_in":"1w","memo":"hosting"}}]`, ""},
		{"invoice 5 usdc for test tokens", `[{"tool":"create_invoice","args":{"amount":"5","asset":"USDC","memo":"test tokens"}}]`, ""},
		{"what's my balnace", `[{"tool":"get_balance","args":{}}]`, ""},
		{"how much do i hav", `[{"tool":"get_balance","args":{}}]`, ""},
		{"withdraw 0.5 from the one-time address 0x1111111111111111111111111111111111111111 to 0xAbC0000000000000000000000000000000000001",
			`[{"tool":"withdraw","args":{"amount":"0.5","from":"0x1111111111111111111111111111111111111111","to":"0xAbC0000000000000000000000000000000000001"}}]`, ""},
	} {
		got, text := planCalls(t, tc.text)
		gj, _ := json.Marshal(got)
		if tc.want == "" && len(got) > 0 || tc.want != "" && !sameJSON(string(gj), tc.want) {
			t.Errorf("%q: calls %s, want %s", tc.text, gj, tc.want)
		}
		if tc.say != "" && !strings.Contains(text, tc.say) {
			t.Errorf("%q: answer %q does not say %q", tc.text, text, tc.say)
		}
	}
}

func sameJSON(a, b string) bool {
	var x, y any
	_ = json.Unmarshal([]byte(a), &x)
	_ = json.Unmarshal([]byte(b), &y)
	xj, _ := json.Marshal(x)
	yj, _ := json.Marshal(y)
	return string(xj) == string(yj)
}

// planWithState plans text with the conversation state the actor gives.
func planWithState(t *testing.T, state, text string) ([]wantJSON, string) {
	t.Helper()
	var tools []llms.Tool
	for _, n := range ToolNames {
		tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: n}})
	}
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "prompt")}
	if state != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, "state: "+stateOpen+state+stateClose))
	}
	msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, text))
	resp, err := New().GenerateContent(context.Background(), msgs, llms.WithTools(tools))
	if err != nil {
		t.Fatal(err)
	}
	var out []wantJSON
	for _, c := range resp.Choices[0].ToolCalls {
		var args map[string]any
		_ = json.Unmarshal([]byte(c.FunctionCall.Arguments), &args)
		out = append(out, wantJSON{Tool: c.FunctionCall.Name, Args: args})
	}
	return out, resp.Choices[0].Content
}

// Follow-ups read against the conversation state.
func TestFollowUps(t *testing.T) {
	paid := `{"last":{"tool":"send_payment","args":{"recipient":"bob","amount":"5","asset":"USDC"}},"people":["bob"],"assets":["USDC"]}`
	sched := `{"last":{"tool":"schedule_payment","args":{"recipient":"bob","amount":"5","asset":"USDC","interval":"weekly"},"id":"sch-1"}}`
	bal := `{"last":{"tool":"get_balance","args":{}}}`
	pending := `{"pending":{"tool":"send_payment","args":{"recipient":"bob","amount":"5"},"what":"send 5 ETH to bob on ethereum"}}`
	who := `{"last":{"tool":"resolve_name","args":{"name":"bob"}},"people":["bob"]}`
	for _, tc := range []struct {
		state, text, want, say string
	}{
		{paid, "again", `[{"tool":"send_payment","args":{"recipient":"bob","amount":"5","asset":"USDC"}}]`, ""},
		{paid, "do it again", `[{"tool":"send_payment","args":{"recipient":"bob","amount":"5","asset":"USDC"}}]`, ""},
		{paid, "the same to carol", `[{"tool":"send_payment","args":{"recipient":"carol","amount":"5","asset":"USDC"}}]`, ""},
		{paid, "and on solana?", `[{"tool":"send_payment","args":{"recipient":"bob","amount":"5","asset":"USDC","chain":"solana"}}]`, ""},
		{paid, "undo that", "", "can't be undone"},
		{sched, "cancel that", `[{"tool":"manage_schedule","args":{"schedule_id":"sch-1","action":"cancel"}}]`, ""},
		{bal, "what about base?", `[{"tool":"get_balance","args":{"chain":"base"}}]`, ""},
		{pending, "usdc", `[{"tool":"send_payment","args":{"recipient":"bob","amount":"5","asset":"USDC"}}]`, ""},
		{pending, "make it 7 usdc", `[{"tool":"send_payment","args":{"recipient":"bob","amount":"7","asset":"USDC"}}]`, ""},
		{who, "send him 5 usdc", `[{"tool":"send_payment","args":{"recipient":"bob","amount":"5","asset":"USDC"}}]`, ""},
		{"", "again", "", ""},
		{"", "yes", "", "nothing waiting for your confirmation"},
	} {
		got, text := planWithState(t, tc.state, tc.text)
		gj, _ := json.Marshal(got)
		if tc.want == "" && len(got) > 0 || tc.want != "" && !sameJSON(string(gj), tc.want) {
			t.Errorf("%s / %q: calls %s, want %s", tc.state, tc.text, gj, tc.want)
		}
		if tc.say != "" && !strings.Contains(text, tc.say) {
			t.Errorf("%q: answer %q does not say %q", tc.text, text, tc.say)
		}
	}
}

// The confirming question states exactly what would be paid; schedule
// confirmations read as words.
func TestConfirmAndScheduleWording(t *testing.T) {
	q, ok := confirmQuestion("needs the user's confirmation (the user did not say which asset; ETH is ethereum's own coin): nothing has been sent yet; ask the user to confirm exactly this, and it runs on their yes; to confirm: send 5 ETH to bob.veil on ethereum")
	if !ok || !strings.Contains(q, "should I send 5 ETH to bob.veil on ethereum?") || !strings.Contains(q, "you didn't say which asset") {
		t.Errorf("confirmQuestion = %q", q)
	}
	for iv, want := range map[string]string{"monday": "every monday", "every-6-hours": "every 6 hours", "weekly": "every week"} {
		s := scheduleText(map[string]any{"amount": "5", "asset": "USDC", "recipient": "bob", "interval": iv}, nil)
		if !strings.Contains(s, want) || strings.Contains(s, "every-") || strings.Contains(s, "bob "+iv) {
			t.Errorf("interval %s: %q", iv, s)
		}
	}
}
