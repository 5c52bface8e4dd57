package tools

import (
	"context"
	"errors"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
)

// testSource is what asks for the fixture's payments.
var testSource = PaymentSource{Type: SourceConversation, ID: "conv-test"}

// sendRequestFor is a parsed stealth payment of amount symbol on c to
// (name, address) under key, as readPayment would make it.
func sendRequestFor(t testing.TB, c chains.ID, symbol, amount, name, address, key string) PaymentRequest {
	t.Helper()
	asset, err := LookupAsset(c, symbol)
	if err != nil {
		t.Fatal(err)
	}
	v, err := asset.Parse(amount)
	if err != nil {
		t.Fatal(err)
	}
	return PaymentRequest{kind: KindSendPayment, tool: "send_payment", spend: spend{chain: c, asset: asset, amount: v},
		to: PaymentRecipient{Name: name, Address: address}, key: key, source: testSource}
}

// TestPaymentRequestIsSealed: no package outside agent/tools can make or
// change a PaymentRequest (every field, also of what it embeds, is
// unexported), so what reaches the chain is what the tool parsed; and a
// request nobody parsed (the zero value) is refused before signing.
func TestPaymentRequestIsSealed(t *testing.T) {
	var check func(reflect.Type, string)
	check = func(typ reflect.Type, path string) {
		for i := 0; i < typ.NumField(); i++ {
			fl := typ.Field(i)
			if fl.IsExported() {
				t.Errorf("%s.%s is exported: a caller could build or change a payment request without parsing it", path, fl.Name)
			}
			if fl.Anonymous && fl.Type.Kind() == reflect.Struct {
				check(fl.Type, path+"."+fl.Name)
			}
		}
	}
	check(reflect.TypeOf(PaymentRequest{}), "PaymentRequest")

	// Inside the package, only request.go's readers make one.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if name == "request.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "PaymentRequest{") - strings.Count(string(src), "PaymentRequest{}"); n != 0 {
			t.Errorf("%s builds %d PaymentRequest values itself; only request.go's readers may", name, n)
		}
	}

	var zero PaymentRequest
	if zero.Parsed() {
		t.Error("the zero request reads as parsed")
	}
	if _, err := zero.SendRequest(); !errors.Is(err, ErrUnparsedPayment) {
		t.Errorf("zero request's SendRequest: %v, want ErrUnparsedPayment", err)
	}
	if _, err := zero.Authorization(chains.TransferAuthorization{To: "0x00000000000000000000000000000000000000B0", Value: big.NewInt(1), Asset: "USDC"}); !errors.Is(err, ErrUnparsedPayment) {
		t.Errorf("zero request's Authorization: %v, want ErrUnparsedPayment", err)
	}
	// A stealth payment is not an x402 authorization.
	if _, err := sendRequestFor(t, chains.Base, "USDC", "1", "", "0x00000000000000000000000000000000000000B0", "k").Authorization(chains.TransferAuthorization{}); !errors.Is(err, ErrUnparsedPayment) {
		t.Errorf("a send as an authorization: %v, want ErrUnparsedPayment", err)
	}
	f := newFixture(t)
	if _, err := f.chain.SendStealth(context.Background(), zero); !errors.Is(err, ErrUnparsedPayment) || len(f.chain.moneyMoves()) != 0 {
		t.Errorf("zero request sent: %v, moves %v", err, f.chain.moneyMoves())
	}
}

