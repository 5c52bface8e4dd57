package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/walletsig"
	"github.com/veilhq/veil/internal/failpoint"
	"github.com/veilhq/veil/persistence"
)

// The robustness test runs the real binary with failpoints armed
// (VEIL_FAILPOINTS, internal/failpoint): veild exits with status 137 at
// random after signing, around broadcasts, inside the group commit, after
// the chat's tools and after a scheduled payment. A supervisor restarts it
// on the same data directory (the embedded devnets persist there too, so
// the chains survive with it) each time. Meanwhile workers drive random
// chats (payments on ethereum, stellar and solana, schedules, invoices,
// balance questions) and API writes, retrying every request with its
// Idempotency-Key until it is acknowledged. Time passes for the schedules
// while veild is down: before each restart the supervisor moves every
// schedule's next run to that moment, as if a day had gone by, so that
// slots run under the failpoints too.
//
// At the end veild runs once more without failpoints until the chains and
// schedules settle, and the recorded history is checked against a model:
// every acknowledged write is there, every payment reached the payee once
// (no payment twice, no schedule slot paid twice), and the payer's nonces
// on ethereum were neither reused nor skipped.

// Probabilities per hit. A payment passes each chain failpoint once, so
// these fire every few payments; the group commit runs many times a
// second, so its failpoints get a small one.
var robustFailpoints = strings.Join([]string{
	"evm.after-sign=0.05", "evm.before-persist=0.05", "evm.before-broadcast=0.05", "evm.after-broadcast=0.08", "evm.before-confirm=0.02",
	"stellar.after-sign=0.05", "stellar.before-submit=0.05", "stellar.after-submit=0.08",
	"solana.after-sign=0.05", "solana.before-send=0.05", "solana.after-send=0.08",
	"chat.after-tools=0.05", "schedule.after-send=0.2",
	"commit.before-commit=0.002", "commit.after-commit=0.002",
}, ",")

const (
	robustPayer = "robust-payer"
	robustPayee = "robust-payee"
	// robustOps bounds the work phase, robustWork its duration: whichever
	// comes first ends it.
	robustOps     = 300
	robustWork    = 60 * time.Second
	robustWorkers = 3
	// robustSlots is the schedule phase: veild runs the due slots under
	// the failpoints, the test kills it when a round of slots is done, and
	// the restart's rewind makes the next round due.
	robustSlots = 20 * time.Second
	// robustSettle bounds the final phase, without failpoints.
	robustSettle = 90 * time.Second
)

var (
	ethRPCRE   = regexp.MustCompile(`msg="EVM devnet serving" .*devnet=ethereum rpc=(\S+)`)
	markerRE   = regexp.MustCompile(regexp.QuoteMeta(failpoint.Marker) + `(\S+)`)
	notifyTxRE = regexp.MustCompile(` on (\w+) \(tx (\w+)\)`)
	logMsgRE   = regexp.MustCompile(`msg=("[^"]*"|\S+)`)
)

func TestRobustnessUnderFailpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs veild for minutes, killing it at random failpoints")
	}
	began := time.Now()
	data := t.TempDir()
	out, err := exec.Command(veildBin, "apikey", "create", "--account", "robust", "--data", data).Output()
	if err != nil {
		t.Fatalf("apikey create: %v", err)
	}
	key := strings.TrimSpace(string(out))
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VEIL_ROBUST_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (VEIL_ROBUST_SEED replays the failpoint decisions, not the interleaving)", seed)

	sup := &supervisor{t: t, data: data, seed: seed, armed: true, kills: map[string]int{}, live: make(chan struct{})}
	ctx, stop := context.WithCancel(context.Background())
	supDone := make(chan struct{})
	go func() { defer close(supDone); sup.run(ctx) }()
	t.Cleanup(func() { stop(); <-supDone })

	cl := &robustClient{sup: sup, key: key}
	h := &history{}
	payer := cl.createAgent(t, robustPayer)
	payee := cl.createAgent(t, robustPayee)
	h.payer, h.payee = payer, payee

	// The work phase: workers pick operations at random until the budget
	// is spent.
	rng := rand.New(rand.NewPCG(seed, 1))
	var rngMu sync.Mutex
	pick := func() float64 { rngMu.Lock(); defer rngMu.Unlock(); return rng.Float64() }
	workEnd := time.Now().Add(robustWork)
	var wg sync.WaitGroup
	var opsMu sync.Mutex
	ops := 0
	for w := range robustWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				opsMu.Lock()
				if ops >= robustOps || time.Now().After(workEnd) || t.Failed() {
					opsMu.Unlock()
					return
				}
				ops++
				opsMu.Unlock()
				cl.randomOp(t, h, pick(), fmt.Sprintf("w%d-%d-%d", w, i, seed))
			}
		}()
	}
	wg.Wait()
	workTook := time.Since(began)
	slotRounds := cl.slotPhase(t, h)

	// The settle phase: no more failpoints. Restart once more (the last
	// restart also rewinds the schedules, so every slot still due runs),
	// then wait for the chains and schedules to settle.
	sup.disarm()
	cl.settle(t, h)
	check := verifyHistory(t, cl, h)
	if t.Failed() {
		for _, l := range sup.grepLog(regexp.MustCompile(`level=(WARN|ERROR)`)) {
			t.Log(l)
		}
	} else {
		// What veild reported as errors meanwhile, by message: expected
		// ones (a broadcast cut by a kill) and, in a run that passes, no
		// sign of a money bug.
		errs := map[string]int{}
		for _, l := range sup.grepLog(regexp.MustCompile(`level=ERROR`)) {
			if m := logMsgRE.FindStringSubmatch(l); m != nil {
				errs[m[1]]++
			}
		}
		for m, n := range errs {
			t.Logf("veild logged %d× ERROR %s", n, m)
		}
	}
	stop()
	<-supDone

	sup.mu.Lock()
	kills, exits, starts, testStops := maps.Clone(sup.kills), sup.exits, sup.starts, sup.testStops
	sup.mu.Unlock()
	total := 0
	names := make([]string, 0, len(kills))
	for n, k := range kills {
		total += k
		names = append(names, n)
	}
	slices.Sort(names)
	var per []string
	for _, n := range names {
		per = append(per, fmt.Sprintf("%s=%d", n, kills[n]))
	}
	t.Logf("%d operations acknowledged (%d chat payments, %d schedules, %d invoices, %d conversations, %d follow-ups); %d slots paid in %d rounds",
		h.count(), len(h.payments), len(h.schedules), len(h.invoices), len(h.convs), len(h.followups), check.slots, slotRounds)
	t.Logf("%d exits at failpoints (%s), %d stops by the test, %d other exits, %d starts; work phase %v, total %v",
		total, strings.Join(per, " "), testStops, exits-total-testStops, starts, workTook.Round(time.Second), time.Since(began).Round(time.Second))
	t.Logf("payer on ethereum: %d transactions, ledger's next nonce %d; its name registration: %v", check.ethTxs, check.ledgerNonce, check.registration)
}

// supervisor keeps one veild running on data, restarting it whenever it
// exits, until its context ends.
type supervisor struct {
	t    *testing.T
	data string
	seed uint64

	mu     sync.Mutex
	armed  bool
	cur    *exec.Cmd
	addr   string        // "" while no veild serves
	live   chan struct{} // closed while addr is set
	gen    int           // bumped at each start that serves
	ethRPC string
	kills  map[string]int
	exits  int
	starts int
	final  bool // stopClean: do not restart
	// stopping is set while the test itself ends the running veild;
	// testStops counts those exits.
	stopping  bool
	testStops int
	// log is every line every veild wrote, for the report of a failure.
	log []string
}

