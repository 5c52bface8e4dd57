package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
)

var designOrder = []string{
	"send_payment", "pay_agent", "scan_payments", "get_balance", "create_invoice", "check_invoices",
	"resolve_name", "register_name", "get_agent_info", "withdraw", "withdraw_all", "privacy_check",
	"fund_wallet", "schedule_payment", "list_schedules", "manage_schedule", "save_memory", "pay_invoice", "fetch_paid",
	"payment_history", "cancel_invoice",
}

// readOnly is the set of tools that only read (Tool.ReadOnly): a change
// to it is a change to what a chat makes durable before its tools run, so
// it is spelled out here.
var readOnly = map[string]bool{
	"get_balance": true, "check_invoices": true, "resolve_name": true, "get_agent_info": true,
	"privacy_check": true, "list_schedules": true, "payment_history": true,
}

// A tool that reads only never moves value: the chat loop stores nothing
// before it runs, which only a tool with no effect allows.
func TestReadOnlyToolsMoveNoValue(t *testing.T) {
	for _, tl := range All() {
		if tl.ReadOnly && (tl.MovesValue || tl.Payment) {
			t.Errorf("%s is ReadOnly and moves value", tl.Name)
		}
	}
}

func TestAllToolsAndSchemas(t *testing.T) {
	all := All()
	if len(all) != 21 {
		t.Fatalf("%d tools, want 21", len(all))
	}
	payment := map[string]bool{"send_payment": true, "pay_agent": true, "withdraw": true, "withdraw_all": true, "pay_invoice": true, "fetch_paid": true}
	for i, tl := range all {
		if tl.Name != designOrder[i] {
			t.Errorf("tool %d is %s, want %s", i, tl.Name, designOrder[i])
		}
		if got, ok := ByName(tl.Name); !ok || got.Name != tl.Name {
			t.Errorf("ByName(%s) failed", tl.Name)
		}
		if tl.Payment != payment[tl.Name] {
			t.Errorf("%s: Payment = %v", tl.Name, tl.Payment)
		}
		if tl.ReadOnly != readOnly[tl.Name] {
			t.Errorf("%s: ReadOnly = %v", tl.Name, tl.ReadOnly)
		}
		if len(tl.Description) < 40 || tl.Run == nil {
			t.Errorf("%s: description too short or no Run", tl.Name)
		}
		s := tl.Parameters
		if s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: schema %v", tl.Name, s)
		}
		props := s["properties"].(map[string]any)
		for _, r := range s["required"].([]string) {
			if _, ok := props[r]; !ok {
				t.Errorf("%s: required %s is not a property", tl.Name, r)
			}
		}
		for name, p := range props {
			pm := p.(map[string]any)
			if pm["description"] == "" || (pm["type"] != "string" && pm["type"] != "integer") {
				t.Errorf("%s.%s: %v", tl.Name, name, pm)
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("%s: schema does not marshal: %v", tl.Name, err)
		}
	}
	if _, ok := ByName("nope"); ok {
		t.Error("ByName(nope) found a tool")
	}
	// Enums where they exist.
	sched, _ := ByName("manage_schedule")
	action := sched.Parameters["properties"].(map[string]any)["action"].(map[string]any)
	if !reflect.DeepEqual(action["enum"], []string{"pause", "resume", "cancel"}) {
		t.Errorf("action enum %v", action["enum"])
	}
}

