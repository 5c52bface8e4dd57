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
	"github.com/veilhq/veil/client"
)

var designOrder = []string{
	"send_payment", "pay_agent", "scan_payments", "get_balance", "create_invoice", "check_invoices",
	"resolve_name", "register_name", "get_agent_info", "withdraw", "withdraw_all", "privacy_check",
	"fund_wallet", "schedule_payment", "list_schedules", "manage_schedule", "save_memory", "pay_invoice", "fetch_paid",
}

func TestAllToolsAndSchemas(t *testing.T) {
	all := All()
	if len(all) != 19 {
		t.Fatalf("%d tools, want 19", len(all))
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

func TestSendPayment(t *testing.T) {
	f0 := newFixture(t)
	bobBase := f0.dir.agents["bob"].MetaAddresses[chains.Base]
	bobXLM := f0.dir.agents["bob"].MetaAddresses[chains.Stellar]
	carolSol := f0.dir.agents["carol"].MetaAddresses[chains.Solana]
	xlmMeta := metas(t, "zed", chains.Stellar)[chains.Stellar]
	ethMeta := metas(t, "zed", chains.Base)[chains.Base]
	ok := []struct {
		name, text, args string
		want             PaymentResult
		to               string
	}{
		{"name on default chain", "send 0.5 ETH to bob", `{"recipient":"bob","amount":"0.5"}`,
			PaymentResult{Amount: "0.5", Asset: "ETH", Chain: chains.Base, Recipient: "bob.veil"}, bobBase},
		{"full name and usdc", "send 12.25 USDC to Bob.veil", `{"recipient":"Bob.veil","amount":"12.25","asset":"usdc"}`,
			PaymentResult{Amount: "12.25", Asset: "USDC", Chain: chains.Base, Recipient: "bob.veil"}, bobBase},
		{"XLM selects stellar", "pay bob 10 XLM", `{"recipient":"bob","amount":"10","asset":"XLM"}`,
			PaymentResult{Amount: "10", Asset: "XLM", Chain: chains.Stellar, Recipient: "bob.veil"}, bobXLM},
		{"explicit chain", "send bob 1 USDC on stellar", `{"recipient":"bob","amount":"1","asset":"USDC","chain":"stellar"}`,
			PaymentResult{Amount: "1", Asset: "USDC", Chain: chains.Stellar, Recipient: "bob.veil"}, bobXLM},
		{"SOL selects solana", "send carol 2 SOL", `{"recipient":"carol","amount":"2","asset":"SOL"}`,
			PaymentResult{Amount: "2", Asset: "SOL", Chain: chains.Solana, Recipient: "carol.veil"}, carolSol},
		{"normalised amount", "send 0.5 ETH to bob", `{"recipient":"bob","amount":"0.50"}`,
			PaymentResult{Amount: "0.5", Asset: "ETH", Chain: chains.Base, Recipient: "bob.veil"}, bobBase},
		{"st:xlm fixes stellar", "send 3 to " + xlmMeta, `{"recipient":"` + xlmMeta + `","amount":"3"}`,
			PaymentResult{Amount: "3", Asset: "XLM", Chain: chains.Stellar, Recipient: xlmMeta}, xlmMeta},
		{"st:eth on default EVM chain", "send 0.1 to that", `{"recipient":"` + ethMeta + `","amount":"0.1"}`,
			PaymentResult{Amount: "0.1", Asset: "ETH", Chain: chains.Base, Recipient: ethMeta}, ethMeta},
		{"on-chain name fallback", "pay erin 4 XLM", `{"recipient":"erin.veil","amount":"4","asset":"XLM"}`,
			PaymentResult{Amount: "4", Asset: "XLM", Chain: chains.Stellar, Recipient: "erin.veil"}, metas(t, "erin", chains.Stellar)[chains.Stellar]},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			res, err := f.run(t, "send_payment", c.text, c.args)
			if err != nil {
				t.Fatal(err)
			}
			got := *res.(*PaymentResult)
			if got.TxHash == "" || got.TxLink != "https://explorer.test/"+string(c.want.Chain)+"/tx/"+got.TxHash {
				t.Errorf("tx %q link %q", got.TxHash, got.TxLink)
			}
			got.TxHash, got.TxLink = "", ""
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			moves := f.chain.moneyMoves()
			if len(moves) != 1 || moves[0].To != c.to || moves[0].Key != "key-1" || moves[0].Amount != c.want.Amount || moves[0].Asset != c.want.Asset {
				t.Errorf("chain calls %+v", moves)
			}
			if len(f.note.notes) != 1 || !strings.HasPrefix(f.note.notes[0], "payment_sent: Sent "+c.want.Amount+" "+c.want.Asset) {
				t.Errorf("notes %v", f.note.notes)
			}
			raw, _ := json.Marshal(res)
			for _, k := range []string{"txHash", "txLink", "amount", "asset", "chain", "recipient"} {
				if !strings.Contains(string(raw), `"`+k+`"`) {
					t.Errorf("detail %s lacks %s", raw, k)
				}
			}
		})
	}

	runErrCases(t, "send_payment", []errCase{
		{name: "missing amount", text: "send bob", args: `{"recipient":"bob"}`, want: `missing required argument "amount"`, is: ErrInvalidArgs},
		{name: "number amount", text: "send 1 to bob", args: `{"recipient":"bob","amount":1}`, want: `"amount" must be a string`, is: ErrInvalidArgs},
		{name: "unknown arg", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1","memo":"x"}`, want: `unknown argument "memo"`, is: ErrInvalidArgs},
		{name: "bad chain", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1","chain":"bitcoin"}`, want: `must be one of horizen, ethereum, polygon, base, stellar, solana`},
		{name: "unknown recipient", text: "send 1 to zoe", args: `{"recipient":"zoe","amount":"1"}`, want: "no Veil agent or on-chain name zoe.veil (looked on base, stellar, solana)", is: ErrUnknownRecipient},
		{name: "invalid name", text: "send 1 to b", args: `{"recipient":"b!","amount":"1"}`, want: "a name is 3 to 32 characters", is: chains.ErrInvalidName},
		{name: "plain address", text: "send 1", args: `{"recipient":"0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed","amount":"1"}`, want: "is a plain address", is: ErrInvalidArgs},
		{name: "plain stellar address", text: "send 1", args: `{"recipient":"` + xlmAddr("q") + `","amount":"1"}`, want: "is a plain address"},
		{name: "bad meta", text: "send 1", args: `{"recipient":"st:eth:0x1234","amount":"1"}`, want: "meta-address", is: chains.ErrInvalidAddress},
		{name: "unknown meta prefix", text: "send 1", args: `{"recipient":"st:btc:00","amount":"1"}`, want: "st:eth:0x, st:xlm: or st:sol:", is: chains.ErrInvalidAddress},
		{name: "self by name", text: "send 1 to alice", args: `{"recipient":"alice.veil","amount":"1"}`, want: "alice.veil is this agent", is: ErrInvalidArgs},
		{name: "self by meta", text: "send 1", args: `{"recipient":"` + f0.env.Agent.MetaAddresses[chains.Stellar] + `","amount":"1"}`, want: "own meta-address"},
		{name: "recipient not on default chain", text: "send 1 to carol", args: `{"recipient":"carol","amount":"1"}`, want: "carol.veil cannot be paid on your default chain base; chains you can use: solana — pass chain, or an asset such as SOL"},
		{name: "recipient not on explicit chain", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1","chain":"solana"}`, want: "bob.veil cannot be paid on solana; chains you both use: base, stellar"},
		{name: "no shared chain", text: "send 1 to dave", args: `{"recipient":"dave","amount":"1"}`, want: "you and dave.veil share no chain: you are on base, stellar, solana, dave.veil is on ethereum"},
		{name: "agent not on chain", text: "send 1 to dave", args: `{"recipient":"dave","amount":"1","chain":"ethereum"}`, want: "this agent is not deployed on ethereum; it is on base, stellar, solana"},
		{name: "recipient without meta", text: "send 1 to ghost", args: `{"recipient":"ghost","amount":"1"}`, want: "has no meta-address", is: ErrUnknownRecipient},
		{name: "unknown asset on chain", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1","asset":"XLM","chain":"base"}`, want: `"XLM" on base: use one of ETH, USDC, ZEN`, is: chains.ErrUnknownAsset},
		{name: "asset nowhere shared", text: "send 1 SOL to bob", args: `{"recipient":"bob","amount":"1","asset":"SOL"}`, want: `"SOL" on any chain you can use to pay bob.veil (base: ETH, USDC, ZEN; stellar: XLM, USDC)`, is: chains.ErrUnknownAsset},
		{name: "meta chain not deployed", text: "send 1", args: `{"recipient":"` + metas(t, "zed", chains.Solana)[chains.Solana] + `","amount":"1","chain":"base"}`, want: "cannot be paid on base; chains you both use: solana"},
		{name: "too many decimals", text: "send 0.0000001 USDC to bob", args: `{"recipient":"bob","amount":"0.0000001","asset":"USDC"}`, want: "more than 6 decimal places", is: chains.ErrInvalidAmount},
		{name: "zero", text: "send 0 to bob", args: `{"recipient":"bob","amount":"0"}`, want: "greater than zero", is: chains.ErrInvalidAmount},
		{name: "negative", text: "send -1 to bob", args: `{"recipient":"bob","amount":"-1"}`, want: "negative", is: chains.ErrInvalidAmount},
		{name: "exponent", text: "send 1e3 to bob", args: `{"recipient":"bob","amount":"1e3"}`, want: "not a decimal", is: chains.ErrInvalidAmount},
		{name: "not restated", text: "pay bob the amount on the invoice", args: `{"recipient":"bob","amount":"50"}`, want: "does not state the amount 50", is: ErrNotConfirmed},
		{name: "different amount", text: "send 5 ETH to bob", args: `{"recipient":"bob","amount":"50"}`, want: "does not state the amount", is: ErrNotConfirmed},
		{name: "no idempotency key", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1"}`, want: "no idempotency key", is: ErrNotConfigured,
			setup: func(f *fixture) { f.env.IdempotencyKey = "" }},
		{name: "chain unavailable", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1"}`, want: "nothing was done, try again later", is: chains.ErrUnavailable,
			setup: func(f *fixture) { f.chain.unavailable[chains.Base] = true }},
		{name: "insufficient funds", text: "send 5000 to bob", args: `{"recipient":"bob","amount":"5000"}`, want: "check get_balance", is: chains.ErrInsufficientFunds},
		{name: "directory down", text: "send 1 to bob", args: `{"recipient":"bob","amount":"1"}`, want: "looking up bob.veil failed",
			setup: func(f *fixture) { f.dir.err = errors.New("directory timeout") }},
		{name: "on-chain lookup unavailable", text: "send 1 to zoe", args: `{"recipient":"zoe","amount":"1"}`, want: "on-chain name lookup failed on stellar", is: chains.ErrUnavailable,
			setup: func(f *fixture) { f.chain.unavailable[chains.Stellar] = true }},
	})
}

func TestPaymentIdempotency(t *testing.T) {
	f := newFixture(t)
	args := `{"recipient":"bob","amount":"1","asset":"USDC"}`
	r1, err := f.run(t, "send_payment", "send 1 USDC to bob", args)
	if err != nil {
		t.Fatal(err)
	}
	// The chat loop retries the same call with the same key: no second
	// payment, same transaction.
	r2, err := f.run(t, "send_payment", "send 1 USDC to bob", args)
	if err != nil {
		t.Fatal(err)
	}
	if r1.(*PaymentResult).TxHash != r2.(*PaymentResult).TxHash || len(f.chain.moneyMoves()) != 1 {
		t.Errorf("retry paid again: %v %v %v", r1, r2, f.chain.moneyMoves())
	}
	// The same key for another payment is refused by the chain.
	_, err = f.run(t, "send_payment", "send 2 USDC to bob", `{"recipient":"bob","amount":"2","asset":"USDC"}`)
	if !errors.Is(err, chains.ErrIdempotencyConflict) {
		t.Errorf("reused key: %v", err)
	}
	// A new key pays again.
	f.env.IdempotencyKey = "key-2"
	if _, err := f.run(t, "send_payment", "send 1 USDC to bob", args); err != nil || len(f.chain.moneyMoves()) != 2 {
		t.Errorf("new key: %v, %d moves", err, len(f.chain.moneyMoves()))
	}
}

func TestPayAgent(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "pay_agent", "pay alice... no, pay bob.veil 10 XLM", `{"agent_name":"bob.veil","amount":"10","asset":"XLM"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*PaymentResult); r.Chain != chains.Stellar || r.Recipient != "bob.veil" || r.Asset != "XLM" {
		t.Errorf("%+v", r)
	}
	runErrCases(t, "pay_agent", []errCase{
		{name: "meta-address", text: "pay 1", args: `{"agent_name":"st:xlm:00","amount":"1"}`, want: "use send_payment", is: ErrInvalidArgs},
		{name: "on-chain only name", text: "pay erin 1 XLM", args: `{"agent_name":"erin","amount":"1","asset":"XLM"}`, want: "no Veil agent is named erin.veil", is: ErrUnknownRecipient},
		{name: "recipient arg", text: "pay bob 1", args: `{"recipient":"bob","amount":"1"}`, want: `unknown argument "recipient"`},
		{name: "not restated", text: "pay bob", args: `{"agent_name":"bob","amount":"1"}`, want: "does not state the amount 1", is: ErrNotConfirmed},
	})
}

func withPayments(f *fixture) {
	f.pays.ps = []Payment{
		{Chain: chains.Base, StealthAddress: "0x1111111111111111111111111111111111111111", Asset: "USDC", Amount: "5", Balance: "5", TxHash: "0xa", ReceivedAt: testNow.Add(-3 * 3600e9)},
		{Chain: chains.Base, StealthAddress: "0x2222222222222222222222222222222222222222", Asset: "ETH", Amount: "0.1", Balance: "0.1", TxHash: "0xb", ReceivedAt: testNow.Add(-2 * 3600e9)},
		{Chain: chains.Stellar, StealthAddress: xlmAddr("s1"), Asset: "XLM", Amount: "20", Balance: "20", TxHash: "xa", ReceivedAt: testNow.Add(-1 * 3600e9)},
		{Chain: chains.Base, StealthAddress: "0x3333333333333333333333333333333333333333", Asset: "USDC", Amount: "1", Balance: "0", Withdrawn: true, TxHash: "0xc", ReceivedAt: testNow.Add(-4 * 3600e9)},
	}
}

const dest = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"

func TestWithdraw(t *testing.T) {
	f := newFixture(t)
	withPayments(f)
	res, err := f.run(t, "withdraw", "withdraw 2 USDC to "+dest, `{"from":"0x1111111111111111111111111111111111111111","to":"`+strings.ToLower(dest)+`","amount":"2"}`)
	if err != nil {
		t.Fatal(err)
	}
	w := res.(*WithdrawResult)
	if w.Chain != chains.Base || w.To != dest || w.Amount != "2" || w.Asset != "USDC" || w.TxHash == "" || w.TxLink == "" {
		t.Errorf("%+v", w)
	}
	moves := f.chain.moneyMoves()
	if len(moves) != 1 || moves[0].Op != "withdraw" || moves[0].Key != "key-1" || moves[0].Asset != "USDC" || moves[0].Amount != "2" {
		t.Errorf("moves %+v", moves)
	}
	if len(f.pays.mark) != 1 || f.pays.mark[0].Amount != "2" || f.pays.mark[0].To != dest || f.pays.mark[0].TxHash != w.TxHash {
		t.Errorf("marks %+v", f.pays.mark)
	}
	if len(f.note.notes) != 1 || !strings.HasPrefix(f.note.notes[0], "withdrawal: ") {
		t.Errorf("notes %v", f.note.notes)
	}

	f = newFixture(t)
	withPayments(f)
	res, err = f.run(t, "withdraw", "move everything to "+xlmAddr("dest"), `{"from":"`+xlmAddr("s1")+`","to":"`+xlmAddr("dest")+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if w := res.(*WithdrawResult); w.Amount != "all" || w.Chain != chains.Stellar || f.chain.moneyMoves()[0].Amount != "" {
		t.Errorf("%+v", w)
	}
	if !f.pays.ps[2].Withdrawn {
		t.Error("not marked withdrawn")
	}

	setup := withPayments
	runErrCases(t, "withdraw", []errCase{
		{name: "missing to", text: "withdraw", args: `{"from":"0x1111111111111111111111111111111111111111"}`, want: `missing required argument "to"`, setup: setup},
		{name: "unknown from", text: "withdraw to " + dest, args: `{"from":"0x9999999999999999999999999999999999999999","to":"` + dest + `"}`,
			want: "is not a payment this agent received; unwithdrawn payments: 0x1111111111111111111111111111111111111111 (5 USDC on base), 0x2222222222222222222222222222222222222222 (0.1 ETH on base), " + xlmAddr("s1") + " (20 XLM on stellar)", setup: setup},
		{name: "no payments", text: "withdraw to " + dest, args: `{"from":"0x9999999999999999999999999999999999999999","to":"` + dest + `"}`, want: "there are no unwithdrawn payments"},
		{name: "already withdrawn", text: "withdraw to " + dest, args: `{"from":"0x3333333333333333333333333333333333333333","to":"` + dest + `"}`, want: "already withdrawn", setup: setup},
		{name: "to of wrong family", text: "withdraw to " + xlmAddr("d"), args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + xlmAddr("d") + `"}`, want: "an EVM address is 0x followed by 40 hex digits", is: chains.ErrInvalidAddress, setup: setup},
		{name: "bad checksum", text: "withdraw to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", args: `{"from":"0x1111111111111111111111111111111111111111","to":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"}`, want: "EIP-55", setup: setup},
		{name: "to is from", text: "withdraw to 0x1111111111111111111111111111111111111111", args: `{"from":"0x1111111111111111111111111111111111111111","to":"0x1111111111111111111111111111111111111111"}`, want: "own stealth address", setup: setup},
		{name: "too much", text: "withdraw 6 to " + dest, args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `","amount":"6"}`, want: "more than the payment holds (5 USDC)", is: chains.ErrInsufficientFunds, setup: setup},
		{name: "too many decimals", text: "withdraw 1.0000001 to " + dest, args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `","amount":"1.0000001"}`, want: "more than 6 decimal places", setup: setup},
		{name: "amount not stated", text: "withdraw to " + dest, args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `","amount":"1"}`, want: "does not state the amount 1", is: ErrNotConfirmed, setup: setup},
		{name: "address not stated", text: "withdraw my money to my wallet", args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `"}`, want: "does not contain the destination address", is: ErrNotConfirmed, setup: setup},
		{name: "chain unavailable", text: "withdraw to " + dest, args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `"}`, want: "try again later", is: chains.ErrUnavailable,
			setup: func(f *fixture) { withPayments(f); f.chain.unavailable[chains.Base] = true }},
		{name: "payments unreadable", text: "withdraw to " + dest, args: `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `"}`, want: "reading received payments on base",
			setup: func(f *fixture) { f.pays.err = errors.New("disk") }},
	})
}

func TestWithdrawAll(t *testing.T) {
	f := newFixture(t)
	withPayments(f)
	res, err := f.run(t, "withdraw_all", "withdraw all to "+dest, `{"to":"`+dest+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*WithdrawAllResult)
	if r.Count != 2 || len(r.Withdrawn) != 2 || r.To != dest || !strings.Contains(r.Warning, "links them") || len(r.Failed) != 0 {
		t.Errorf("%+v", r)
	}
	moves := f.chain.moneyMoves()
	if len(moves) != 2 || moves[0].Key == moves[1].Key || !strings.HasPrefix(moves[0].Key, "key-1/base/") || moves[0].Amount != "" {
		t.Errorf("moves %+v", moves)
	}
	// Retried: the chain answers from its idempotency record; no new
	// withdrawals (the fake keeps the earlier results).
	f.pays.ps[0].Withdrawn, f.pays.ps[1].Withdrawn = false, false
	if _, err := f.run(t, "withdraw_all", "withdraw all to "+dest, `{"to":"`+dest+`"}`); err != nil || len(f.chain.moneyMoves()) != 2 {
		t.Errorf("retry: %v, %d moves", err, len(f.chain.moneyMoves()))
	}

	// One chain of two fails: the other still goes.
	f = newFixture(t)
	withPayments(f)
	f.pays.ps = append(f.pays.ps, Payment{Chain: chains.Solana, StealthAddress: solAddr("p"), Asset: "SOL", Amount: "1", Balance: "1", TxHash: "s"})
	res, err = f.run(t, "withdraw_all", "withdraw all to "+xlmAddr("d"), `{"to":"`+xlmAddr("d")+`"}`)
	if err != nil || res.(*WithdrawAllResult).Count != 1 || res.(*WithdrawAllResult).Warning != "" {
		t.Errorf("stellar only: %+v %v", res, err)
	}

	runErrCases(t, "withdraw_all", []errCase{
		{name: "nothing open", text: "withdraw all to " + solAddr("d"), args: `{"to":"` + solAddr("d") + `"}`, want: "no unwithdrawn payments on solana", setup: withPayments},
		{name: "not an address", text: "withdraw all to me", args: `{"to":"me"}`, want: "give an EVM (0x…), Stellar (G…) or Solana (base58) address", is: chains.ErrInvalidAddress},
		{name: "family not deployed", text: "x", args: `{"to":"` + dest + `"}`, want: "is a evm address but this agent is on stellar",
			setup: func(f *fixture) { f.env.Agent.Chains = []chains.ID{chains.Stellar} }},
		{name: "chain of other family", text: "x", args: `{"to":"` + dest + `","chain":"stellar"}`, want: "is a evm address but chain stellar is stellar"},
		{name: "address not stated", text: "withdraw everything", args: `{"to":"` + dest + `"}`, want: "does not contain the destination address", is: ErrNotConfirmed, setup: withPayments},
		{name: "all fail", text: "withdraw all to " + dest, args: `{"to":"` + dest + `"}`, want: "no payment could be withdrawn",
			setup: func(f *fixture) { withPayments(f); f.chain.unavailable[chains.Base] = true }},
		{name: "bad checksum", text: "withdraw all to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", args: `{"to":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"}`, want: "EIP-55", setup: withPayments},
	})
}

func TestScanPayments(t *testing.T) {
	f := newFixture(t)
	withPayments(f)
	f.chain.scans[chains.Base] = 2
	f.chain.scans[chains.Stellar] = 1
	f.chain.unavailable[chains.Solana] = true
	res, err := f.run(t, "scan_payments", "scan", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*ScanResult)
	if r.Count != 3 || r.Chain != "" || len(r.Chains) != 2 || len(r.Unavailable) != 1 || r.Unavailable[0].Chain != chains.Solana || len(r.Payments) != 3 {
		t.Errorf("%+v", r)
	}
	if r.Payments[0].Chain != chains.Stellar { // newest first
		t.Errorf("order %+v", r.Payments)
	}
	raw, _ := json.Marshal(r)
	if !strings.Contains(string(raw), `"count":3`) {
		t.Errorf("detail %s", raw)
	}
	res, err = f.run(t, "scan_payments", "scan stellar", `{"chain":"stellar"}`)
	if err != nil || res.(*ScanResult).Count != 1 || res.(*ScanResult).Chain != chains.Stellar {
		t.Errorf("%+v %v", res, err)
	}
	runErrCases(t, "scan_payments", []errCase{
		{name: "one chain down", text: "", args: `{"chain":"solana"}`, want: "scanning on solana", is: chains.ErrUnavailable,
			setup: func(f *fixture) { f.chain.unavailable[chains.Solana] = true }},
		{name: "all down", text: "", args: `{}`, want: "scanning failed on every chain",
			setup: func(f *fixture) {
				for _, c := range f.env.Agent.Chains {
					f.chain.unavailable[c] = true
				}
			}},
		{name: "not deployed", text: "", args: `{"chain":"polygon"}`, want: "not deployed on polygon"},
	})
}

func TestGetBalance(t *testing.T) {
	f := newFixture(t)
	withPayments(f)
	f.pays.ps = append(f.pays.ps, Payment{Chain: chains.Base, StealthAddress: "0x4444444444444444444444444444444444444444", Asset: "USDC", Amount: "0.000001", Balance: "0.000001", TxHash: "0xd"})
	f.chain.balances[chains.Base] = chains.Balance{Native: "1.5", Tokens: map[string]string{"USDC": "10"}}
	f.chain.unavailable[chains.Solana] = true
	res, err := f.run(t, "get_balance", "balance", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*BalanceResult)
	if len(r.Balances) != 2 || len(r.Unavailable) != 1 {
		t.Fatalf("%+v", r)
	}
	b := r.Balances[0]
	if b.Chain != chains.Base || b.Native != "1.5" || b.NativeAsset != "ETH" || b.Address != f.env.Agent.Addresses[chains.Base] ||
		b.Stealth["USDC"] != "5.000001" || b.Stealth["ETH"] != "0.1" || b.StealthPayments != 3 {
		t.Errorf("%+v", b)
	}
	if s := r.Balances[1]; s.Chain != chains.Stellar || s.Native != "0" || s.Stealth["XLM"] != "20" {
		t.Errorf("%+v", s)
	}
	runErrCases(t, "get_balance", []errCase{
		{name: "down", args: `{"chain":"base"}`, want: "reading the balance on base", is: chains.ErrUnavailable,
			setup: func(f *fixture) { f.chain.unavailable[chains.Base] = true }},
		{name: "bad arg", args: `{"chain":7}`, want: `"chain" must be a string`},
	})
}

func TestCreateAndCheckInvoices(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "create_invoice", "invoice 25 USDC for the logo", `{"amount":"25.00","memo":" logo work ","asset":"USDC"}`)
	if err != nil {
		t.Fatal(err)
	}
	inv := res.(*Invoice)
	if inv.ID == "" || inv.Amount != "25" || inv.Asset != "USDC" || inv.Chain != chains.Base || inv.Memo != "logo work" || inv.PaymentLink == "" {
		t.Errorf("%+v", inv)
	}
	raw, _ := json.Marshal(inv)
	for _, k := range []string{`"id"`, `"paymentLink"`, `"status":"pending"`, `"txHash":null`} {
		if !strings.Contains(string(raw), k) {
			t.Errorf("detail %s lacks %s", raw, k)
		}
	}
	// The same call again (a retried loop) gives the same invoice.
	again, _ := f.run(t, "create_invoice", "", `{"amount":"25.00","memo":" logo work ","asset":"USDC"}`)
	if again.(*Invoice).ID != inv.ID || len(f.inv.all) != 1 {
		t.Errorf("retry created another invoice")
	}
	f.env.IdempotencyKey = "key-2"
	if res, err := f.run(t, "create_invoice", "", `{"amount":"3","memo":"tip","asset":"XLM"}`); err != nil || res.(*Invoice).Chain != chains.Stellar || res.(*Invoice).ID == inv.ID {
		t.Errorf("XLM invoice: %+v %v", res, err)
	}
	list, err := f.run(t, "check_invoices", "", `{}`)
	if err != nil || list.(*InvoiceList).Count != 2 || list.(*InvoiceList).Pending != 2 || len(list.(*InvoiceList).Invoices) != 2 {
		t.Errorf("%+v %v", list, err)
	}
	runErrCases(t, "create_invoice", []errCase{
		{name: "no memo", args: `{"amount":"1"}`, want: `missing required argument "memo"`},
		{name: "blank memo", args: `{"amount":"1","memo":"  "}`, want: "memo is empty"},
		{name: "long memo", args: `{"amount":"1","memo":"` + strings.Repeat("m", MaxMemoLen+1) + `"}`, want: "the limit is 280"},
		{name: "bad amount", args: `{"amount":"1.5.","memo":"x"}`, want: "not a decimal", is: chains.ErrInvalidAmount},
		{name: "asset nowhere", args: `{"amount":"1","memo":"x","asset":"POL"}`, want: `"POL" on any of your chains (base: ETH, USDC, ZEN; stellar: XLM, USDC; solana: SOL, USDC)`},
		{name: "not configured", args: `{"amount":"1","memo":"x"}`, want: "no invoice store", is: ErrNotConfigured,
			setup: func(f *fixture) { f.env.Invoices = nil }},
	})
}

func TestCheckInvoicesCap(t *testing.T) {
	f := newFixture(t)
	for i := range 25 {
		f.inv.all[string(rune('a'+i))] = Invoice{Invoice: client.Invoice{ID: string(rune('a' + i)), Status: []string{"pending", "paid"}[i%2], CreatedAt: testNow.Add(time.Duration(i) * time.Minute)}}
	}
	res, err := f.run(t, "check_invoices", "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*InvoiceList)
	if r.Count != 25 || r.Pending != 13 || r.Paid != 12 || len(r.Invoices) != 20 || r.Invoices[0].ID != "y" {
		t.Errorf("%d %d %d %d %s", r.Count, r.Pending, r.Paid, len(r.Invoices), r.Invoices[0].ID)
	}
}

func TestResolveRegisterFundInfo(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "resolve_name", "", `{"name":"Bob.veil"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*ResolveResult); r.Source != "veil" || r.FullName != "bob.veil" || len(r.Chains) != 2 || r.MetaAddresses[chains.Stellar] == "" {
		t.Errorf("%+v", r)
	}
	res, err = f.run(t, "resolve_name", "", `{"name":"erin"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*ResolveResult); r.Source != "chain" || !reflect.DeepEqual(r.Chains, []chains.ID{chains.Stellar}) {
		t.Errorf("%+v", r)
	}
	runErrCases(t, "resolve_name", []errCase{
		{name: "unknown", args: `{"name":"zoe"}`, want: "no Veil agent or on-chain name zoe.veil", is: ErrUnknownRecipient},
		{name: "invalid", args: `{"name":"z"}`, want: "3 to 32 characters", is: chains.ErrInvalidName},
		{name: "missing", args: `{}`, want: `missing required argument "name"`},
	})

	res, err = f.run(t, "register_name", "", `{"chain":"stellar"}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*NameResult); r.FullName != "alice.veil" || r.Chain != chains.Stellar || r.TxLink != "https://explorer.test/stellar/tx/0xreg" {
		t.Errorf("%+v", r)
	}
	runErrCases(t, "register_name", []errCase{
		{name: "taken", args: `{}`, want: "alice.veil on base", is: chains.ErrNameTaken, setup: func(f *fixture) { f.chain.taken[chains.Base] = true }},
		{name: "not deployed", args: `{"chain":"horizen"}`, want: "not deployed on horizen"},
	})

	res, err = f.run(t, "fund_wallet", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.(*FundResult); r.Chain != chains.Base || r.Address != f.env.Agent.Addresses[chains.Base] || r.TxHash != "0xfaucet" {
		t.Errorf("%+v", r)
	}
	runErrCases(t, "fund_wallet", []errCase{
		{name: "down", args: `{"chain":"solana"}`, want: "funding from the faucet on solana", is: chains.ErrUnavailable,
			setup: func(f *fixture) { f.chain.unavailable[chains.Solana] = true }},
	})

	res, err = f.run(t, "get_agent_info", "", ``)
	if err != nil {
		t.Fatal(err)
	}
	info := res.(*AgentInfo)
	if info.FullName != "alice.veil" || info.DefaultChain != chains.Base || len(info.Chains) != 3 || info.MetaAddresses[chains.Solana] != f.env.Agent.MetaAddresses[chains.Solana] {
		t.Errorf("%+v", info)
	}
	runErrCases(t, "get_agent_info", []errCase{{name: "args", args: `{"x":1}`, want: "takes no arguments"}})
}

func TestPrivacyCheck(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "privacy_check", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*PrivacyReport)
	if r.Level != "good" || r.UnwithdrawnPayments != 0 || len(r.Advice) != 1 || !strings.Contains(r.Advice[0], "No stealth payments") {
		t.Errorf("empty: %+v", r)
	}

	f = newFixture(t)
	withPayments(f)
	pub := f.env.Agent.Addresses[chains.Base]
	f.pays.ps[3].WithdrawnTo = []string{strings.ToLower(pub)}
	f.pays.ps = append(f.pays.ps,
		Payment{Chain: chains.Stellar, StealthAddress: xlmAddr("w1"), Asset: "XLM", Withdrawn: true, WithdrawnTo: []string{xlmAddr("same")}},
		Payment{Chain: chains.Stellar, StealthAddress: xlmAddr("w2"), Asset: "XLM", Withdrawn: true, WithdrawnTo: []string{xlmAddr("same")}},
		Payment{Chain: chains.Stellar, StealthAddress: xlmAddr("w3"), Asset: "XLM", Withdrawn: true, WithdrawnTo: []string{xlmAddr("other")}},
	)
	f.chain.balances[chains.Stellar] = chains.Balance{Native: "100", Tokens: map[string]string{}}
	f.chain.balances[chains.Base] = chains.Balance{Native: "0", Tokens: map[string]string{"USDC": "0.0"}}
	f.chain.unavailable[chains.Solana] = true
	res1, err := f.run(t, "privacy_check", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	res2, _ := f.run(t, "privacy_check", "", `{}`)
	j1, _ := json.Marshal(res1)
	j2, _ := json.Marshal(res2)
	if string(j1) != string(j2) {
		t.Errorf("not deterministic:\n%s\n%s", j1, j2)
	}
	r = res1.(*PrivacyReport)
	if r.Level != "at_risk" || r.UnwithdrawnPayments != 3 || r.WithdrawnPayments != 4 || len(r.LinkedWithdrawals) != 2 {
		t.Fatalf("%s", j1)
	}
	if l := r.LinkedWithdrawals[0]; l.Chain != chains.Base || !l.Public || l.Payments != 1 {
		t.Errorf("%+v", l)
	}
	if l := r.LinkedWithdrawals[1]; l.Chain != chains.Stellar || l.Public || l.Payments != 2 || l.Address != xlmAddr("same") {
		t.Errorf("%+v", l)
	}
	if r.Chains[0].PublicFunds || !r.Chains[1].PublicFunds || r.Chains[2].PublicBalance != nil || len(r.Unavailable) != 1 {
		t.Errorf("%s", j1)
	}
	adv := strings.Join(r.Advice, "\n")
	for _, want := range []string{"withdrawn to this agent's public address", "2 payments on stellar were withdrawn to the same address", "public address holds funds on stellar", "3 received payment(s) sit unlinked", "could not be read on solana"} {
		if !strings.Contains(adv, want) {
			t.Errorf("advice lacks %q:\n%s", want, adv)
		}
	}
	// Public funds alone: fair.
	f = newFixture(t)
	f.chain.balances[chains.Base] = chains.Balance{Native: "0", Tokens: map[string]string{"USDC": "3"}}
	res, _ = f.run(t, "privacy_check", "", `{}`)
	if res.(*PrivacyReport).Level != "fair" {
		t.Errorf("%+v", res)
	}
	runErrCases(t, "privacy_check", []errCase{
		{name: "payments unreadable", args: `{}`, want: "reading received payments", setup: func(f *fixture) { f.pays.err = errors.New("disk") }},
	})
}

func TestNextRun(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	cases := []struct {
		anchor, t, interval, want string
	}{
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", Daily, "2027-02-01T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-03T09:59:59Z", Daily, "2027-02-03T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-03T10:00:00Z", Daily, "2027-02-04T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-01T00:00:00Z", Weekly, "2027-02-07T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-20T00:00:00Z", Weekly, "2027-02-21T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", Monthly, "2027-02-28T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-28T10:00:00Z", Monthly, "2027-03-31T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-04-01T00:00:00Z", Monthly, "2027-04-30T10:00:00Z"},
		{"2028-01-31T10:00:00Z", "2028-01-31T10:00:00Z", Monthly, "2028-02-29T10:00:00Z"},
		{"2027-12-15T00:00:00Z", "2027-12-15T00:00:00Z", Monthly, "2028-01-15T00:00:00Z"},
		{"2027-12-15T00:00:00Z", "2029-06-20T00:00:00Z", Monthly, "2029-07-15T00:00:00Z"},
		{"2027-01-31T10:00:00Z", "2026-01-01T00:00:00Z", Monthly, "2027-02-28T10:00:00Z"},
	}
	for _, c := range cases {
		got, err := NextRun(at(c.anchor), at(c.t), c.interval)
		if err != nil || !got.Equal(at(c.want)) {
			t.Errorf("NextRun(%s, %s, %s) = %s, %v; want %s", c.anchor, c.t, c.interval, got, err, c.want)
		}
	}
	// 2027-01-31 is a Sunday.
	more := []struct{ anchor, t, interval, want string }{
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", Hourly, "2027-01-31T11:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T12:30:00Z", Hourly, "2027-01-31T13:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "every-6-hours", "2027-01-31T16:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-01T03:00:00Z", "every-6-hours", "2027-02-01T04:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "friday", "2027-02-05T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-05T10:00:00Z", "friday", "2027-02-12T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-02-20T00:00:00Z", "friday", "2027-02-26T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "sunday", "2027-02-07T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2027-01-31T10:00:00Z", "monday", "2027-02-01T10:00:00Z"},
		{"2027-01-31T10:00:00Z", "2026-12-01T00:00:00Z", "monday", "2027-02-01T10:00:00Z"},
	}
	for _, c := range more {
		got, err := NextRun(at(c.anchor), at(c.t), c.interval)
		if err != nil || !got.Equal(at(c.want)) {
			t.Errorf("NextRun(%s, %s, %s) = %s, %v; want %s", c.anchor, c.t, c.interval, got, err, c.want)
		}
	}
	for _, bad := range []string{"yearly", "every-25-hours", "every-0-hours", "Friday", "every friday", ""} {
		if _, err := NextRun(testNow, testNow, bad); !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("NextRun with %q: %v (only canonical forms are stored)", bad, err)
		}
	}
	norm := map[string]string{"Weekly": Weekly, "every friday": "friday", "Fridays": "friday", "fri": "friday", "every 6 hours": "every-6-hours",
		"6h": "every-6-hours", "every hour": Hourly, "every-12-hours": "every-12-hours", "every 24 hours": Daily, "each monday": "monday"}
	for in, want := range norm {
		if got, err := NormalizeInterval(in); err != nil || got != want {
			t.Errorf("NormalizeInterval(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"yearly", "every 30 hours", "biweekly", "every 2 weeks", "someday"} {
		if _, err := NormalizeInterval(bad); !errors.Is(err, ErrInvalidArgs) {
			t.Errorf("NormalizeInterval(%q): %v", bad, err)
		}
	}
}

func TestSchedulePayment(t *testing.T) {
	f := newFixture(t)
	res, err := f.run(t, "schedule_payment", "every month send 5 USDC to bob until 2027-12-31",
		`{"recipient":"bob.veil","amount":"5","asset":"USDC","interval":"Monthly","end_date":"2027-12-31"}`)
	if err != nil {
		t.Fatal(err)
	}
	s := res.(*Schedule)
	if s.Recipient != "bob" || s.Amount != "5" || s.Asset != "USDC" || s.Chain != chains.Base || s.Interval != Monthly || s.Status != "active" ||
		!s.NextRun.Equal(time.Date(2027, 2, 28, 10, 0, 0, 0, time.UTC)) || s.EndDate == nil || !s.EndDate.Equal(time.Date(2027, 12, 31, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("%+v", s)
	}
	if len(f.chain.moneyMoves()) != 0 {
		t.Error("scheduling paid")
	}
	again, _ := f.run(t, "schedule_payment", "every month send 5 USDC to bob until 2027-12-31",
		`{"recipient":"bob.veil","amount":"5","asset":"USDC","interval":"Monthly","end_date":"2027-12-31"}`)
	if again.(*Schedule).ID != s.ID || len(f.sch.all) != 1 {
		t.Error("retry created a second schedule")
	}
	meta := metas(t, "zed", chains.Stellar)[chains.Stellar]
	f.env.IdempotencyKey = "key-2"
	res, err = f.run(t, "schedule_payment", "daily 1 XLM to "+meta, `{"recipient":"`+meta+`","amount":"1","interval":"daily"}`)
	if err != nil || res.(*Schedule).Recipient != meta || res.(*Schedule).Chain != chains.Stellar {
		t.Errorf("%+v %v", res, err)
	}
	runErrCases(t, "schedule_payment", []errCase{
		{name: "interval", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"yearly"}`, want: `interval must be daily, weekly, monthly, hourly, every-N-hours`, is: ErrInvalidArgs},
		{name: "no interval", text: "send 5", args: `{"recipient":"bob","amount":"5"}`, want: `missing required argument "interval"`},
		{name: "end in past", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"daily","end_date":"2026-01-01"}`, want: "is not in the future"},
		{name: "end before first run", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"weekly","end_date":"2027-02-02"}`, want: "before the first payment (2027-02-07T10:00:00Z)"},
		{name: "end format", text: "send 5", args: `{"recipient":"bob","amount":"5","interval":"daily","end_date":"March"}`, want: `end_date must be an ISO date`},
		{name: "not restated", text: "pay bob every week", args: `{"recipient":"bob","amount":"5","interval":"weekly"}`, want: "does not state the amount 5", is: ErrNotConfirmed},
		{name: "unknown recipient", text: "send 5", args: `{"recipient":"zoe","amount":"5","interval":"weekly"}`, want: "zoe.veil", is: ErrUnknownRecipient},
		{name: "recipient not shared", text: "send 5", args: `{"recipient":"dave","amount":"5","interval":"weekly"}`, want: "share no chain"},
	})
}

func TestListAndManageSchedules(t *testing.T) {
	f := newFixture(t)
	f.sch.all = []Schedule{
		{ID: "cccc0000-0000-0000-0000-000000000000", Status: "cancelled", NextRun: testNow},
		{ID: "bbbb0000-0000-0000-0000-000000000000", Status: "active", NextRun: testNow.Add(48 * time.Hour)},
		{ID: "aaaa0000-0000-0000-0000-000000000000", Status: "paused", NextRun: testNow.Add(time.Hour)},
		{ID: "dddd0000-0000-0000-0000-000000000000", Status: "active", NextRun: testNow.Add(time.Hour)},
	}
	res, err := f.run(t, "list_schedules", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*ScheduleList)
	var order []string
	for _, s := range r.Schedules {
		order = append(order, s.ID[:4])
	}
	if r.Count != 4 || r.Active != 2 || r.Paused != 1 || r.Cancelled != 1 || strings.Join(order, ",") != "dddd,bbbb,aaaa,cccc" {
		t.Errorf("%+v %v", r, order)
	}
	res, err = f.run(t, "manage_schedule", "pause schedule BBBB", `{"schedule_id":" BBBB ","action":"Pause"}`)
	if err != nil || res.(*Schedule).Status != "paused" || f.sch.transitions[0] != "bbbb:pause" {
		t.Errorf("%+v %v %v", res, err, f.sch.transitions)
	}
	runErrCases(t, "manage_schedule", []errCase{
		{name: "short", args: `{"schedule_id":"bbb","action":"pause"}`, want: "too short: give at least 4 characters"},
		{name: "not hex", args: `{"schedule_id":"zzzz","action":"pause"}`, want: "not a schedule id"},
		{name: "action", args: `{"schedule_id":"bbbb","action":"delete"}`, want: `"action" must be one of pause, resume, cancel`},
		{name: "too long", args: `{"schedule_id":"` + strings.Repeat("a", 37) + `","action":"pause"}`, want: "the limit is 36"},
		{name: "store error", args: `{"schedule_id":"eeee","action":"pause"}`, want: "no schedule eeee"},
	})
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