// grepLog returns the lines of every run that match re.
func (s *supervisor) grepLog(re *regexp.Regexp) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.log {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// run is the restart loop.
func (s *supervisor) run(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		armed, final := s.armed, s.final
		s.mu.Unlock()
		if final {
			return
		}
		if s.starts > 0 {
			// A day passes while veild is down.
			if err := rewindSchedules(s.data); err != nil {
				s.t.Errorf("rewind schedules: %v", err)
				return
			}
		}
		s.once(ctx, armed)
	}
}

// once starts veild, publishes its address while it serves, and returns
// when it has exited (recording why).
func (s *supervisor) once(ctx context.Context, armed bool) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--shutdown-grace", "5s", "--devnet-base-port", "0", "--metrics-addr", "127.0.0.1:0"}
	cmd := exec.Command(veildBin, args...)
	cmd.Env = append(os.Environ(), "VEIL_DATA="+s.data)
	if armed {
		cmd.Env = append(cmd.Env, failpoint.EnvNames+"="+robustFailpoints,
			fmt.Sprintf("%s=%d", failpoint.EnvSeed, s.seed+uint64(s.starts)))
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Errorf("stderr pipe: %v", err)
		return
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		s.t.Errorf("start veild: %v", err)
		return
	}
	s.mu.Lock()
	s.cur = cmd
	s.starts++
	s.mu.Unlock()

	var tail []string // the last lines, for a report of an unexpected exit
	fired := ""
	serving := false
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	stopWatch := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stopWatch()
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.log = append(s.log, line)
		s.mu.Unlock()
		if tail = append(tail, line); len(tail) > 40 {
			tail = tail[1:]
		}
		if m := markerRE.FindStringSubmatch(line); m != nil {
			fired = m[1]
		}
		if m := ethRPCRE.FindStringSubmatch(line); m != nil {
			s.mu.Lock()
			s.ethRPC = m[1]
			s.mu.Unlock()
		}
		if m := servingRE.FindStringSubmatch(line); m != nil && !serving {
			serving = true
			s.mu.Lock()
			s.addr = m[1]
			s.gen++
			close(s.live)
			s.mu.Unlock()
		}
	}
	err = cmd.Wait()
	s.mu.Lock()
	if serving {
		s.addr = ""
		s.live = make(chan struct{})
	}
	s.cur = nil
	s.exits++
	byTest := s.stopping
	s.stopping = false
	if fired != "" {
		s.kills[fired]++
	} else if byTest {
		s.testStops++
	}
	s.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case fired != "" && errors.As(err, &ee) && ee.ExitCode() == failpoint.ExitCode:
	case byTest || ctx.Err() != nil:
	default:
		s.t.Errorf("veild exited unexpectedly (%v, failpoint %q); last lines:\n%s", err, fired, strings.Join(tail, "\n"))
	}
}

// base waits for a serving veild and returns its URL and generation.
func (s *supervisor) base(deadline time.Time) (string, int, error) {
	for {
		s.mu.Lock()
		addr, gen, live := s.addr, s.gen, s.live
		s.mu.Unlock()
		if addr != "" {
			return "http://" + addr, gen, nil
		}
		select {
		case <-live:
		case <-time.After(time.Until(deadline)):
			return "", 0, errors.New("no veild serving before the deadline")
		}
	}
}