// TestPaymentParsedOnce: the request a payment tool reads at its boundary
// is, unchanged, what reaches the spend (ChainOps.SendStealth /
// InvoiceChains.PayAddress), and it holds the parsed chain, asset, amount
// in base units, resolved recipient, key and tool; its record and its
// signing request say the same.
func TestPaymentParsedOnce(t *testing.T) {
	f0 := newFixture(t)
	bob := f0.dir.agents["bob"].MetaAddresses
	carol := f0.dir.agents["carol"].MetaAddresses
	zed := metas(t, "zed", chains.Stellar)[chains.Stellar]
	cases := []struct {
		name, tool, text, args string
		who                    string // the recipient argument
		onChain                bool
		chain                  chains.ID
		asset, units           string
		to                     PaymentRecipient
	}{
		{"default chain and asset", "send_payment", "send 0.5 ETH to bob", `{"recipient":"bob","amount":"0.50"}`, "bob", true,
			chains.Base, "ETH", "500000000000000000", PaymentRecipient{Name: "bob.veil", Address: bob[chains.Base]}},
		{"asset picks the chain", "send_payment", "pay bob 10 XLM", `{"recipient":"Bob.veil","amount":"10","asset":"xlm"}`, "Bob.veil", true,
			chains.Stellar, "XLM", "100000000", PaymentRecipient{Name: "bob.veil", Address: bob[chains.Stellar]}},
		{"explicit chain", "send_payment", "send bob 1.25 USDC on stellar", `{"recipient":"bob","amount":"1.25","asset":"USDC","chain":"Stellar"}`, "bob", true,
			chains.Stellar, "USDC", "12500000", PaymentRecipient{Name: "bob.veil", Address: bob[chains.Stellar]}},
		{"meta-address", "send_payment", "send 3 XLM to " + zed, `{"recipient":"` + zed + `","amount":"3"}`, zed, true,
			chains.Stellar, "XLM", "30000000", PaymentRecipient{Address: zed}},
		{"on-chain name", "send_payment", "pay erin 4 XLM", `{"recipient":"erin","amount":"4","asset":"XLM"}`, "erin", true,
			chains.Stellar, "XLM", "40000000", PaymentRecipient{Name: "erin.veil", Address: metas(t, "erin", chains.Stellar)[chains.Stellar]}},
		{"pay_agent", "pay_agent", "pay carol 2 SOL", `{"agent_name":"carol","amount":"2","asset":"SOL"}`, "carol", false,
			chains.Solana, "SOL", "2000000000", PaymentRecipient{Name: "carol.veil", Address: carol[chains.Solana]}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.run(t, c.tool, c.text, c.args); err != nil {
				t.Fatal(err)
			}
			if len(f.chain.requests) != 1 {
				t.Fatalf("%d requests reached the chain, want 1", len(f.chain.requests))
			}
			got := f.chain.requests[0]
			if got.Kind() != KindSendPayment || got.Tool() != c.tool || got.Chain() != c.chain || got.Asset().Symbol != c.asset ||
				got.Amount().Units().String() != c.units || got.Recipient() != c.to || got.IdempotencyKey() != "key-1" {
				t.Errorf("request %+v", got)
			}
			// The boundary's own reading of the same call is the request
			// that was sent: nothing below re-read it.
			a, err := map[string]spec{"send_payment": sendPaymentSpec, "pay_agent": payAgentSpec}[c.tool].decode([]byte(c.args))
			if err != nil {
				t.Fatal(err)
			}
			_, want, err := readPayment(context.Background(), f.env, c.tool, c.who, a, c.onChain)
			if err != nil {
				t.Fatal(err)
			}
			// Bound once, at the boundary, to the connector's own
			// descriptor of the asset (ChainOps.Assets, called once).
			if want, err = want.Bind(fakeAssets(c.chain)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("sent %+v, parsed %+v", got, want)
			}
			if f.chain.assetLists != 1 {
				t.Errorf("the chain's assets were listed %d times, want once", f.chain.assetLists)
			}
			token, err := chains.AssetBySymbol(fakeAssets(c.chain), c.asset)
			if err != nil {
				t.Fatal(err)
			}
			send, err := got.SendRequest()
			if err != nil || send.Chain != c.chain || send.Asset != token || got.Token() != token || send.Amount.Units().String() != c.units || send.To != c.to.Address || send.IdempotencyKey != "key-1" {
				t.Errorf("signing request %+v, %v", send, err)
			}
			rec := got.Record()
			if got.Source() != testSource || rec.Kind != KindSendPayment || rec.Source != testSource || rec.Chain != c.chain || rec.Asset != c.asset || rec.Amount.Units().String() != c.units ||
				rec.Recipient != c.to || rec.IdempotencyKey != "key-1" {
				t.Errorf("record %+v", rec)
			}
		})
	}

	t.Run("pay_invoice", func(t *testing.T) {
		const id = "9b1c2d3e-4f5a-4b6c-8d7e-0f1a2b3c4d5e"
		f, l := invoiceFixture(t)
		inv := pendingInvoice(t, id, "shop", "2.5", "USDC")
		l.all[id] = inv
		if _, err := f.run(t, "pay_invoice", "pay invoice "+id, `{"invoice":"`+id+`"}`); err != nil {
			t.Fatal(err)
		}
		if len(f.chain.requests) != 1 {
			t.Fatalf("%d requests reached the chain, want 1", len(f.chain.requests))
		}
		got := f.chain.requests[0]
		want := PaymentRecipient{Name: "shop.veil (invoice " + id + ")", Address: inv.PayTo}
		if got.Kind() != KindPayInvoice || got.Tool() != "pay_invoice" || got.Chain() != chains.Base || got.Asset().Symbol != "USDC" ||
			got.Amount().Units().String() != "2500000" || got.Recipient() != want || got.IdempotencyKey() != invoiceKey(f.env, inv) {
			t.Errorf("request %+v", got)
		}
	})

	// fetch_paid reads the x402 requirement it pays once (consider) into a
	// KindX402 request; that request is what the approval rules, the record
	// and the authorization the account signs take (ChainOps.SignAuthorization).
	t.Run("fetch_paid", func(t *testing.T) {
		key, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t)
		f.chain.x402 = &fakeAuthorizer{key: key}
		srv := &x402Server{amount: "500000", body: "ok", now: f.env.Now}
		hs := httptest.NewServer(srv)
		defer hs.Close()
		f.env.HTTP = hs.Client()
		u := hs.URL + "/weather"
		if _, err := f.run(t, "fetch_paid", "fetch "+u+" paying up to 1 USDC", `{"url":"`+u+`","max_amount":"1"}`); err != nil {
			t.Fatal(err)
		}
		if len(f.chain.requests) != 1 {
			t.Fatalf("%d requests reached the chain, want 1", len(f.chain.requests))
		}
		got := f.chain.requests[0]
		payee := PaymentRecipient{Address: srv.req().PayTo}
		if got.Kind() != KindX402 || got.Tool() != "fetch_paid" || got.Chain() != chains.Base || got.Asset().Symbol != "USDC" ||
			got.Amount().Units().String() != "500000" || got.Recipient() != payee || got.IdempotencyKey() != "x402/key-1" || got.Source() != testSource {
			t.Errorf("request %+v", got)
		}
		p, err := consider(context.Background(), f.env, srv.req(), "1", "USDC")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, p.pay) {
			t.Errorf("signed %+v, parsed %+v", got, p.pay)
		}
		// The terms cannot change what the authorization moves.
		auth, err := got.Authorization(chains.TransferAuthorization{Name: "USD Coin", Asset: "ETH", To: "0x00000000000000000000000000000000000000EE", Value: big.NewInt(1)})
		if err != nil || auth.Name != "USD Coin" || auth.Asset != "USDC" || auth.To != payee.Address || auth.Value.String() != "500000" {
			t.Errorf("authorization %+v, %v", auth, err)
		}
		rec := got.Record()
		if rec.Kind != KindX402 || rec.Source != testSource || rec.Chain != chains.Base || rec.Asset != "USDC" || rec.Amount.Units().String() != "500000" ||
			rec.Recipient != payee || rec.IdempotencyKey != "x402/key-1" {
			t.Errorf("record %+v", rec)
		}
		if _, err := got.SendRequest(); !errors.Is(err, ErrUnparsedPayment) {
			t.Errorf("an x402 authorization as a send: %v", err)
		}
		if _, err := got.WithdrawRequest(); !errors.Is(err, ErrUnparsedPayment) {
			t.Errorf("an x402 authorization as a withdrawal: %v", err)
		}
	})
}

