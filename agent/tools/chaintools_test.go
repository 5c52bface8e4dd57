package tools

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/client"
)

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

// get_balance names the payments still on their way on each chain
// (amount, asset, recipient, status), and not the settled ones (issue 32
// item 6).
func TestGetBalanceMentionsPaymentsOnTheirWay(t *testing.T) {
	f := newFixture(t)
	f.chain.balances[chains.Base] = chains.Balance{Native: "1.5"}
	amt := func(s string) chains.Amount {
		a, err := chains.ParseAmountOf(s, 18)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	f.env.Outgoing = &fakeOutgoing{recs: []OutgoingPayment{
		{ID: "p-2", Chain: chains.Base, Asset: "ETH", Amount: amt("0.003"), Recipient: PaymentRecipient{Name: "bob.veil", Address: "st:eth:0x1"}, Status: PaymentPending},
		{ID: "p-1", Chain: chains.Base, Asset: "USDC", Amount: amt("2"), Recipient: PaymentRecipient{Address: "0xabc"}, Status: PaymentBroadcast, TxHash: "0xt"},
		{ID: "p-0", Chain: chains.Base, Asset: "ETH", Amount: amt("1"), Recipient: PaymentRecipient{Name: "carol.veil"}, Status: PaymentConfirmed},
		{ID: "p-s", Chain: chains.Stellar, Asset: "XLM", Amount: amt("5"), Recipient: PaymentRecipient{Name: "dan.veil"}, Status: PaymentPending},
	}}
	res, err := f.run(t, "get_balance", "balance on base", `{"chain":"base"}`)
	if err != nil {
		t.Fatal(err)
	}
	r := res.(*BalanceResult)
	want := []OutgoingBrief{
		{PaymentID: "p-2", Amount: "0.003", Asset: "ETH", Recipient: "bob.veil", Status: PaymentPending},
		{PaymentID: "p-1", Amount: "2", Asset: "USDC", Recipient: "0xabc", Status: PaymentBroadcast, TxHash: "0xt"},
	}
	if len(r.Balances) != 1 || !reflect.DeepEqual(r.Balances[0].PendingOutgoing, want) {
		t.Fatalf("%+v; want pendingOutgoing %+v", r.Balances, want)
	}
	// Nothing on its way: the field is left out.
	f.env.Outgoing = &fakeOutgoing{}
	res, err = f.run(t, "get_balance", "balance on base", `{"chain":"base"}`)
	if err != nil || res.(*BalanceResult).Balances[0].PendingOutgoing != nil {
		t.Fatalf("%+v, %v", res, err)
	}
}