// waitNext waits until a veild newer than gen serves, or a short while:
// a failed request either met a dead process (wait for the next) or a
// live one that failed (try again soon).
func (s *supervisor) waitNext(gen int) {
	end := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(end) {
		s.mu.Lock()
		cur := s.gen
		serving := s.addr != ""
		s.mu.Unlock()
		if cur != gen && serving {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// disarm kills the running veild; the next one starts without failpoints.
func (s *supervisor) disarm() {
	s.mu.Lock()
	s.armed = false
	s.mu.Unlock()
	s.kill(0)
}

// kill ends the running veild with SIGKILL, if it is generation gen (any
// when gen is 0); the restart loop starts the next.
func (s *supervisor) kill(gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil || (gen != 0 && (s.gen != gen || s.addr == "")) {
		return
	}
	s.stopping = true
	_ = s.cur.Process.Signal(syscall.SIGKILL)
}

// stopClean stops the running veild with SIGTERM and waits for it to exit,
// so that the data file can be read.
func (s *supervisor) stopClean(t *testing.T) {
	s.mu.Lock()
	s.final = true
	cmd := s.cur
	if cmd != nil {
		s.stopping = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	s.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		done := s.cur == nil
		s.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("veild did not stop after SIGTERM")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rewindSchedules moves the next run of every active schedule that is not
// due yet to now, as if its interval had passed while veild was down. A
// schedule already due is left alone: its slot may be half paid.
func rewindSchedules(data string) error {
	ctx := context.Background()
	st, err := persistence.OpenBolt(filepath.Join(data, dbFile), persistence.BoltOptions{LockTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer st.Close()
	recs, err := st.List(ctx, state.TableSchedules, persistence.Query{})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for _, r := range recs {
		var sc tools.Schedule
		if err := json.Unmarshal(r.Value, &sc); err != nil {
			return fmt.Errorf("schedule %s: %w", r.Key, err)
		}
		if sc.Status != state.ScheduleActive || !sc.NextRun.After(now) {
			continue
		}
		agentID, _, _ := strings.Cut(r.Key, "/")
		old := sc.NextRun
		sc.NextRun = now
		raw, _ := json.Marshal(sc)
		if _, err := st.Apply(ctx,
			persistence.Delete(state.TableScheduleDue, state.DueKey(old, agentID, sc.ID), persistence.AtVersion(1)),
			persistence.Put(state.TableScheduleDue, state.DueKey(now, agentID, sc.ID), []byte(r.Key), persistence.Absent()),
			persistence.Put(state.TableSchedules, r.Key, raw, persistence.AtVersion(r.Version)),
		); err != nil {
			return fmt.Errorf("rewind %s: %w", r.Key, err)
		}
	}
	return nil
}

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

var payMessages = []struct{ chain, msg string }{
	{"ethereum", "send 0.001 ETH to " + robustPayee + " on ethereum"},
	// A token: the first payment also approves the StealthSender, in a
	// transaction of its own on the same nonce ledger.
	{"ethereum", "send 1 USDC to " + robustPayee + " on ethereum"},
	{"stellar", "send 1 XLM to " + robustPayee},
	{"solana", "send 0.01 SOL to " + robustPayee},
}

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

// Every connector's failpoints reach veild's hook: an agent's creation
// signs on every chain (its name registration), so with one after-sign
// failpoint armed at probability 1, veild exits there. This guards the
// wiring in chains.go, which the robustness test's random kills would not
// notice missing.
func TestFailpointsReachEveryConnector(t *testing.T) {
	for _, fp := range []string{"evm.after-sign", "stellar.after-sign", "solana.after-sign"} {
		t.Run(fp, func(t *testing.T) {
			t.Setenv(failpoint.EnvNames, fp+"=1")
			p := start(t, t.TempDir())
			key := keyRE.FindString(p.stdout.String())
			owner, _ := crypto.GenerateKey()
			wallet := walletsig.EVMAddress(&owner.PublicKey)
			msg := walletsig.CreateMessage("wired", "all", wallet, time.Now())
			raw, _ := json.Marshal(map[string]string{"name": "wired", "chain": "all", "wallet": wallet, "signature": walletsig.SignEVM(owner, msg), "message": msg})
			req, _ := http.NewRequest("POST", "http://"+p.addr+"/agent/create", bytes.NewReader(raw))
			req.Header.Set("Authorization", "Bearer "+key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("create answered %d %s; want veild gone at %s", resp.StatusCode, body, fp)
			}
			for line := range p.stderr.lines {
				p.stderr.all.WriteString(line + "\n")
			}
			err := p.cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != failpoint.ExitCode || !strings.Contains(p.stderr.all.String(), failpoint.Marker+fp+"\n") {
				t.Fatalf("veild ended with %v, want exit %d at %s; stderr:\n%s", err, failpoint.ExitCode, fp, p.stderr.all.String())
			}
		})
	}
}