// TestWithdrawalParsedOnce: withdraw and withdraw_all read their
// arguments once into withdrawal requests, and those are what reach the
// chain: its one-time address, asset, amount in base units (or all), the
// checked destination and the key; a withdrawal is never a send.
func TestWithdrawalParsedOnce(t *testing.T) {
	f := newFixture(t)
	withPayments(f)
	if _, err := f.run(t, "withdraw", "withdraw 2 USDC to "+dest, `{"from":"0x1111111111111111111111111111111111111111","to":"`+strings.ToLower(dest)+`","amount":"2.000"}`); err != nil {
		t.Fatal(err)
	}
	if len(f.chain.requests) != 1 {
		t.Fatalf("%d requests reached the chain, want 1", len(f.chain.requests))
	}
	got := f.chain.requests[0]
	if got.Kind() != KindWithdraw || got.Tool() != "withdraw" || got.Chain() != chains.Base || got.Asset().Symbol != "USDC" || got.Amount().Units().String() != "2000000" ||
		got.All() || got.From() != "0x1111111111111111111111111111111111111111" || got.Recipient() != (PaymentRecipient{Address: dest}) || got.IdempotencyKey() != "key-1" {
		t.Errorf("request %+v", got)
	}
	if f.chain.assetLists != 1 {
		t.Errorf("the chain's assets were listed %d times, want once", f.chain.assetLists)
	}
	w, err := got.WithdrawRequest()
	if err != nil || w.From != got.From() || w.To != dest || w.Asset != tokenOn(t, chains.Base, "USDC") || w.Amount.Units().String() != "2000000" || w.All || w.IdempotencyKey != "key-1" {
		t.Errorf("withdraw request %+v, %v", w, err)
	}
	if rec := got.Record(); rec.Source != testSource || rec.Kind != KindWithdraw || rec.From != got.From() || rec.All || rec.Recipient.Address != dest {
		t.Errorf("record %+v", rec)
	}
	if _, err := got.SendRequest(); !errors.Is(err, ErrUnparsedPayment) {
		t.Errorf("a withdrawal as a send: %v", err)
	}

	f = newFixture(t)
	withPayments(f)
	if _, err := f.run(t, "withdraw_all", "withdraw everything to "+dest, `{"to":"`+dest+`"}`); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0x1111111111111111111111111111111111111111": "USDC", "0x2222222222222222222222222222222222222222": "ETH"}
	if len(f.chain.requests) != len(want) {
		t.Fatalf("%d requests reached the chain, want %d", len(f.chain.requests), len(want))
	}
	for _, r := range f.chain.requests {
		if r.Kind() != KindWithdraw || r.Tool() != "withdraw_all" || !r.All() || r.Amount().Sign() != 0 || r.Asset().Symbol != want[r.From()] || r.Token() != tokenOn(t, chains.Base, want[r.From()]) ||
			r.Recipient().Address != dest || r.IdempotencyKey() != "key-1/base/"+r.From() || r.AmountText() != "all" {
			t.Errorf("request %+v", r)
		}
	}
}

