package persistence_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// walSeedEnv replays a run of TestLogMatchesModel: its log names the
// seed. walTraceEnv set also logs every batch, outcome and applier pass.
const (
	walSeedEnv  = "VEIL_WAL_MODEL_SEED"
	walTraceEnv = "VEIL_WAL_MODEL_TRACE"
)

// walModelSeed is a model test's seed: walSeedEnv's, else a new one.
func walModelSeed(t *testing.T) uint64 {
	t.Helper()
	v := os.Getenv(walSeedEnv)
	if v == "" {
		return uint64(time.Now().UnixNano())
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", walSeedEnv, err)
	}
	return seed
}

// TestLogMatchesModel applies random batches, one at a time, to a store
// whose applier the test steps (one pass at a time, at random points,
// each pass taking the oldest pending groups up to a byte bound that is
// also random: one group, a few, or all) and to the model, and after
// every batch compares Get of every key and random Lists with the model.
// Keys come from a small alphabet, so batches collide, delete each
// other's keys and conflict. Twice it crashes the store (Abandon) and
// reopens it, with groups still pending.
func TestLogMatchesModel(t *testing.T) {
	seed := walModelSeed(t)
	t.Logf("seed %d (%s=%d replays this run)", seed, walSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 38))
	trace := os.Getenv(walTraceEnv) != ""

	applyBytes := []int{1, 60, 0}[rng.IntN(3)] // 1: one group per pass; 0: all
	defer persistence.SetApplyLimits(applyBytes, 0)()
	steps := 1000
	if testing.Short() {
		steps = 200
	}
	// The chance of an applier pass after a batch: a slow applier lets
	// groups pile up over bbolt's state.
	stepEvery := 2 + rng.IntN(6)
	crashes := map[int]bool{steps/3 + rng.IntN(steps/6): true, 2*steps/3 + rng.IntN(steps/6): true}

	var keys []string
	for _, a := range "abc" {
		keys = append(keys, string(a))
		for _, b := range "abc" {
			keys = append(keys, string(a)+string(b))
			for _, c := range "abc" {
				keys = append(keys, string(a)+string(b)+string(c))
			}
		}
	}
	tables := []string{"t1", "t2", "t3"}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	// prefix is one or two letters of the alphabet.
	prefix := func() string { return pick(keys)[:1] + pick([]string{"", "a", "b", "c"}) }

	path := filepath.Join(t.TempDir(), "veil.db")
	open := func() (*persistence.Bolt, *persistence.ApplyStepper) {
		s, st, err := persistence.OpenBoltStepped(path, persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s, st
	}
	s, st := open()
	m := model{}
	step := 0
	defer func() {
		if s != nil { // a failure left it open
			st.Free()
			_ = s.Close()
		}
		if t.Failed() {
			t.Logf("failed at batch %d of seed %d (applier bound %d bytes)", step, seed, applyBytes)
		}
	}()

	// expect is mostly an expectation that holds before the batch (it may
	// not once an earlier op of the batch touched the key), else any.
	expect := func(table, key string) persistence.Expect {
		cur := m[table][key].Version
		switch r := rng.IntN(20); {
		case r < 5:
			return persistence.Any()
		case r < 15:
			if cur == 0 {
				return persistence.Absent()
			}
			return persistence.AtVersion(cur)
		case r < 17:
			return persistence.Absent()
		default:
			return persistence.AtVersion(1 + uint64(rng.IntN(4)))
		}
	}
	batch := func() []persistence.Op {
		ops := make([]persistence.Op, 1+rng.IntN(4))
		table := pick(tables) // most batches stay in one table
		for i := range ops {
			if rng.IntN(4) == 0 {
				table = pick(tables)
			}
			key := pick(keys)
			switch r := rng.IntN(20); {
			case r < 10:
				val := make([]byte, rng.IntN(9))
				for j := range val {
					val[j] = byte('a' + rng.IntN(26))
				}
				ops[i] = persistence.Put(table, key, val, expect(table, key))
			case r < 13:
				ops[i] = persistence.Delete(table, key, expect(table, key))
			case r < 15:
				ops[i] = persistence.DeletePrefix(table, prefix())
			default:
				ops[i] = persistence.Check(table, key, expect(table, key))
			}
		}
		return ops
	}
	query := func() persistence.Query {
		var q persistence.Query
		if rng.IntN(2) == 0 {
			q.Prefix = prefix()
		}
		if rng.IntN(2) == 0 {
			q.After = pick(keys)
		}
		if rng.IntN(2) == 0 {
			q.Limit = 1 + rng.IntN(6)
		}
		q.Reverse = rng.IntN(2) == 0
		return q
	}

	var conflicts, passes, applied, maxPending, pendingAtCrash int
	crashDue := false
	for step = range steps {
		ops := batch()
		if trace {
			t.Logf("batch %d: %s", step, fmtOps(ops))
		}
		if err := applyBoth(t, s, m, ops...); err != nil {
			conflicts++
			if trace {
				t.Logf("  %v", err)
			}
		}
		maxPending = max(maxPending, s.PendingGroups())
		for rng.IntN(stepEvery) == 0 {
			n := st.Step()
			applied += n
			if n > 0 {
				passes++
			}
			if trace {
				t.Logf("step applied %d, %d pending", n, s.PendingGroups())
			}
		}
		checkGets(t, s, m, tables, keys)
		for range 3 {
			checkList(t, s, m, pick(tables), query())
		}
		// A crash is due at its step; it waits for a pending group.
		if crashes[step] {
			crashDue = true
		}
		if crashDue && s.PendingGroups() > 0 {
			crashDue = false
			if trace {
				t.Logf("crash")
			}
			pendingAtCrash += s.PendingGroups()
			err := s.Abandon()
			s = nil
			if err != nil {
				t.Fatal(err)
			}
			s, st = open()
			checkAll(t, s, m, tables, keys)
		}
	}
	if crashDue {
		t.Errorf("a crash never found a pending group")
	}
	st.Free()
	err := s.Close()
	s = nil
	if err != nil {
		t.Fatal(err)
	}
	c, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkAll(t, c, m, tables, keys)
	t.Logf("%d batches (%d conflicts), %d applier passes (one in %d batches) applied %d groups (bound %d bytes), at most %d pending, %d pending at the crashes",
		steps, conflicts, passes, stepEvery, applied, applyBytes, maxPending, pendingAtCrash)
}