func TestDecodeStrict(t *testing.T) {
	s := spec{
		{name: "amount", required: true, maxLen: 10, example: "0.5", desc: "amount"},
		{name: "interval", enum: []string{"daily", "weekly"}, desc: "interval"},
		{name: "importance", kind: kInt, min: 1, max: 5, desc: "importance"},
		{name: "content", multiline: true, desc: "content"},
	}
	cases := []struct {
		args, wantErr string
	}{
		{`{"amount":"1"}`, ""},
		{`  {"amount":"1","interval":"Weekly","importance":5,"content":"a\nb"}  `, ""},
		{`{"amount":"1","interval":null}`, ""},
		{``, `missing required argument "amount"`},
		{`{}`, `missing required argument "amount"`},
		{`{"amount":null}`, `missing required argument "amount"`},
		{`{"amount":1}`, `argument "amount" must be a string such as "0.5", got a number`},
		{`{"amount":true}`, `must be a string such as "0.5", got a boolean`},
		{`{"amount":["1"]}`, `got an array`},
		{`{"amount":{"v":1}}`, `got an object`},
		{`{"amount":"1","amonut":"2"}`, `unknown argument "amonut"; with required amount and optional interval, importance, content`},
		{`{"amount":"1","amount":"2"}`, `argument "amount" is given twice`},
		{`{"amount":"12345678901"}`, `argument "amount" has 11 characters; the limit is 10`},
		{`{"amount":"1\u0007"}`, `argument "amount" contains a control character`},
		{`{"amount":"1","content":"a\u0000"}`, `argument "content" contains a control character`},
		{`{"amount":"1","interval":"hourly"}`, `argument "interval" must be one of daily, weekly; got "hourly"`},
		{`{"amount":"1","importance":"3"}`, `argument "importance" must be an integer from 1 to 5, got a string`},
		{`{"amount":"1","importance":3.5}`, `must be a whole number from 1 to 5, got 3.5`},
		{`{"amount":"1","importance":6}`, `argument "importance" must be from 1 to 5, got 6`},
		{`{"amount":"1","importance":0}`, `must be from 1 to 5, got 0`},
		{`{"amount":"1","importance":1e400}`, `whole number`},
		{`[]`, `arguments must be a JSON object`},
		{`"x"`, `arguments must be a JSON object`},
		{`null`, `arguments must be a JSON object`},
		{`{"amount":"1"} {}`, `nothing after it`},
		{`{"amount":"1"`, `not valid JSON`},
		{`{"amount":"1",}`, `not valid JSON`},
		{`{"amount":"` + strings.Repeat("x", MaxArgsBytes) + `"}`, `the limit is 8192`},
	}
	for _, c := range cases {
		a, err := s.decode(json.RawMessage(c.args))
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("decode(%s): %v", c.args, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) || !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("decode(%s) = %v, %v; want error containing %q", c.args, a, err, c.wantErr)
		}
	}
	a, err := s.decode(json.RawMessage(`{"amount":"1","interval":"Weekly"}`))
	if err != nil || a.str("interval") != "weekly" || a.int("importance", 3) != 3 || a.has("content") {
		t.Errorf("decoded %+v, %v", a, err)
	}
	if got := (spec{}).takes(); !strings.Contains(got, "takes no arguments") {
		t.Error(got)
	}
	if _, err := noArgs.decode(json.RawMessage(`{"x":1}`)); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("no-arg tool: %v", err)
	}
}

func TestNumbersInAndRestatement(t *testing.T) {
	cases := []struct {
		text, amount string
		want         bool
	}{
		{"send 0.5 USDC to bob", "0.5", true},
		{"send .5 USDC to bob", "0.5", true},
		{"send 0.50 USDC to bob", "0.5", true},
		{"send 0.5 USDC to bob", "0.50", true},
		{"pay bob 1,250.00 USDC", "1250", true},
		{"pay bob $5.", "5", true},
		{"pay bob 5usdc", "5", true},
		{"pay bob 5, carol 6", "6", true},
		{"pay bob 10k", "10", false},
		{"pay bob 0x5f", "5", false},
		{"pay st:eth:0x02ab12 1 ETH", "12", false},
		{"pay abc12 something", "12", false},
		{"pay bob five USDC", "5", true},
		{"pay bob 1.2.3", "1.2", false},
		{"send 50 USDC", "5", false},
		{"send 5 USDC", "50", false},
		{"", "1", false},
		{"1", "1", true},
		{"send ５ USDC", "5", false},
	}
	for _, c := range cases {
		if got := mentionsAmount(c.text, c.amount); got != c.want {
			t.Errorf("mentionsAmount(%q, %q) = %v", c.text, c.amount, got)
		}
	}
	env := &Env{UserText: "withdraw to 0xAbC0000000000000000000000000000000000001 please"}
	if err := requireAddressStated(env, "withdraw", "0xabc0000000000000000000000000000000000001"); err != nil {
		t.Errorf("EVM address case-insensitive: %v", err)
	}
	if err := requireAddressStated(env, "withdraw", "GABC"); !errors.Is(err, ErrNotConfirmed) {
		t.Errorf("missing address: %v", err)
	}
}

