package main

import (
	"encoding/json"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains/walletsig"
)

// The chat tools reach every chain through the real binary: one agent pays
// another on all six devnets (native and token payments), the payee's
// scanners find each payment once, and the other chain tools answer.
func TestChatToolsOnEveryChain(t *testing.T) {
	p := start(t, t.TempDir())
	key := keyRE.FindString(p.stdout.String())
	base := "http://" + p.addr
	create := func(name string) string {
		owner, _ := crypto.GenerateKey()
		wallet := walletsig.EVMAddress(&owner.PublicKey)
		msg := walletsig.CreateMessage(name, "all", wallet, time.Now())
		status, body := call(t, "POST", base+"/agent/create", key, map[string]string{
			"name": name, "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
		})
		if status != 201 {
			t.Fatalf("create %s = %d %s", name, status, body)
		}
		var a struct{ ID string }
		_ = json.Unmarshal(body, &a)
		return a.ID
	}
	payer, payee := create("payer-all"), create("payee-all")
	chat := func(agentID, msg, tool string) string {
		t.Helper()
		status, body := call(t, "POST", base+"/agent/"+agentID+"/chat", key, map[string]string{"message": msg})
		var r struct {
			ToolCalls []struct{ Name, Status, Detail string }
		}
		_ = json.Unmarshal(body, &r)
		if status != 200 || len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != tool || r.ToolCalls[0].Status != "success" {
			t.Fatalf("%q = %d %s", msg, status, body)
		}
		return r.ToolCalls[0].Detail
	}
	payments := []string{
		"send 1 ZEN to payee-all on horizen",
		"send 0.001 ETH to payee-all on ethereum",
		"send 1 USDC to payee-all on polygon",
		"send 0.001 ETH to payee-all on base",
		"send 1 XLM to payee-all",
		"send 0.01 SOL to payee-all",
	}
	for _, m := range payments {
		d := chat(payer, m, "send_payment")
		var res struct{ TxHash, TxLink, Chain, Amount string }
		if err := json.Unmarshal([]byte(d), &res); err != nil || res.TxHash == "" {
			t.Fatalf("%q detail %s", m, d)
		}
		// The link opens the console's explorer page of the devnet, and
		// the explorer reads the payment there (docs/console.md).
		u, err := url.Parse(res.TxLink)
		if err != nil || u.Path != "/console/explorer/tx/"+res.TxHash || u.Query().Get("chain") != res.Chain {
			t.Fatalf("%q: txLink %q", m, res.TxLink)
		}
		status, body := call(t, "GET", base+"/console/api/explorer/tx/"+url.PathEscape(res.TxHash)+"?chain="+res.Chain, "", nil)
		var tx struct {
			Hash, Status  string
			Announcements []struct{ Amount string }
		}
		if err := json.Unmarshal(body, &tx); status != 200 || err != nil || tx.Hash != res.TxHash || tx.Status != "success" ||
			len(tx.Announcements) != 1 || tx.Announcements[0].Amount != res.Amount {
			t.Fatalf("%q: explorer = %d %s", m, status, body)
		}
	}
	for _, c := range []struct{ msg, tool string }{
		{"what's my balance on polygon", "get_balance"},
		{"create an invoice for 5 USDC for the logo work", "create_invoice"},
		{"who is payee-all.veil", "resolve_name"},
		{"privacy check", "privacy_check"},
		{"fund my wallet on solana", "fund_wallet"},
	} {
		chat(payer, c.msg, c.tool)
	}
	// The payee learns of all six payments, once each, whichever scanner
	// (background or on demand) sees them first.
	chat(payee, "scan for payments", "scan_payments")
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body := call(t, "GET", base+"/agent/"+payee+"/notifications", key, nil)
		var inbox struct {
			Notifications []struct{ Type, Body string }
		}
		_ = json.Unmarshal(body, &inbox)
		received := 0
		for _, n := range inbox.Notifications {
			if n.Type == "payment_received" {
				received++
			}
		}
		if received == len(payments) {
			break
		}
		if received > len(payments) || time.Now().After(deadline) {
			t.Fatalf("payee has %d payment_received notifications, want %d: %s", received, len(payments), body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.stop(t, syscall.SIGTERM)
}
