package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/agent/policy"
	"github.com/veilhq/veil/chains/walletsig"
)

// An approved payment whose process dies right after the broadcast
// (failpoint approval.after-send) is completed by the next process on the
// same data directory, once: the agent's account sends exactly one
// transaction for it.
func TestApprovedPaymentSurvivesACrash(t *testing.T) {
	data := t.TempDir()
	t.Setenv("VEIL_FAILPOINTS", "approval.after-send=1")
	p := start(t, data)
	key := keyRE.FindString(p.stdout.String())
	base := "http://" + p.addr
	m := ethRPCRE.FindStringSubmatch(p.stderr.all.String())
	if m == nil {
		t.Fatalf("no ethereum devnet RPC in the log: %s", p.stderr.all.String())
	}
	rpc := m[1]

	create := func(name string) (string, string, *walletOwner) {
		t.Helper()
		o := newWalletOwner(t)
		msg := walletsig.CreateMessage(name, "ethereum", o.wallet, time.Now())
		status, body := call(t, "POST", base+"/agent/create", key, map[string]string{
			"name": name, "chain": "ethereum", "wallet": o.wallet, "signature": walletsig.SignEVM(o.key, msg), "message": msg,
		})
		if status != 201 {
			t.Fatalf("create %s = %d %s", name, status, body)
		}
		var c struct{ ID, Address string }
		_ = json.Unmarshal(body, &c)
		return c.ID, c.Address, o
	}
	alice, aliceAddr, owner := create("crashpay")
	create("crashee")
	if status, body := call(t, "PUT", base+"/agent/"+alice+"/policy", key, signedPolicy(alice, owner)); status != 200 {
		t.Fatalf("policy = %d %s", status, body)
	}
	status, body := call(t, "POST", base+"/agent/"+alice+"/chat", key, map[string]string{"message": "send 0.001 ETH to crashee"})
	var reply struct {
		ToolCalls []struct{ Status, Detail string }
	}
	_ = json.Unmarshal(body, &reply)
	if status != 200 || len(reply.ToolCalls) != 1 || !strings.Contains(reply.ToolCalls[0].Detail, "pending_approval") {
		t.Fatalf("chat = %d %s", status, body)
	}
	var held struct{ ApprovalID string }
	_ = json.Unmarshal([]byte(reply.ToolCalls[0].Detail), &held)

	eth, err := ethclient.Dial(rpc)
	if err != nil {
		t.Fatal(err)
	}
	before, err := eth.PendingNonceAt(context.Background(), common.HexToAddress(aliceAddr))
	eth.Close()
	if err != nil {
		t.Fatal(err)
	}

	// The approval: the process dies after the broadcast, before the
	// outcome is stored.
	am := walletsig.ApprovalMessage(held.ApprovalID, alice, owner.wallet, false, time.Now())
	if status, body := callNoFail(base+"/agent/"+alice+"/approvals/"+held.ApprovalID, key, map[string]string{"decision": "approve", "message": am, "signature": walletsig.SignEVM(owner.key, am)}); status == 200 {
		t.Fatalf("approve answered 200 %s: the failpoint did not fire", body)
	}
	for line := range p.stderr.lines {
		p.stderr.all.WriteString(line + "\n")
	}
	if err := p.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "137") {
		t.Fatalf("veild exit: %v", err)
	}

	t.Setenv("VEIL_FAILPOINTS", "")
	p2 := start(t, data)
	base = "http://" + p2.addr
	var ap struct{ Status, TxHash, Error string }
	deadline := time.Now().Add(60 * time.Second)
	for ap.TxHash == "" && ap.Error == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the approved payment was not completed after the restart: %+v", ap)
		}
		_, body := call(t, "GET", base+"/agent/"+alice+"/approvals/"+held.ApprovalID, key, nil)
		_ = json.Unmarshal(body, &ap)
		time.Sleep(100 * time.Millisecond)
	}
	if ap.Status != "approved" || ap.TxHash == "" {
		t.Fatalf("after the restart: %+v", ap)
	}
	m = ethRPCRE.FindStringSubmatch(p2.stderr.all.String())
	if m == nil {
		t.Fatal("no ethereum devnet RPC after the restart")
	}
	eth, err = ethclient.Dial(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer eth.Close()
	after, err := eth.PendingNonceAt(context.Background(), common.HexToAddress(aliceAddr))
	if err != nil {
		t.Fatal(err)
	}
	if after != before+1 {
		t.Fatalf("the agent sent %d transactions for one approved payment", after-before)
	}
	if _, pending, err := eth.TransactionByHash(context.Background(), common.HexToHash(ap.TxHash)); err != nil {
		t.Fatalf("tx %s: pending=%v %v", ap.TxHash, pending, err)
	}
	p2.stop(t, syscall.SIGTERM)
}

type walletOwner struct {
	key    *ecdsa.PrivateKey
	wallet string
}

func newWalletOwner(t *testing.T) *walletOwner {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return &walletOwner{key: k, wallet: walletsig.EVMAddress(&k.PublicKey)}
}

// callNoFail is a POST whose connection may die with the server: status 0
// then.
func callNoFail(url, key string, body any) (int, string) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// signedPolicy is a PUT /agent/:id/policy body holding ETH payments above
// 0.0001 for approval, signed by o.
func signedPolicy(agentID string, o *walletOwner) map[string]any {
	pol := policy.Policy{Approvals: policy.Approvals{ApprovalAbove: map[string]string{"ETH": "0.0001"}}}
	hash, _ := policy.Hash(pol)
	msg := walletsig.PolicyMessage(hash, agentID, o.wallet, time.Now())
	return map[string]any{"policy": pol, "message": msg, "signature": walletsig.SignEVM(o.key, msg)}
}
