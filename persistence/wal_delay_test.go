package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// applyLog records the applier's transactions: how many groups each held.
type applyLog struct {
	mu  sync.Mutex
	txs []int
}

func (l *applyLog) observe(groups int, _ time.Duration) {
	l.mu.Lock()
	l.txs = append(l.txs, groups)
	l.mu.Unlock()
}

func (l *applyLog) get() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.txs...)
}

// drained waits for the applier to apply everything on its own; a bound
// of a minute turns an applier that waits out an hour's delay into a
// failure rather than a hung test.
func drained(t *testing.T, s *persistence.Bolt) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.WaitDrained(ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("the applier left %d groups pending: it waited out its delay when it should not have", s.PendingGroups())
	}
}

// waitApplied calls WaitApplied, which must not wait out the applier's
// delay: a minute's bound turns that into a failure, not a hung test.
func waitApplied(t *testing.T, s *persistence.Bolt) {
	t.Helper()
	waited := make(chan error, 1)
	go func() { waited <- s.WaitApplied() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("WaitApplied waited out the applier's delay: %d groups still pending", s.PendingGroups())
	}
}

// The applier's delay (BoltOptions.ApplyDelay) gathers the groups logged
// within it into one bbolt transaction; the first group after a quiet
// spell goes at once, and nothing that needs bbolt to hold every write
// waits the delay out: WaitApplied, a burst past applyHurryBytes, Close.
func TestApplyDelayGathersGroups(t *testing.T) {
	defer persistence.SetApplyHurryBytes(4096)()
	path := filepath.Join(t.TempDir(), "veil.db")
	var txs applyLog
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{ApplyDelay: time.Hour, ObserveApply: txs.observe})
	if err != nil {
		t.Fatal(err)
	}
	m := model{}
	P, any := persistence.Put, persistence.Any()
	keys := []string{"a", "b", "c", "big", "last"}

	applyBoth(t, s, m, P("t", "a", []byte("1"), any))
	drained(t, s)
	if got := txs.get(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("after the first write: transactions %v, want [1] (the first group after a quiet spell goes at once)", got)
	}

	applyBoth(t, s, m, P("t", "b", []byte("2"), any))
	applyBoth(t, s, m, P("t", "c", []byte("3"), any), P("t", "a", []byte("1b"), persistence.AtVersion(1)))
	if n := s.PendingGroups(); n != 2 {
		t.Fatalf("%d groups pending within the delay, want 2", n)
	}
	checkAll(t, s, m, []string{"t"}, keys)
	waitApplied(t, s)
	if got := txs.get(); len(got) != 2 || got[1] != 2 {
		t.Fatalf("after WaitApplied: transactions %v, want [1 2] (both groups in one)", got)
	}

	// Past applyHurryBytes the applier does not wait.
	applyBoth(t, s, m, P("t", "big", make([]byte, 8192), any))
	drained(t, s)
	if got := txs.get(); len(got) != 3 {
		t.Fatalf("after a write past the hurry bound: transactions %v, want 3", got)
	}

	// Close applies what waits and leaves no log.
	applyBoth(t, s, m, P("t", "last", []byte("x"), any))
	if s.PendingGroups() != 1 {
		t.Fatalf("%d groups pending, want 1", s.PendingGroups())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(persistence.LogDir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the log: %v", err)
	}
	s, err = persistence.OpenBolt(path, persistence.BoltOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkAll(t, s, m, []string{"t"}, keys)
}

// Whoever waits for the applier (WaitApplied, WaitDrained) finds the
// transaction that ended the wait already observed (ObserveApply): a
// benchmark or a test that counts transactions after the wait must not
// miss the last one. The observer dawdles so that a drop that wakes the
// waiters before it is observed loses the race every time.
func TestWaitersFindTheirTransactionObserved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "veil.db")
	var txs applyLog
	observe := func(groups int, took time.Duration) {
		time.Sleep(20 * time.Millisecond)
		txs.observe(groups, took)
	}
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{ApplyDelay: time.Hour, ObserveApply: observe})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := model{}
	applyBoth(t, s, m, persistence.Put("t", "a", []byte("1"), persistence.Any()))
	drained(t, s)
	if got := txs.get(); len(got) != 1 {
		t.Fatalf("after WaitDrained: transactions %v, want 1", got)
	}
	applyBoth(t, s, m, persistence.Put("t", "b", []byte("2"), persistence.Any()))
	waitApplied(t, s)
	if got := txs.get(); len(got) != 2 {
		t.Fatalf("after WaitApplied: transactions %v, want 2", got)
	}
}

// A WaitApplied that needs several applier passes (more waits than one
// transaction takes) gets them all without the delay between them, and
// so does a committer held by backpressure.
func TestApplyDelayHurriesEveryPass(t *testing.T) {
	const limit = 8
	defer persistence.SetApplyLimits(1, limit)() // one group per pass
	path := filepath.Join(t.TempDir(), "veil.db")
	var txs applyLog
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{ApplyDelay: time.Hour, ObserveApply: txs.observe})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := model{}
	var keys []string
	put := func(i int) {
		key := fmt.Sprintf("k%02d", i)
		keys = append(keys, key)
		applyBoth(t, s, m, persistence.Put("t", key, []byte(key), persistence.Absent()))
	}
	put(0)
	drained(t, s) // the first group after a quiet spell goes at once
	for i := 1; i <= 3; i++ {
		put(i)
	}
	waitApplied(t, s)
	if got := txs.get(); len(got) != 4 {
		t.Fatalf("transactions %v, want 4 of one group each", got)
	}
	// Past the backpressure bound the committer waits for room, and the
	// applier makes it without the delay.
	done := make(chan []string, 1)
	go func() {
		var more []string
		for i := 4; i < 4+2*limit; i++ {
			key := fmt.Sprintf("k%02d", i)
			more = append(more, key)
			if _, err := s.Apply(context.Background(), persistence.Put("t", key, []byte(key), persistence.Absent())); err != nil {
				t.Error(err)
			}
		}
		done <- more
	}()
	select {
	case more := <-done:
		for _, key := range more {
			keys = append(keys, key)
			m.apply([]persistence.Op{persistence.Put("t", key, []byte(key), persistence.Absent())})
		}
	case <-time.After(time.Minute):
		t.Fatalf("writes past the backpressure bound waited out the delay: %d groups pending", s.PendingGroups())
	}
	checkAll(t, s, m, []string{"t"}, keys)
}
