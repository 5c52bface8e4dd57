//go:build !nodevnet

package main

import (
	"context"
	"encoding/json"
	"math/big"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/chains/evm/evmdeploy"
	"github.com/veilhq/veil/chains/evm/evmtest"
	"github.com/veilhq/veil/chains/walletsig"
)

// TestOperatorOnHardhat runs veild as an operator would against an EVM
// node nobody here wrote (Hardhat 2, chain id 31337) with the VEIL_*
// block `veild contracts deploy` prints: an agent created with no gas is
// told there is no faucet (not that the network is unreachable); its
// invoice, paid in USDC by a plain wallet transfer, settles although the
// node lacks eth_getBlockReceipts; and the USDC is withdrawn from the
// invoice's one-time address, which holds no ETH, with the gas paid by the
// agent's account.
func TestOperatorOnHardhat(t *testing.T) {
	n := evmtest.StartHardhat(t)
	env := strings.Split(strings.TrimSpace(n.Deployed.Env()), "\n")
	p := startEnv(t, t.TempDir(), env)
	key := keyRE.FindString(p.stdout.String())
	base := "http://" + p.addr

	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	msg := walletsig.CreateMessage("operator", "ethereum", wallet, time.Now())
	status, body := call(t, "POST", base+"/agent/create", key, map[string]string{
		"name": "operator", "chain": "ethereum", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
	})
	if status != 201 {
		t.Fatalf("create = %d %s", status, body)
	}
	var agent struct{ ID, Address string }
	_ = json.Unmarshal(body, &agent)
	chat := func(msg string) (string, string) {
		t.Helper()
		status, body := call(t, "POST", base+"/agent/"+agent.ID+"/chat", key, map[string]string{"message": msg})
		var r struct {
			ToolCalls []struct{ Name, Status, Detail string }
		}
		_ = json.Unmarshal(body, &r)
		if status != 200 || len(r.ToolCalls) != 1 {
			t.Fatalf("%q = %d %s", msg, status, body)
		}
		return r.ToolCalls[0].Status, r.ToolCalls[0].Detail
	}

	// No faucet on this network: said so, with the address to fund.
	st, detail := chat("fund my wallet")
	if st == "success" || !strings.Contains(detail, "no faucet on this network") || !strings.Contains(strings.ToLower(detail), strings.ToLower(agent.Address)) ||
		strings.Contains(detail, "unavailable") {
		t.Fatalf("fund my wallet: %s %s", st, detail)
	}
	n.Fund(t, common.HexToAddress(agent.Address))

	// An invoice, paid by a wallet's plain USDC transfer.
	st, detail = chat("create an invoice for 5 USDC for the logo work")
	var inv struct{ ID string }
	if _ = json.Unmarshal([]byte(detail), &inv); st != "success" || inv.ID == "" {
		t.Fatalf("create_invoice: %s %s", st, detail)
	}
	_, body = call(t, "GET", base+"/invoice/"+inv.ID, key, nil)
	var invoice struct{ PayTo, Status string }
	_ = json.Unmarshal(body, &invoice)
	if !common.IsHexAddress(invoice.PayTo) {
		t.Fatalf("invoice %s", body)
	}
	eth, err := ethclient.Dial(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer eth.Close()
	payerKey, _ := crypto.ToECDSA(crypto.Keccak256([]byte("hardhat invoice payer")))
	n.Fund(t, crypto.PubkeyToAddress(payerKey.PublicKey))
	payer := evmdeploy.NewAccount(eth, payerKey, big.NewInt(31337))
	payer.Poll = 20 * time.Millisecond
	usdc := n.Deployed.Tokens[0].Address
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := payer.Send(ctx, usdc, nil, bindings.NewTestToken().PackTransfer(common.HexToAddress(invoice.PayTo), big.NewInt(5_000_000))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for invoice.Status != "paid" {
		if time.Now().After(deadline) {
			t.Fatalf("invoice not settled by the background scanner: %s", body)
		}
		time.Sleep(200 * time.Millisecond)
		_, body = call(t, "GET", base+"/invoice/"+inv.ID, key, nil)
		_ = json.Unmarshal(body, &invoice)
	}
	if bal, _ := eth.BalanceAt(ctx, common.HexToAddress(invoice.PayTo), nil); bal.Sign() != 0 {
		t.Fatalf("the invoice address holds %s wei: the test needs one without gas", bal)
	}

	// Withdraw everything: the agent's account pays the gas.
	// The node outlives one run of this test (go test -count=N): the
	// destination's balance is compared with what it held before.
	dest := common.HexToAddress("0x00000000000000000000000000000000000000d7")
	destUSDC := func() *big.Int {
		out, err := eth.CallContract(ctx, ethereum.CallMsg{To: &usdc, Data: bindings.NewTestToken().PackBalanceOf(dest)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return new(big.Int).SetBytes(out)
	}
	want := new(big.Int).Add(destUSDC(), big.NewInt(5_000_000))
	st, detail = chat("withdraw everything to " + dest.Hex())
	if st != "success" || !regexp.MustCompile(`"txHash":"0x[0-9a-f]{64}"`).MatchString(detail) {
		t.Fatalf("withdraw_all: %s %s", st, detail)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		got := destUSDC()
		if got.Cmp(want) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("destination holds %s USDC units, want %s; withdraw said %s", got, want, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.stop(t, syscall.SIGTERM)
}
