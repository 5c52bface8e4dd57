package tools

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

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
		{"st:eth on default EVM chain", "send 0.1 ETH to " + ethMeta, `{"recipient":"` + ethMeta + `","amount":"0.1"}`,
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
		{name: "chain unavailable", text: "send 1 ETH to bob", args: `{"recipient":"bob","amount":"1"}`, want: "nothing was done, try again later", is: chains.ErrUnavailable,
			setup: func(f *fixture) { f.chain.unavailable[chains.Base] = true }},
		{name: "insufficient funds", text: "send 5000 ETH to bob", args: `{"recipient":"bob","amount":"5000"}`, want: "check get_balance", is: chains.ErrInsufficientFunds},
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
