package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains/walletsig"
)

// robustClient sends requests to whichever veild serves, retrying each
// until it is answered.
type robustClient struct {
	sup *supervisor
	key string
}

// do sends one request until veild answers it with a status below 500
// (other than 429), retrying with the same Idempotency-Key (when idem is
// set) across crashes. It fails the test after two minutes.
func (c *robustClient) do(t *testing.T, method, path, idem string, body any) (int, []byte) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	for attempt := 0; ; attempt++ {
		if time.Now().After(deadline) {
			t.Errorf("%s %s: no answer within two minutes", method, path)
			return 0, nil
		}
		base, gen, err := c.sup.base(deadline)
		if err != nil {
			continue
		}
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+c.key)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		rctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(rctx))
		if err != nil {
			cancel()
			c.sup.waitNext(gen)
			continue
		}
		out, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if rerr != nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			c.sup.waitNext(gen)
			continue
		}
		return resp.StatusCode, out
	}
}

// createAgent creates name on every chain, or finds it when an attempt
// that crashed had created it. Each attempt signs anew (a signature is
// good once).
func (c *robustClient) createAgent(t *testing.T, name string) string {
	t.Helper()
	owner, _ := crypto.GenerateKey()
	wallet := walletsig.EVMAddress(&owner.PublicKey)
	for try := 0; try < 20; try++ {
		msg := walletsig.CreateMessage(name, "all", wallet, time.Now())
		status, body := c.do(t, "POST", "/agent/create", "", map[string]string{
			"name": name, "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg,
		})
		var a struct{ ID string }
		switch status {
		case http.StatusCreated, http.StatusOK:
			// 200: a retry of the same signed create whose first answer
			// was lost when veild died returns the agent it made.
			_ = json.Unmarshal(body, &a)
			return a.ID
		case http.StatusConflict:
			// An earlier attempt created it before veild died.
			if status, body = c.do(t, "GET", "/agent/info/"+name, "", nil); status == http.StatusOK {
				_ = json.Unmarshal(body, &a)
				return a.ID
			}
		default:
			t.Fatalf("create %s = %d %s", name, status, body)
		}
	}
	t.Fatalf("could not create %s", name)
	return ""
}

type chatReply struct {
	Response       string
	ConversationID string
	ToolCalls      []struct{ Name, Status, Detail string }
}

// chat sends msg until it is acknowledged with one successful call of
// tool. A tool that failed (a broadcast whose outcome the connector could
// not know, say) is retried with the same Idempotency-Key, which is the
// client's side of the contract.
func (c *robustClient) chat(t *testing.T, agentID, conv, msg, tool, idem string) (chatReply, bool) {
	t.Helper()
	var r chatReply
	for try := 0; try < 10; try++ {
		body := map[string]string{"message": msg}
		if conv != "" {
			body["conversationId"] = conv
		}
		status, raw := c.do(t, "POST", "/agent/"+agentID+"/chat", idem, body)
		if status == 0 {
			return r, false
		}
		r = chatReply{}
		if status != http.StatusOK || json.Unmarshal(raw, &r) != nil {
			t.Errorf("chat %q = %d %s", msg, status, clip(raw))
			return r, false
		}
		if len(r.ToolCalls) == 1 && r.ToolCalls[0].Name == tool && r.ToolCalls[0].Status == "success" {
			return r, true
		}
		t.Logf("chat %q (key %s) answered without success, retrying: %s", msg, idem, clip(raw))
	}
	t.Errorf("chat %q (key %s) never succeeded: %+v", msg, idem, r)
	return r, false
}

// history is what was acknowledged.
type history struct {
	payer, payee string

	mu        sync.Mutex
	payments  []ackedPayment
	schedules []ackedChat // tool detail holds the schedule
	invoices  []string
	convs     []string // created through the API
	followups []ackedChat
	chats     []ackedChat // every acknowledged chat
}

type ackedPayment struct {
	idem, chain, txHash string
}

type ackedChat struct {
	idem, conv, msg, response, detail string
}

func (h *history) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.chats) + len(h.convs)
}

