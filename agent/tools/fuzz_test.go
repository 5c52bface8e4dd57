package tools

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzArgs runs every tool's Run (decoder, validation and the work, over
// the in-test services) on arbitrary arguments and user text: it must never
// panic, must answer either a result or an error, and a result must
// marshal to JSON. Money may move only when the user's text states it.
func FuzzArgs(f *testing.F) {
	seeds := []struct {
		tool       uint8
		args, text string
	}{
		{0, `{"recipient":"bob","amount":"0.5"}`, "send 0.5 to bob"},
		{0, `{"recipient":"bob","amount":"1","asset":"XLM","chain":"stellar"}`, "send 1 XLM"},
		{0, `{"recipient":"st:xlm:00","amount":"1"}`, "1"},
		{1, `{"agent_name":"carol","amount":"2","asset":"SOL"}`, "pay carol 2 SOL"},
		{2, `{"chain":"base"}`, ""},
		{3, `{}`, ""},
		{4, `{"amount":"25","memo":"logo","asset":"USDC"}`, ""},
		{5, ``, ""},
		{6, `{"name":"erin.veil"}`, ""},
		{7, `{"chain":"solana"}`, ""},
		{8, `null`, ""},
		{9, `{"from":"0x1111111111111111111111111111111111111111","to":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","amount":"1"}`, "withdraw 1 to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"},
		{10, `{"to":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}`, "all to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"},
		{11, `{}`, ""},
		{12, `{"chain":"stellar"}`, ""},
		{13, `{"recipient":"bob","amount":"5","interval":"monthly","end_date":"2027-12-31"}`, "5 monthly"},
		{14, `{}`, ""},
		{15, `{"schedule_id":"abcd","action":"cancel"}`, ""},
		{16, `{"content":"likes USDC","type":"preference","importance":4}`, ""},
		{0, `{"recipient":"bob","amount":"1","amount":"2"}`, "1 2"},
		{16, `{"content":"x","type":"fact","importance":1e999}`, ""},
		{0, `{"recipient":"bob","amount":"1"}{}`, "1"},
		{0, "{\"recipient\":\"\xff\",\"amount\":\"1\"}", "1"},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.args), s.text)
	}
	all := All()
	f.Fuzz(func(t *testing.T, tool uint8, args []byte, text string) {
		tl := all[int(tool)%len(all)]
		fx := newFixture(t)
		withPayments(fx)
		env := *fx.env
		env.UserText = text
		res, err := tl.Run(context.Background(), &env, json.RawMessage(args))
		if err == nil {
			if res == nil {
				t.Fatalf("%s: nil result without error", tl.Name)
			}
			if _, merr := json.Marshal(res); merr != nil {
				t.Fatalf("%s: result does not marshal: %v", tl.Name, merr)
			}
		} else if res != nil {
			t.Fatalf("%s: result %v with error %v", tl.Name, res, err)
		}
		if errors.Is(err, ErrInvalidArgs) && len(fx.chain.moneyMoves()) > 0 {
			t.Fatalf("%s: money moved on invalid arguments", tl.Name)
		}
		for _, m := range fx.chain.moneyMoves() {
			if m.Op == "send" && !mentionsAmount(text, m.Amount) {
				t.Fatalf("%s: paid %s, which the text %q does not state", tl.Name, m.Amount, text)
			}
		}
	})
}

// FuzzNumbersIn: the restatement parser never panics and only finds
// numbers whose digits occur in the text.
func FuzzNumbersIn(f *testing.F) {
	for _, s := range []string{"send 0.5 USDC", "$1,250.00", "0x5f 5usdc", ".5.", "1,2,3", "٣", ""} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, text, amount string) {
		_ = numbersIn(text)
		_ = mentionsAmount(text, amount)
	})
}
