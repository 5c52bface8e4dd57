package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/persistence"
)

type checkReport struct {
	slots        int
	ethTxs       int
	ledgerNonce  uint64
	registration map[string]string // the payer's, per chain
}

// verifyHistory checks the recorded history against what veild serves,
// the ethereum devnet and, once veild is stopped, the data file.
func verifyHistory(t *testing.T, c *robustClient, h *history) checkReport {
	t.Helper()
	var rep checkReport
	ctx := context.Background()

	// Every acknowledged write is there.
	for _, id := range []string{h.payer, h.payee} {
		if status, raw := c.do(t, "GET", "/agent/"+id, "", nil); status != http.StatusOK {
			t.Errorf("agent %s = %d %s", id, status, clip(raw))
		}
	}
	for _, a := range h.chats {
		status, raw := c.do(t, "GET", "/agent/"+h.payer+"/conversations/"+a.conv+"/messages", "", nil)
		var msgs []struct{ Role, Text string }
		if status != http.StatusOK || json.Unmarshal(raw, &msgs) != nil {
			t.Errorf("acknowledged chat %q (key %s): conversation %s = %d %s", a.msg, a.idem, a.conv, status, clip(raw))
			continue
		}
		asked, answered := false, false
		for _, m := range msgs {
			asked = asked || (m.Role == "user" && m.Text == a.msg)
			answered = answered || (m.Role == "agent" && m.Text == a.response)
		}
		if !asked || !answered {
			t.Errorf("acknowledged chat %q (key %s): conversation %s lacks the message (%v) or the answer %q (%v)", a.msg, a.idem, a.conv, asked, a.response, answered)
		}
	}
	if len(h.convs) > 0 {
		status, raw := c.do(t, "GET", "/agent/"+h.payee+"/conversations", "", nil)
		var list []struct{ ID string }
		if status != http.StatusOK || json.Unmarshal(raw, &list) != nil {
			t.Fatalf("list conversations = %d %s", status, clip(raw))
		}
		have := map[string]bool{}
		for _, cv := range list {
			have[cv.ID] = true
		}
		for _, id := range h.convs {
			if !have[id] {
				t.Errorf("acknowledged conversation %s lost", id)
			}
		}
	}
	for _, id := range h.invoices {
		if status, raw := c.do(t, "GET", "/invoice/"+id, "", nil); status != http.StatusOK {
			t.Errorf("acknowledged invoice %s = %d %s", id, status, clip(raw))
		}
	}
	// One schedule per acknowledged schedule chat, however often it was
	// retried.
	status, raw := c.do(t, "GET", "/agent/"+h.payer+"/schedules", "", nil)
	var list []tools.Schedule
	if status != http.StatusOK || json.Unmarshal(raw, &list) != nil {
		t.Fatalf("list schedules = %d %s", status, clip(raw))
	}
	scheduleChain := map[string]string{}
	for _, sc := range list {
		scheduleChain[sc.ID] = string(sc.Chain)
	}
	for _, a := range h.schedules {
		var sc tools.Schedule
		_ = json.Unmarshal([]byte(a.detail), &sc)
		if _, ok := scheduleChain[sc.ID]; !ok {
			t.Errorf("acknowledged schedule %s lost", sc.ID)
		}
	}
	if len(list) != len(h.schedules) {
		t.Errorf("%d schedules, %d acknowledged", len(list), len(h.schedules))
	}
	executed := 0
	for _, n := range notes(t, c, h.payer) {
		if n.Type == agent.NoteScheduleExecuted {
			executed++
		}
	}
	received := paymentNotes(t, c, h.payee)

	// The payer's transactions on ethereum, from the devnet.
	status, raw = c.do(t, "GET", "/agent/"+h.payer, "", nil)
	var payerAgent struct{ Addresses map[string]string }
	if status != http.StatusOK || json.Unmarshal(raw, &payerAgent) != nil {
		t.Fatalf("payer = %d %s", status, clip(raw))
	}
	payerEth := common.HexToAddress(payerAgent.Addresses["ethereum"])
	c.sup.mu.Lock()
	rpc := c.sup.ethRPC
	c.sup.mu.Unlock()
	ethTxs := payerTransactions(t, rpc, payerEth)
	rep.ethTxs = len(ethTxs)

	// The data file, once veild is stopped: the slots paid and the ledger.
	c.sup.stopClean(t)
	st, err := persistence.OpenBolt(filepath.Join(c.sup.data, dbFile), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.List(ctx, agent.TableScheduleRuns, persistence.Query{Prefix: h.payer + "/"})
	if err != nil {
		t.Fatal(err)
	}
	expected := map[string]string{} // chain/tx -> what paid it
	for _, p := range h.payments {
		k := p.chain + "/" + p.txHash
		if prev, dup := expected[k]; dup {
			t.Errorf("payments %s and %s share the transaction %s", prev, p.idem, k)
		}
		expected[k] = "chat " + p.idem
	}
	for _, r := range runs {
		var run agent.ScheduleRun
		if err := json.Unmarshal(r.Value, &run); err != nil {
			t.Fatal(err)
		}
		if run.Outcome != agent.RunPaid {
			t.Logf("slot %s not paid: %+v", r.Key, run)
			continue
		}
		rep.slots++
		parts := strings.Split(r.Key, "/")
		k := scheduleChain[parts[1]] + "/" + run.TxHash
		if prev, dup := expected[k]; dup {
			t.Errorf("%s and slot %s share the transaction %s", prev, r.Key, k)
		}
		expected[k] = "slot " + r.Key
	}
	if executed != rep.slots {
		t.Errorf("%d schedule_executed notifications for %d slots paid", executed, rep.slots)
	}
	// No payment twice: the payee was notified of each expected payment
	// exactly once, and of nothing else.
	seen := map[string]int{}
	for _, k := range received {
		seen[k]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("payee notified %d times of %s", n, k)
		}
		if _, ok := expected[k]; !ok {
			t.Errorf("payee received %s, which no acknowledged payment or paid slot made (a payment made twice?)", k)
		}
	}
	for k, what := range expected {
		if seen[k] == 0 {
			t.Errorf("payee never notified of %s (%s)", k, what)
		}
	}

	// No nonce reused or skipped on ethereum: every acknowledged payment
	// there is mined; the mined nonces run 0..n-1 (a chain cannot mine
	// past a gap, so a skipped nonce would leave later payments unmined);
	// and the ledger's next nonce is the chain's.
	mined := map[string]*types.Transaction{}
	for _, tx := range ethTxs {
		mined[tx.Hash().Hex()] = tx
	}
	for k, what := range expected {
		chain, hash, _ := strings.Cut(k, "/")
		if chain != "ethereum" {
			continue
		}
		if mined[hash] == nil {
			t.Errorf("%s: ethereum transaction %s not mined", what, hash)
		}
	}
	// Which intent of the connector's ledger made each transaction, to
	// name the source of one that nobody acknowledged.
	intents, err := st.List(ctx, evm.TableIntents, persistence.Query{Prefix: "ethereum/"})
	if err != nil {
		t.Fatal(err)
	}
	intentOf := map[string]string{}
	// tx hash -> an intent that is no payment: the name registration, the
	// token approval
	housekeeping := map[string]bool{}
	for _, r := range intents {
		var it struct {
			Op, State string
			TxHash    common.Hash
			Created   time.Time
		}
		_ = json.Unmarshal(r.Value, &it)
		if it.Op == "register" || it.Op == "approve" {
			housekeeping[it.TxHash.Hex()] = true
		}
		intentOf[it.TxHash.Hex()] = fmt.Sprintf("intent %s (op %s, state %s, created %s)", r.Key, it.Op, it.State, it.Created.Format(time.RFC3339Nano))
	}
	for i, tx := range ethTxs {
		if tx.Nonce() != uint64(i) {
			t.Errorf("payer's transaction %d on ethereum has nonce %d", i, tx.Nonce())
		}
		// Besides its payments, the agent sends its name registration and
		// the USDC approval.
		if _, ok := expected["ethereum/"+tx.Hash().Hex()]; !ok && !housekeeping[tx.Hash().Hex()] {
			t.Errorf("payer transaction %s (nonce %d, to %v) is neither an acknowledged payment nor housekeeping: %s", tx.Hash().Hex(), tx.Nonce(), tx.To(), intentOf[tx.Hash().Hex()])
		}
	}
	nonceRec, err := st.Get(ctx, evm.TableNonces, "ethereum/"+strings.ToLower(payerEth.Hex()))
	if err != nil {
		t.Fatalf("payer's nonce ledger on ethereum: %v", err)
	}
	rep.ledgerNonce, _ = strconv.ParseUint(string(nonceRec.Value), 10, 64)
	if rec, err := st.Get(ctx, agent.TableAgents, h.payer); err == nil {
		var a struct{ Registration map[string]string }
		_ = json.Unmarshal(rec.Value, &a)
		rep.registration = a.Registration
		for chain, st := range a.Registration {
			// A crash during create leaves it pending; the agent's next
			// activation (the settle phase uses it) must have finished it.
			if st == "pending" {
				t.Errorf("the payer's name registration on %s is still pending", chain)
			}
		}
	}
	if rep.ledgerNonce != uint64(len(ethTxs)) {
		t.Errorf("ledger's next nonce %d, chain's %d (reserved and never mined: a skipped nonce)", rep.ledgerNonce, len(ethTxs))
	}
	return rep
}

// clip shortens a response body for a message.
func clip(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// payerTransactions lists, in block order, the transactions from addr on
// the devnet at rpc, once its pending nonce has caught up with the mined
// one (nothing of addr waits in the pool).
func payerTransactions(t *testing.T, rpc string, addr common.Address) []*types.Transaction {
	t.Helper()
	ctx := context.Background()
	cl, err := ethclient.Dial(rpc)
	if err != nil {
		t.Fatalf("dial %s: %v", rpc, err)
	}
	defer cl.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mined, err1 := cl.NonceAt(ctx, addr, nil)
		pending, err2 := cl.PendingNonceAt(ctx, addr)
		if err1 == nil && err2 == nil && mined == pending {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("payer's transactions stuck in the pool: mined nonce %d, pending %d (%v %v)", mined, pending, err1, err2)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	chainID, err := cl.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(chainID)
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*types.Transaction
	for n := uint64(0); n <= head; n++ {
		b, err := cl.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatalf("block %d: %v", n, err)
		}
		for _, tx := range b.Transactions() {
			if from, err := types.Sender(signer, tx); err == nil && from == addr {
				out = append(out, tx)
			}
		}
	}
	return out
}