func TestParseAmount(t *testing.T) {
	usdc := Asset{Symbol: "USDC", Decimals: 6}
	ok := map[string]string{"1": "1", "0.50": "0.5", ".5": "0.5", "1.000000": "1", "1000000.000001": "1000000.000001"}
	for in, want := range ok {
		if got, err := ParseAmount(in, usdc); err != nil || got != want {
			t.Errorf("ParseAmount(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "-1", "1e6", "1.0000001", "1,5", " 1", "NaN", "Inf", "0x10", strings.Repeat("9", MaxAmountLen+1)} {
		if _, err := ParseAmount(in, usdc); !errors.Is(err, chains.ErrInvalidAmount) {
			t.Errorf("ParseAmount(%q) = %v; want ErrInvalidAmount", in, err)
		}
	}
	// Decimals per chain and asset (docs/tools.md).
	want := map[chains.ID]map[string]int{
		chains.Horizen:  {"ZEN": 18, "USDC": 6},
		chains.Ethereum: {"ETH": 18, "USDC": 6, "ZEN": 18},
		chains.Polygon:  {"POL": 18, "USDC": 6, "ZEN": 18},
		chains.Base:     {"ETH": 18, "USDC": 6, "ZEN": 18},
		chains.Stellar:  {"XLM": 7, "USDC": 7},
		chains.Solana:   {"SOL": 9, "USDC": 6},
	}
	for c, m := range want {
		as := Assets(c)
		if len(as) != len(m) || !as[0].Native || as[0].Symbol != c.NativeAsset() {
			t.Errorf("%s: %v", c, as)
		}
		for sym, d := range m {
			a, err := LookupAsset(c, strings.ToLower(sym))
			if err != nil || a.Decimals != d {
				t.Errorf("%s %s: %v %v", c, sym, a, err)
			}
		}
	}
	if _, err := LookupAsset(chains.Stellar, "ETH"); !errors.Is(err, chains.ErrUnknownAsset) || !strings.Contains(err.Error(), "XLM, USDC") {
		t.Errorf("unknown asset: %v", err)
	}
}

func TestParseAddress(t *testing.T) {
	good := map[chains.ID][]string{
		chains.Base:    {"0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0X5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED"},
		chains.Stellar: {xlmAddr("x")},
		chains.Solana:  {solAddr("x")},
	}
	for c, as := range good {
		for _, a := range as {
			got, err := ParseAddress(c, a)
			if err != nil {
				t.Errorf("ParseAddress(%s, %s): %v", c, a, err)
			}
			if c == chains.Base && got != "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" {
				t.Errorf("checksum form %s", got)
			}
		}
	}
	bad := map[chains.ID][]string{
		chains.Base:    {"", "0x", "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", "0x0000000000000000000000000000000000000000", "0xzzaeb6053f3e94c9b9a09f33669435e7ef1beaed", xlmAddr("x")},
		chains.Stellar: {"", "G123", strings.Replace(xlmAddr("x"), "A", "B", 1), solAddr("x"), "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"},
		chains.Solana:  {"", "0OIl", xlmAddr("x"), "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "11111111111111111111111111111111111"},
	}
	for c, as := range bad {
		for _, a := range as {
			if _, err := ParseAddress(c, a); !errors.Is(err, chains.ErrInvalidAddress) {
				t.Errorf("ParseAddress(%s, %q) = %v; want ErrInvalidAddress", c, a, err)
			}
		}
	}
}

// errCase is one expected error of a tool call.
type errCase struct {
	name, text, args string
	want             string // substring of the error
	is               error  // optional sentinel
	setup            func(f *fixture)
}

func runErrCases(t *testing.T, tool string, cases []errCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.setup != nil {
				c.setup(f)
			}
			res, err := f.run(t, tool, c.text, c.args)
			if err == nil {
				t.Fatalf("got %+v, want error %q", res, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
			if res != nil {
				t.Errorf("result %v with error", res)
			}
			for _, m := range f.chain.moneyMoves() {
				t.Errorf("money moved despite the error: %+v", m)
			}
		})
	}
}

func TestSaveMemory(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "save_memory", "remember that I prefer USDC", `{"content":"Prefers USDC","type":"Preference"}`)
	if err != nil {
		t.Fatal(err)
	}
	m := res.(*Memory)
	if m.Content != "Prefers USDC" || m.Type != "preference" || m.Importance != 3 || m.ID == "" {
		t.Errorf("%+v", m)
	}
	f.env.IdempotencyKey = "key-2"
	res, err = f.run(t, "save_memory", "", `{"content":"line one\nline two","type":"instruction","importance":5}`)
	if err != nil || res.(*Memory).Importance != 5 {
		t.Errorf("%+v %v", res, err)
	}
	runErrCases(t, "save_memory", []errCase{
		{name: "type", args: `{"content":"x","type":"secret"}`, want: `"type" must be one of preference, fact, contact, instruction`},
		{name: "long", args: `{"content":"` + strings.Repeat("é", MaxMemoryLen+1) + `","type":"fact"}`, want: "has 501 characters; the limit is 500"},
		{name: "empty", args: `{"content":"   ","type":"fact"}`, want: "content is empty"},
		{name: "importance", args: `{"content":"x","type":"fact","importance":9}`, want: "from 1 to 5"},
		{name: "importance type", args: `{"content":"x","type":"fact","importance":"high"}`, want: "must be an integer"},
	})
}

func TestNotConfigured(t *testing.T) {
	for _, name := range designOrder {
		if name == "get_agent_info" {
			continue
		}
		tl, _ := ByName(name)
		res, err := tl.Run(context.Background(), &Env{Agent: Agent{Name: "alice"}, UserText: "send 1"}, nil)
		if err == nil {
			t.Errorf("%s on an empty Env: %+v", name, res)
		}
	}
}

func TestParseExpiry(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"30m", 30 * time.Minute, true},
		{"1m", time.Minute, true},
		{"2 h", 2 * time.Hour, true},
		{"24H", 24 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{" 3 days ", 3 * 24 * time.Hour, true},
		{"1 week", 7 * 24 * time.Hour, true},
		{"90 minutes", 90 * time.Minute, true},
		{"365d", 365 * 24 * time.Hour, true},
		{"366d", 0, false},
		{"0m", 0, false},
		{"59s", 0, false},
		{"1.5h", 0, false},
		{"-1h", 0, false},
		{"h", 0, false},
		{"10", 0, false},
		{"1y", 0, false},
		{"9999999999d", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseExpiry(tt.in)
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("ParseExpiry(%q): %v is not ErrInvalidArgs", tt.in, err)
		}
	}
}