// TestPaymentBoundToTheConnectorsAsset: a payment's asset is bound to
// the chain's connector's own descriptor at the tool boundary; an asset
// the connector does not carry (here, a node configured without USDC on
// base) is refused there, and nothing reaches the chain.
func TestPaymentBoundToTheConnectorsAsset(t *testing.T) {
	f := newFixture(t)
	f.chain.carries = map[chains.ID][]chains.Asset{chains.Base: fakeAssets(chains.Base)[:1]}
	_, err := f.run(t, "send_payment", "send bob 1 USDC on base", `{"recipient":"bob","amount":"1","asset":"USDC","chain":"base"}`)
	if !errors.Is(err, chains.ErrUnknownAsset) || !strings.Contains(err.Error(), "nothing was signed") {
		t.Fatalf("send in an asset the connector does not carry: %v; want ErrUnknownAsset, nothing signed", err)
	}
	if len(f.chain.requests) != 0 || len(f.chain.moneyMoves()) != 0 {
		t.Fatalf("requests %v reached the chain, moves %v", f.chain.requests, f.chain.moneyMoves())
	}
	if f.chain.assetLists != 1 {
		t.Errorf("the chain's assets were listed %d times, want once", f.chain.assetLists)
	}
}

// tokenOn is the fake connector's descriptor of symbol on c.
func tokenOn(t *testing.T, c chains.ID, symbol string) chains.Asset {
	t.Helper()
	a, err := chains.AssetBySymbol(fakeAssets(c), symbol)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestBadPaymentInputNothingSigned: a payment tool's bad argument is
// refused once, at the boundary, with a message that names it (once), and
// no request reaches the chain: nothing is signed or recorded.
func TestBadPaymentInputNothingSigned(t *testing.T) {
	const badInvoice = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	cases := []struct {
		name, tool, text, args string
		is                     error
		says                   string
	}{
		{"unknown chain", "send_payment", "send 1 to bob", `{"recipient":"bob","amount":"1","chain":"bitcoin"}`, ErrInvalidArgs, `got "bitcoin"`},
		{"chain not deployed", "send_payment", "send 1 to bob", `{"recipient":"bob","amount":"1","chain":"ethereum"}`, ErrInvalidArgs, "not deployed on ethereum"},
		{"asset not on chain", "send_payment", "send 1 XLM to bob", `{"recipient":"bob","amount":"1","asset":"XLM","chain":"base"}`, chains.ErrUnknownAsset, `"XLM" on base`},
		{"asset nowhere", "pay_agent", "pay bob 1 DOGE", `{"agent_name":"bob","amount":"1","asset":"DOGE"}`, chains.ErrUnknownAsset, `"DOGE"`},
		{"exponent", "send_payment", "send 1e3 to bob", `{"recipient":"bob","amount":"1e3"}`, chains.ErrInvalidAmount, `"1e3"`},
		{"negative", "pay_agent", "pay bob -1", `{"agent_name":"bob","amount":"-1"}`, chains.ErrInvalidAmount, `"-1"`},
		{"zero", "send_payment", "send 0 to bob", `{"recipient":"bob","amount":"0"}`, chains.ErrInvalidAmount, "greater than zero"},
		{"too precise", "send_payment", "send 0.0000001 USDC to bob", `{"recipient":"bob","amount":"0.0000001","asset":"USDC"}`, chains.ErrInvalidAmount, "more than 6 decimal places"},
		{"plain address", "send_payment", "send 1", `{"recipient":"0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed","amount":"1"}`, ErrInvalidArgs, "is a plain address"},
		{"bad meta-address", "send_payment", "send 1", `{"recipient":"st:eth:0x1234","amount":"1"}`, chains.ErrInvalidAddress, "4 hex digits, want 132"},
		{"unknown agent", "pay_agent", "pay zoe 1", `{"agent_name":"zoe","amount":"1"}`, ErrUnknownRecipient, "zoe.veil"},
		{"invoice amount differs", "pay_invoice", "pay invoice " + badInvoice, `{"invoice":"` + badInvoice + `","amount":"3"}`, ErrInvoiceNotPayable, "not the 3 you stated"},
		{"withdraw to a bad address", "withdraw", "withdraw to 0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", `{"from":"0x1111111111111111111111111111111111111111","to":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"}`, chains.ErrInvalidAddress, "EIP-55"},
		{"withdraw a bad amount", "withdraw", "withdraw 1,5 to " + dest, `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `","amount":"1,5"}`, chains.ErrInvalidAmount, `"1,5"`},
		{"withdraw more than held", "withdraw", "withdraw 6 to " + dest, `{"from":"0x1111111111111111111111111111111111111111","to":"` + dest + `","amount":"6"}`, chains.ErrInsufficientFunds, "(5 USDC)"},
		{"withdraw_all to a bad address", "withdraw_all", "withdraw everything to 0x12", `{"to":"0x12"}`, chains.ErrInvalidAddress, `"0x12"`},
		{"invoice amount malformed", "pay_invoice", "pay invoice " + badInvoice, `{"invoice":"` + badInvoice + `","amount":"2,5"}`, ErrInvoiceNotPayable, "not the 2,5 you stated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, l := invoiceFixture(t)
			l.all[badInvoice] = pendingInvoice(t, badInvoice, "shop", "2.5", "USDC")
			withPayments(f)
			res, err := f.run(t, c.tool, c.text, c.args)
			if err == nil || res != nil {
				t.Fatalf("got %+v, %v; want refused", res, err)
			}
			if !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
			if n := strings.Count(err.Error(), c.says); n != 1 {
				t.Errorf("error %q names %q %d times, want once", err, c.says, n)
			}
			if len(f.chain.requests) != 0 || len(f.chain.moneyMoves()) != 0 {
				t.Errorf("a request reached the chain: %+v", f.chain.requests)
			}
		})
	}
}

// TestStoredPayment: a schedule's or an approval's stored payment is read
// back once into its request, or refused (nothing to sign); Named changes
// only the label.
func TestStoredPayment(t *testing.T) {
	bob := PaymentRecipient{Name: "bob.veil", Address: "st:eth:0xbob"}
	cases := []struct {
		name           string
		chain          chains.ID
		symbol, amount string
		to             PaymentRecipient
		key            string
		is             error
		asset, units   string
	}{
		{"native by default", chains.Base, "", "0.5", bob, "k", nil, "ETH", "500000000000000000"},
		{"token", chains.Base, "usdc", "12.25", bob, "k", nil, "USDC", "12250000"},
		{"stellar", chains.Stellar, "XLM", "3", bob, "k", nil, "XLM", "30000000"},
		{"unknown asset", chains.Base, "DOGE", "1", bob, "k", chains.ErrUnknownAsset, "", ""},
		{"bad amount", chains.Base, "ETH", "1e3", bob, "k", chains.ErrInvalidAmount, "", ""},
		{"zero amount", chains.Base, "ETH", "0", bob, "k", chains.ErrInvalidAmount, "", ""},
		{"unknown chain", chains.ID("bitcoin"), "", "1", bob, "k", chains.ErrUnknownChain, "", ""},
		{"no address", chains.Base, "ETH", "1", PaymentRecipient{Name: "bob.veil"}, "k", ErrUnparsedPayment, "", ""},
		{"no key", chains.Base, "ETH", "1", bob, "", ErrUnparsedPayment, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sched := PaymentSource{Type: SourceSchedule, ID: "sch-1"}
			pr, err := StoredPayment(sched, c.chain, c.symbol, c.amount, c.to, c.key)
			if c.is != nil {
				if !errors.Is(err, c.is) || pr.Parsed() {
					t.Fatalf("StoredPayment = %+v, %v; want %v", pr, err, c.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Read back, it is bound to the connector's asset where it
			// runs; unbound, nothing is signed.
			if _, err := pr.SendRequest(); !errors.Is(err, ErrUnparsedPayment) {
				t.Fatalf("unbound request: %v; want ErrUnparsedPayment", err)
			}
			if pr, err = pr.Bind(fakeAssets(c.chain)); err != nil {
				t.Fatal(err)
			}
			send, err := pr.SendRequest()
			if err != nil || pr.Tool() != "schedule" || pr.Source() != sched || pr.Record().Source != sched || pr.Kind() != KindSendPayment || send.Chain != c.chain || send.Asset != tokenOn(t, c.chain, c.asset) ||
				send.Amount.Units().String() != c.units || send.To != c.to.Address || send.IdempotencyKey != c.key {
				t.Fatalf("request %+v, signing request %+v, %v", pr, send, err)
			}
			inv, err := StoredInvoicePayment(PaymentSource{Type: SourceApproval, ID: "ap-1"}, c.chain, c.symbol, c.amount, c.to, c.key)
			if err == nil {
				inv, err = inv.Bind(fakeAssets(c.chain))
			}
			if isend, serr := inv.SendRequest(); err != nil || serr != nil || inv.Kind() != KindPayInvoice || inv.Tool() != "approval" || !reflect.DeepEqual(isend, send) {
				t.Fatalf("invoice request %+v (%v), signing request %+v (%v)", inv, err, isend, serr)
			}
			named := pr.Named("st:eth:0xb…ob")
			if named.Recipient().Name != "st:eth:0xb…ob" || pr.Recipient().Name != c.to.Name {
				t.Fatalf("Named: %+v (was %+v)", named.Recipient(), pr.Recipient())
			}
			if again, _ := named.SendRequest(); !reflect.DeepEqual(again, send) {
				t.Fatalf("Named changed what is paid: %+v, was %+v", again, send)
			}
		})
	}
}

// A withdrawal kept to be sent later (one that waited on its gas funding)
// is read back from its records into exactly the request the tool made:
// the same signing request and record, of part or of everything; what the
// records cannot make a withdrawal of is refused before anything.
func TestStoredWithdrawal(t *testing.T) {
	p := Payment{Chain: chains.Base, StealthAddress: "0x1111111111111111111111111111111111111111", Asset: "USDC", Balance: "5"}
	to := PaymentRecipient{Address: "0x2222222222222222222222222222222222222222"}
	src := PaymentSource{Type: SourceConversation, ID: "conv-1"}
	asset := paymentAsset(p)
	part, err := asset.Parse("1.5")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		amount string
		all    bool
		want   PaymentRequest
	}{
		{"part", "1.5", false, withdrawal("withdraw", p, asset, part, false, to.Address, "k", src)},
		{"everything", "0", true, withdrawal("withdraw_all", p, asset, chains.Amount{}, true, to.Address, "k", src)},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := StoredWithdrawal(src, p, c.amount, c.all, to, "k")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := got.WithdrawRequest(); !errors.Is(err, ErrUnparsedPayment) {
				t.Fatalf("unbound stored withdrawal: %v; want ErrUnparsedPayment", err)
			}
			if got, err = got.Bind(fakeAssets(p.Chain)); err != nil {
				t.Fatal(err)
			}
			want, err := c.want.Bind(fakeAssets(p.Chain))
			if err != nil {
				t.Fatal(err)
			}
			gw, err1 := got.WithdrawRequest()
			ww, err2 := want.WithdrawRequest()
			if err1 != nil || err2 != nil || !reflect.DeepEqual(gw, ww) || !reflect.DeepEqual(got.Record(), c.want.Record()) {
				t.Fatalf("stored withdrawal %+v %+v (%v); want %+v %+v (%v)", gw, got.Record(), err1, ww, c.want.Record(), err2)
			}
		})
	}
	if _, err := StoredWithdrawal(src, p, "1e3", false, to, "k"); !errors.Is(err, chains.ErrInvalidAmount) {
		t.Fatalf("bad amount: %v", err)
	}
	if r, err := StoredWithdrawal(src, p, "1", false, to, ""); !errors.Is(err, ErrUnparsedPayment) || r.Parsed() {
		t.Fatalf("no key: %+v %v", r, err)
	}
}
