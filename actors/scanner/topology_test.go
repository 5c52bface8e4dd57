package scanner_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/veilhq/veil/actors/agent"
	"github.com/veilhq/veil/actors/internal/moneytest"
	"github.com/veilhq/veil/actors/scanner"
	"github.com/veilhq/veil/chains"
)

// TestTopologyChangeWakesTheScanners: the members' background scanners
// wait an hour between passes, so only the topology signal makes them
// scan again. Payments announced before a change are delivered right after
// it, each exactly once, by the members that own their payees in the new
// view; a member that leaves hands its agents over the same way.
func TestTopologyChangeWakesTheScanners(t *testing.T) {
	env := moneytest.NewEnv(t, moneytest.NewClock(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)))
	// Agent ids are random: agents are created until each member of the
	// three-member view owns at least two (placement is known, so the
	// hand-overs tested never depend on chance; with a fixed nine, a owned
	// none in one CI run of about forty).
	var agents []*agent.Record
	owned := map[string]int{}
	for i := 0; len(agents) < 9 || owned["a"] < 2 || owned["b"] < 2 || owned["c"] < 2; i++ {
		if i == 100 {
			t.Fatalf("100 agents and still a member owns fewer than two: %v", owned)
		}
		a := env.CreateAgent(fmt.Sprintf("agent-%d", i))
		agents = append(agents, a)
		owned[place([]string{"a", "b", "c"}, a.ID)]++
	}
	top := &cluster{views: map[string][]string{}}
	deliveries := &counting{Agents: env.Host, n: map[string]int{}}
	passes := make(chan string, 64)
	scanners := map[string]*scanner.Scanner{}
	start := func(m string) {
		s := scanner.New(scanner.Options{Store: env.Store, Chain: env.Ref, Agents: deliveries, Keys: agent.EnclaveKeys(env.Enclave),
			Log: env.Log, PageSize: 4, Placement: top.placement(m), Topology: top.topology, Watch: scanner.WatchAnnouncements,
			Interval: time.Hour, MaxBackoff: time.Hour,
			OnPass: func(_ chains.ID, _ scanner.Report, _ time.Duration, err error) {
				if err != nil {
					t.Errorf("member %s: %v", m, err)
				}
				passes <- m
			}})
		scanners[m] = s
		s.Start()
		t.Cleanup(s.Stop)
	}
	// waitPasses waits for one pass of each member named (the loops are
	// idle before the step that wakes them, so these passes are the
	// step's).
	waitPasses := func(who ...string) {
		t.Helper()
		want := map[string]bool{}
		for _, m := range who {
			want[m] = true
		}
		for len(want) > 0 {
			select {
			case m := <-passes:
				delete(want, m)
			case <-time.After(time.Minute):
				t.Fatalf("no pass of %v after the topology change", want)
			}
		}
	}
	batch := func(n int) []string {
		var txs []string
		for i, a := range agents {
			tx := fmt.Sprintf("0x%d%d", n, i)
			env.Chain.Announce(pay(t, a.MetaAddresses["ethereum"], "1", tx))
			txs = append(txs, tx)
		}
		return txs
	}
	onceEach := func(step string, txs []string, total int) {
		t.Helper()
		if n := deliveries.total(); n != total {
			t.Fatalf("%s: %d deliveries in all, want %d", step, n, total)
		}
		for i, a := range agents {
			if n := deliveries.count(a.ID, txs[i]); n != 1 {
				t.Fatalf("%s: %s got %s delivered %d times, want once", step, a.Name, txs[i], n)
			}
			if n := moneytest.Count(env.Inbox(a.ID), agent.NotePaymentReceived); n != total/len(agents) {
				t.Fatalf("%s: %s has %d payment_received, want %d", step, a.Name, n, total/len(agents))
			}
		}
	}

	top.see([]string{"a", "b"}, "a", "b")
	start("a")
	start("b")
	waitPasses("a", "b") // the first passes, at Start: nothing to deliver

	// Announced while every loop waits for its hour; c joins: a and b
	// re-shard at once, c starts.
	txs := batch(1)
	top.see([]string{"a", "b", "c"}, "a", "b", "c")
	start("c")
	waitPasses("a", "b", "c")
	onceEach("c joined", txs, len(agents))

	// a leaves (it stops scanning); b and c take its agents over from
	// where a stopped, on the signal alone.
	scanners["a"].Stop()
	txs = batch(2)
	top.see([]string{"b", "c"}, "b", "c")
	waitPasses("b", "c")
	onceEach("a left", txs, 2*len(agents))
}
