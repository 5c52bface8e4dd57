//go:build !nodevnet

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/internal/npmtest"
)

// TestX402FetchClientPaysInvoice: the reference client (@x402/fetch with
// @x402/evm's exact scheme, viem signing) pays a Veil invoice's x402
// resource on its own: it reads Veil's PAYMENT-REQUIRED, signs, retries,
// and gets 200 with a PAYMENT-RESPONSE it decodes; the invoice is paid once.
func TestX402FetchClientPaysInvoice(t *testing.T) {
	dir := npmtest.Install(t, filepath.Join("testdata", "x402"))
	e := newMoneyEnv(t)
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	res, err := e.conn.Fund(context.Background(), a.Address)
	if err != nil {
		t.Fatal(err)
	}
	e.waitMined(t, res.TxHash)
	inv := e.createInvoice(t, a.ID, `create an invoice for 2.5 USDC for "api access"`)
	p := e.newPayer(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs")
	cmd.Dir = dir
	_, token, _ := e.conn.PaymentTarget("USDC")
	cmd.Env = append(os.Environ(), "URL="+e.url+"/pay/"+inv.ID+"/x402", "PAYER_KEY="+hexutil.Encode(crypto.FromECDSA(p.key)),
		"NETWORK=eip155:"+e.chainID.String(), "TOKEN="+token, "MAX_UNITS=3000000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		Status     int    `json:"status"`
		Body       string `json:"body"`
		Settlement *struct {
			Success     bool   `json:"success"`
			Transaction string `json:"transaction"`
			Payer       string `json:"payer"`
			Network     string `json:"network"`
		} `json:"settlement"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if got.Status != 200 || got.Settlement == nil || !got.Settlement.Success || !strings.EqualFold(got.Settlement.Payer, p.addr.Hex()) ||
		got.Settlement.Network != fmt.Sprintf("eip155:%s", e.chainID) {
		t.Fatalf("the reference client got %+v", got)
	}
	if b := e.usdc(t, inv.PayTo); b != "2.5" {
		t.Fatalf("the invoice's address holds %s USDC", b)
	}
	var view struct {
		Status string  `json:"status"`
		TxHash *string `json:"txHash"`
	}
	r := e.do("GET", "/invoice/"+inv.ID, e.key, nil)
	r.decode(t, &view)
	if view.Status != "paid" || view.TxHash == nil || !strings.EqualFold(*view.TxHash, got.Settlement.Transaction) {
		t.Fatalf("invoice after the reference client paid: %s", r.body)
	}
	if n := countType(e.notes(t, a.ID), "invoice_paid"); n != 1 {
		t.Fatalf("%d invoice_paid notifications, want 1", n)
	}
}

// TestX402AgentPaysExpressServer: a Veil agent pays a resource served by
// the reference server (@x402/express with a local facilitator from
// @x402/core and @x402/evm, settling on the same devnet) through its
// fetch_paid tool (over MCP): the agent's account signs the EIP-3009
// authorization as a spend, the facilitator settles it, the agent gets the
// body and the settlement, and the tokens moved from the agent to payTo.
// Above the maximum, nothing is signed and nothing moves.
func TestX402AgentPaysExpressServer(t *testing.T) {
	dir := npmtest.Install(t, filepath.Join("testdata", "x402"))
	e := newMoneyEnv(t)
	ctx := context.Background()
	a := e.create(t, newEVMOwner(t), "alice", "ethereum")
	res, err := e.conn.Fund(ctx, a.Address)
	if err != nil {
		t.Fatal(err)
	}
	e.waitMined(t, res.TxHash)
	facilitator := e.newPayer(t) // pays the settlement's gas
	payKey, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	payTo := crypto.PubkeyToAddress(payKey.PublicKey).Hex()
	_, token, _ := e.conn.PaymentTarget("USDC")
	dom, err := e.conn.AuthorizationDomain(ctx, "USDC")
	if err != nil {
		t.Fatal(err)
	}

	nctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(nctx, "node", "server.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RPC_URL="+e.rpc, "CHAIN_ID="+e.chainID.String(), "FACILITATOR_KEY="+hexutil.Encode(crypto.FromECDSA(facilitator.key)),
		"TOKEN="+token, "TOKEN_NAME="+dom.Name, "TOKEN_VERSION="+dom.Version, "PAY_TO="+payTo, "AMOUNT=250000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	ready := make(chan int, 1)
	go func() {
		var hello struct {
			Port int `json:"port"`
		}
		if err := json.NewDecoder(stdout).Decode(&hello); err == nil {
			ready <- hello.Port
		}
		close(ready)
	}()
	var port int
	select {
	case p, ok := <-ready:
		if !ok {
			t.Fatalf("node server.mjs did not start: %s", stderr.String())
		}
		port = p
	case <-time.After(2 * time.Minute):
		t.Fatalf("node server.mjs did not start in time: %s", stderr.String())
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/weather", port)

	s, err := e.mcpSession(t, a.ID, e.key)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := e.usdc(t, a.Address)

	// Above the maximum: refused before anything is signed.
	out, failed := callTool(t, s, "fetch_paid", map[string]any{"url": url, "max_amount": "0.1"}, nil)
	if !failed || !strings.Contains(out, "more than the maximum") {
		t.Fatalf("above the maximum: failed=%v %s", failed, out)
	}
	if got := e.usdc(t, a.Address); got != before {
		t.Fatalf("the agent's USDC moved: %s → %s", before, got)
	}

	out, failed = callTool(t, s, "fetch_paid", map[string]any{"url": url, "max_amount": "1"}, nil)
	if failed {
		t.Fatalf("fetch_paid failed: %s\nserver: %s", out, stderr.String())
	}
	var got struct {
		Status     int    `json:"status"`
		Paid       bool   `json:"paid"`
		Amount     string `json:"amount"`
		Body       string `json:"body"`
		Settlement *struct {
			Success     bool   `json:"success"`
			Transaction string `json:"transaction"`
		} `json:"settlement"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("result %s: %v", out, err)
	}
	if got.Status != 200 || !got.Paid || got.Amount != "0.25" || !strings.Contains(got.Body, "sunny") || got.Settlement == nil || !got.Settlement.Success {
		t.Fatalf("result %s", out)
	}
	e.waitMined(t, got.Settlement.Transaction)
	if b := e.usdc(t, payTo); b != "0.25" {
		t.Fatalf("payTo holds %s USDC, want 0.25", b)
	}
	want := new(big.Rat)
	want.SetString(before)
	want.Sub(want, big.NewRat(1, 4))
	if after, _ := new(big.Rat).SetString(e.usdc(t, a.Address)); after == nil || after.Cmp(want) != 0 {
		t.Fatalf("the agent holds %s USDC, want %s", e.usdc(t, a.Address), want.FloatString(6))
	}
}