// payMessages are the payments the workers ask for; %s is the amount's
// last digits, different for every operation (payNonce): a request for a
// payment like one still on its way asks the user first (issue 32 item 4),
// and each operation here is a payment of its own, not a repeat.
var payMessages = []struct{ chain, msg string }{
	{"ethereum", "send 0.001%s ETH to " + robustPayee + " on ethereum"},
	// A token: the first payment also approves the StealthSender, in a
	// transaction of its own on the same nonce ledger.
	{"ethereum", "send 1.%s USDC to " + robustPayee + " on ethereum"},
	{"stellar", "send 1.%s XLM to " + robustPayee},
	{"solana", "send 0.01%s SOL to " + robustPayee},
}

// payNonce numbers the payment operations of a run (payMessages).
var payNonce atomic.Int64

var scheduleMessages = []string{
	"send 0.001 ETH to " + robustPayee + " on ethereum every day",
	"send 1 XLM to " + robustPayee + " every day",
	"send 0.01 SOL to " + robustPayee + " daily",
}

// randomOp runs one operation chosen by p until it is acknowledged, and
// records it.
func (c *robustClient) randomOp(t *testing.T, h *history, p float64, idem string) {
	record := func(r chatReply, msg string) ackedChat {
		a := ackedChat{idem: idem, conv: r.ConversationID, msg: msg, response: r.Response, detail: r.ToolCalls[0].Detail}
		h.mu.Lock()
		h.chats = append(h.chats, a)
		h.mu.Unlock()
		return a
	}
	switch {
	case p < 0.55: // a payment
		pm := payMessages[int(p*1000)%len(payMessages)]
		pm.msg = fmt.Sprintf(pm.msg, fmt.Sprintf("%04d", payNonce.Add(1)))
		r, ok := c.chat(t, h.payer, "", pm.msg, "send_payment", idem)
		if !ok {
			return
		}
		record(r, pm.msg)
		var d struct{ TxHash, Chain string }
		_ = json.Unmarshal([]byte(r.ToolCalls[0].Detail), &d)
		if d.TxHash == "" || d.Chain != pm.chain {
			t.Errorf("payment %q: detail %s", pm.msg, r.ToolCalls[0].Detail)
			return
		}
		h.mu.Lock()
		h.payments = append(h.payments, ackedPayment{idem: idem, chain: d.Chain, txHash: d.TxHash})
		h.mu.Unlock()
	case p < 0.65: // a schedule, at most one per chain
		h.mu.Lock()
		n := len(h.schedules)
		h.mu.Unlock()
		if n >= len(scheduleMessages) {
			c.randomOp(t, h, 0.7, idem)
			return
		}
		msg := scheduleMessages[int(p*1000)%len(scheduleMessages)]
		r, ok := c.chat(t, h.payer, "", msg, "schedule_payment", idem)
		if !ok {
			return
		}
		a := record(r, msg)
		h.mu.Lock()
		h.schedules = append(h.schedules, a)
		h.mu.Unlock()
	case p < 0.75: // an invoice
		msg := "create an invoice for 5 USDC for the logo work"
		r, ok := c.chat(t, h.payer, "", msg, "create_invoice", idem)
		if !ok {
			return
		}
		record(r, msg)
		var d struct{ ID string }
		_ = json.Unmarshal([]byte(r.ToolCalls[0].Detail), &d)
		h.mu.Lock()
		h.invoices = append(h.invoices, d.ID)
		h.mu.Unlock()
	case p < 0.85: // an API write: a new conversation
		status, raw := c.do(t, "POST", "/agent/"+h.payee+"/conversations", idem, map[string]string{})
		var conv struct{ ID string }
		if (status != http.StatusCreated && status != http.StatusOK) || json.Unmarshal(raw, &conv) != nil || conv.ID == "" {
			t.Errorf("create conversation = %d %s", status, clip(raw))
			return
		}
		h.mu.Lock()
		h.convs = append(h.convs, conv.ID)
		h.mu.Unlock()
	default: // a question in a conversation acknowledged before
		h.mu.Lock()
		var conv string
		if len(h.chats) > 0 {
			conv = h.chats[int(p*1000)%len(h.chats)].conv
		}
		h.mu.Unlock()
		chain := []string{"ethereum", "stellar", "solana"}[int(p*1000)%3]
		msg := "what's my balance on " + chain
		r, ok := c.chat(t, h.payer, conv, msg, "get_balance", idem)
		if !ok {
			return
		}
		a := record(r, msg)
		if conv != "" && a.conv != conv {
			t.Errorf("follow-up in %s answered in %s", conv, a.conv)
		}
		h.mu.Lock()
		h.followups = append(h.followups, a)
		h.mu.Unlock()
	}
}

