//go:build !nodevnet

package httpapi_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/eip3009"
	"github.com/veilhq/veil/chains/evm/x402"
	"github.com/veilhq/veil/runtime/audit"
)

// x402Sign is what an x402 client does with req: an EIP-3009 authorization
// from key's address, after mod changed it, signed over req's domain.
func x402Sign(t *testing.T, key *ecdsa.PrivateKey, req x402.Requirements, nonce byte, mod func(*chains.TransferAuthorization)) string {
	t.Helper()
	chainID, err := x402.ChainID(req.Network)
	if err != nil {
		t.Fatal(err)
	}
	amt, _ := new(big.Int).SetString(req.Amount, 10)
	a := chains.TransferAuthorization{Name: req.Extra.Name, Version: req.Extra.Version, ChainID: chainID, Contract: req.Asset,
		From: crypto.PubkeyToAddress(key.PublicKey).Hex(), To: req.PayTo, Value: amt, ValidAfter: big.NewInt(0),
		ValidBefore: big.NewInt(time.Now().Unix() + req.MaxTimeoutSeconds), Nonce: [32]byte{nonce, 0x40, 0x02}}
	if mod != nil {
		mod(&a)
	}
	sig, err := eip3009.SignWithKey(a, key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := x402.Encode(x402.PayloadOf(req, nil, a, sig))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (e *moneyEnv) usdc(t *testing.T, addr string) string {
	t.Helper()
	b, err := e.conn.Balance(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	return b.Tokens["USDC"]
}

// required reads a 402's PAYMENT-REQUIRED header.
func required(t *testing.T, r response) x402.PaymentRequired {
	t.Helper()
	var pr x402.PaymentRequired
	if r.status != 402 {
		t.Fatalf("status %d, want 402: %s", r.status, r.body)
	}
	if err := x402.Decode(r.header.Get(x402.HeaderRequired), &pr); err != nil {
		t.Fatalf("PAYMENT-REQUIRED: %v", err)
	}
	return pr
}

// TestInvoiceX402: a Veil invoice in USDC answers its x402 resource with a
// 402 whose one requirement is exactly the invoice (its one-time address,
// its amount, its token and chain). Every bad payment is refused with a
// clear error and moves nothing; a good one is settled on chain by the
// payee's account, the invoice flips to paid with one invoice_paid, and the
// answer carries PAYMENT-RESPONSE. The same authorization again gets the
// same receipt; any other payment to the paid invoice is refused; a used
// nonce is refused on another invoice.
func TestInvoiceX402(t *testing.T) {
	e := newMoneyEnv(t)
	ctx := context.Background()
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	res, err := e.conn.Fund(ctx, a.Address) // the payee's account pays the settlement's gas
	if err != nil {
		t.Fatal(err)
	}
	e.waitMined(t, res.TxHash)
	inv := e.createInvoice(t, a.ID, `create an invoice for 2.5 USDC for "api access"`)
	if inv.Asset != "USDC" {
		t.Fatalf("invoice %+v", inv)
	}
	path := "/pay/" + inv.ID + "/x402"

	pr := required(t, e.do("GET", path, "", nil))
	if len(pr.Accepts) != 1 || pr.X402Version != 2 || pr.Resource.URL != inv.PaymentLink+"/x402" {
		t.Fatalf("PAYMENT-REQUIRED %+v", pr)
	}
	req := pr.Accepts[0]
	_, token, _ := e.conn.PaymentTarget("USDC")
	if req.Scheme != "exact" || req.Network != "eip155:"+e.chainID.String() || req.Amount != "2500000" ||
		!strings.EqualFold(req.PayTo, inv.PayTo) || !strings.EqualFold(req.Asset, token) ||
		req.Extra == nil || req.Extra.Name != "USD Coin (Veil devnet)" || req.Extra.Version != "2" {
		t.Fatalf("requirement %+v, want the invoice %+v", req, inv)
	}

	p := e.newPayer(t)
	broke, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	payerBefore := e.usdc(t, p.addr.Hex())
	for _, tc := range []struct {
		name, header, want string
	}{
		{"malformed header", "not-base64!", "invalid_payload"},
		{"not a payment", "eyJ4NDAyVmVyc2lvbiI6Mn0=", "invalid_exact_evm_scheme"},
		{"wrong amount", x402Sign(t, p.key, req, 1, func(a *chains.TransferAuthorization) { a.Value = big.NewInt(1_000_000) }), "value_mismatch"},
		{"wrong payTo", x402Sign(t, p.key, req, 2, func(a *chains.TransferAuthorization) { a.To = p.addr.Hex() }), "recipient_mismatch"},
		{"expired", x402Sign(t, p.key, req, 3, func(a *chains.TransferAuthorization) { a.ValidBefore = big.NewInt(time.Now().Unix() - 60) }), "valid_before"},
		{"another token", x402Sign(t, p.key, req, 4, func(a *chains.TransferAuthorization) { a.Contract = p.addr.Hex() }), "invalid_exact_evm_signature"},
		{"payer without funds", x402Sign(t, broke, req, 5, nil), "insufficient_balance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doHeaders("GET", path, "", nil, x402.HeaderSignature, tc.header)
			again := required(t, r)
			msg, _ := r.errorBody(t)
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "nothing was moved") || again.Error == "" {
				t.Fatalf("message %q (error %q), want %s", msg, again.Error, tc.want)
			}
			if got := e.usdc(t, inv.PayTo); got != "0" {
				t.Fatalf("the invoice's address holds %s USDC", got)
			}
		})
	}
	if got := e.usdc(t, p.addr.Hex()); got != payerBefore {
		t.Fatalf("the payer's USDC moved: %s → %s", payerBefore, got)
	}

	good := x402Sign(t, p.key, req, 9, nil)
	r := e.doHeaders("GET", path, "", nil, x402.HeaderSignature, good)
	if r.status != 200 {
		t.Fatalf("paying = %d %s", r.status, r.body)
	}
	var settled x402.SettleResponse
	if err := x402.Decode(r.header.Get(x402.HeaderResponse), &settled); err != nil || !settled.Success || settled.Transaction == "" ||
		settled.Payer != p.addr.Hex() || settled.Network != req.Network {
		t.Fatalf("PAYMENT-RESPONSE %+v (%v)", settled, err)
	}
	if got := e.usdc(t, inv.PayTo); got != "2.5" {
		t.Fatalf("the invoice's address holds %s USDC", got)
	}
	var view struct {
		Status string  `json:"status"`
		TxHash *string `json:"txHash"`
	}
	r.decode(t, &view)
	if view.Status != "paid" || view.TxHash == nil || !strings.EqualFold(*view.TxHash, settled.Transaction) {
		t.Fatalf("answer %s", r.body)
	}

	// The payer's retry of the same authorization: the same receipt.
	r = e.doHeaders("GET", path, "", nil, x402.HeaderSignature, good)
	var again x402.SettleResponse
	if r.status != 200 || x402.Decode(r.header.Get(x402.HeaderResponse), &again) != nil || again.Transaction != settled.Transaction {
		t.Fatalf("retry = %d %s", r.status, r.body)
	}
	// Another payment to the paid invoice: refused, nothing moves.
	r = e.doHeaders("GET", path, "", nil, x402.HeaderSignature, x402Sign(t, p.key, req, 10, nil))
	if msg, status := r.errorBody(t); status != 409 || !strings.Contains(msg, "already paid") {
		t.Fatalf("a second payment = %d %q", status, msg)
	}
	if got := e.usdc(t, inv.PayTo); got != "2.5" {
		t.Fatalf("the invoice's address holds %s USDC after a second payment", got)
	}
	if n := countType(e.notes(t, a.ID), "invoice_paid"); n != 1 {
		t.Fatalf("%d invoice_paid notifications, want 1", n)
	}
	// One audit record of the settlement (not of the retry or the refusal).
	if n := len(e.moneyRecords(t, audit.ActionInvoiceX402, a.ID, inv.ID, settled.Transaction)); n != 1 {
		t.Fatalf("%d invoice.x402 audit records, want 1", n)
	}

	// A used nonce on another invoice: refused before the chain is asked.
	inv2 := e.createInvoice(t, a.ID, `create an invoice for 2.5 USDC for "more access"`)
	req2 := required(t, e.do("GET", "/pay/"+inv2.ID+"/x402", "", nil)).Accepts[0]
	r = e.doHeaders("GET", "/pay/"+inv2.ID+"/x402", "", nil, x402.HeaderSignature, x402Sign(t, p.key, req2, 9, nil))
	if msg, _ := r.errorBody(t); r.status != 402 || !strings.Contains(msg, "nonce_already_used") {
		t.Fatalf("a used nonce = %d %q", r.status, msg)
	}

	// Unknown invoices and invoices x402 cannot pay.
	if _, status := e.do("GET", "/pay/00000000-0000-4000-8000-000000000000/x402", "", nil).errorBody(t); status != 404 {
		t.Fatalf("unknown invoice = %d", status)
	}
	eth := e.createInvoice(t, a.ID, `create an invoice for 0.01 ETH for "gas"`)
	if msg, status := e.do("GET", "/pay/"+eth.ID+"/x402", "", nil).errorBody(t); status != 409 || !strings.Contains(msg, "x402 cannot pay") {
		t.Fatalf("ETH invoice = %d %q", status, msg)
	}
}
