//go:build !nodevnet

package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
)

// needX402Node finds node and npm and installs the reference x402 packages
// of testdata/x402 (pinned by its package-lock.json) when node_modules is
// missing. Without node the test skips, except in CI (CI=true), where it
// fails.
func needX402Node(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (apt-get install -y nodejs npm); the x402 interop test needs it in CI", bin)
			}
			t.Skipf("%s is not installed (apt-get install -y nodejs npm)", bin)
		}
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "x402"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	return dir
}

// TestX402FetchClientPaysInvoice: the reference client (@x402/fetch with
// @x402/evm's exact scheme, viem signing) pays a Veil invoice's x402
// resource on its own: it reads Veil's PAYMENT-REQUIRED, signs, retries,
// and gets 200 with a PAYMENT-RESPONSE it decodes; the invoice is paid once.
func TestX402FetchClientPaysInvoice(t *testing.T) {
	dir := needX402Node(t)
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