// slotPhase lets veild run schedule slots under the failpoints for
// robustSlots. A restarted veild takes the reminder's lease only once the
// dead process's lease has expired (runtime/lease), so a round lasts a
// TTL or more; when one is done (every schedule's next run is in the
// future again) the test kills veild, and the restart's rewind makes the
// next round due. It returns the rounds completed.
func (c *robustClient) slotPhase(t *testing.T, h *history) int {
	t.Helper()
	h.mu.Lock()
	n := len(h.schedules)
	h.mu.Unlock()
	if n == 0 {
		return 0
	}
	rounds := 0
	sawDue := map[int]bool{} // generations that had due slots
	end := time.Now().Add(robustSlots)
	for time.Now().Before(end) && !t.Failed() {
		time.Sleep(250 * time.Millisecond)
		c.sup.mu.Lock()
		addr, gen := c.sup.addr, c.sup.gen
		c.sup.mu.Unlock()
		if addr == "" {
			continue
		}
		due, err := dueSchedules("http://"+addr, c.key, h.payer)
		if err != nil {
			continue // veild died under a failpoint: the next one rewinds
		}
		if due > 0 {
			sawDue[gen] = true
		} else if sawDue[gen] {
			rounds++
			c.sup.kill(gen)
		}
	}
	return rounds
}

// dueSchedules counts agentID's active schedules whose next run has come,
// in one request (no retries).
func dueSchedules(base, key, agentID string) (int, error) {
	req, _ := http.NewRequest("GET", base+"/agent/"+agentID+"/schedules", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var list []tools.Schedule
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("list schedules: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, err
	}
	due := 0
	for _, sc := range list {
		if sc.Status == state.ScheduleActive && !sc.NextRun.After(time.Now()) {
			due++
		}
	}
	return due, nil
}

// settle waits, without failpoints, until every schedule slot that was due
// has run and the payee has been notified of every payment the history
// and the schedule runs account for.
func (c *robustClient) settle(t *testing.T, h *history) {
	t.Helper()
	deadline := time.Now().Add(robustSettle)
	for {
		base, _, err := c.sup.base(deadline)
		if err != nil {
			t.Fatal(err)
		}
		due, err := dueSchedules(base, c.key, h.payer)
		if err != nil {
			// The veild that disarm killed, seen before its exit.
			time.Sleep(100 * time.Millisecond)
			continue
		}
		// Scanning on demand speeds up the payee's view of the chains.
		c.chat(t, h.payee, "", "scan for payments", "scan_payments", "")
		received := len(paymentNotes(t, c, h.payee))
		executed := 0
		for _, n := range notes(t, c, h.payer) {
			if n.Type == agent.NoteScheduleExecuted {
				executed++
			}
		}
		h.mu.Lock()
		want := len(h.payments) + executed
		h.mu.Unlock()
		if due == 0 && received >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("not settled after %v: %d schedules due, payee notified of %d payments, want %d", robustSettle, due, received, want)
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

type note struct{ Type, Title, Body string }

func notes(t *testing.T, c *robustClient, agentID string) []note {
	t.Helper()
	status, raw := c.do(t, "GET", "/agent/"+agentID+"/notifications", "", nil)
	var inbox struct{ Notifications []note }
	if status != http.StatusOK || json.Unmarshal(raw, &inbox) != nil {
		t.Fatalf("notifications of %s = %d %s", agentID, status, clip(raw))
	}
	return inbox.Notifications
}

// paymentNotes lists the payee's payment_received notifications as
// "chain/tx" keys, one per notification (duplicates kept).
func paymentNotes(t *testing.T, c *robustClient, agentID string) []string {
	t.Helper()
	var out []string
	for _, n := range notes(t, c, agentID) {
		if n.Type != agent.NotePaymentReceived {
			continue
		}
		m := notifyTxRE.FindStringSubmatch(n.Body)
		if m == nil {
			t.Errorf("payment notification without chain and tx: %q", n.Body)
			continue
		}
		out = append(out, m[1]+"/"+m[2])
	}
	return out
}
