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

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
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
