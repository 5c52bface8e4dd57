package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// TestLogMatchesModelUnderConcurrentWriters is TestLogMatchesModel with
// the committer's groups formed by real concurrency: writers apply random
// batches at once to a store on the write-ahead log whose applier runs
// freely, and the store is crashed (Abandon) while they write.
//
// Each writer owns a namespace of keys and holds its model, so its
// expectations, conflicts, versions, Gets and Lists are exact whatever
// the others do. The writers also race on shared counters: a batch may
// begin with a compare-and-set of a counter, which makes the writer's
// own ops in it depend on a conflict it cannot predict. Every counter's
// successful sets must then number its versions 2, 3, … without a gap or
// a repeat, and its record must be the last set's. After every crash the
// reopened store must hold exactly what was answered: an Apply either
// answered (logged, it survives), conflicted or found the store closed
// (it changed nothing).
func TestLogMatchesModelUnderConcurrentWriters(t *testing.T) {
	seed := walModelSeed(t)
	rng := rand.New(rand.NewPCG(seed, 39))
	// A small applier bound or backpressure bound makes the applier and
	// the committer's wait for room part of the run.
	applyBytes := []int{1, 200, 0}[rng.IntN(3)]
	pendingGroups := []int{4, 0}[rng.IntN(2)]
	delay := []time.Duration{-1, 0, 2 * time.Millisecond}[rng.IntN(3)]
	t.Logf("seed %d (%s=%d replays its choices; the interleaving is the scheduler's): applier bound %d bytes, pending bound %d groups, delay %v",
		seed, walSeedEnv, seed, applyBytes, pendingGroups, delay)
	defer persistence.SetApplyLimits(applyBytes, pendingGroups)()

	const writers = 8
	perRound := 600 // answered batches, all writers together, before the round ends
	if testing.Short() {
		perRound = 150
	}
	tables := []string{"t1", "t2"}
	counters := []string{"c0", "c1"}
	var letters []string
	for _, a := range "ab" {
		letters = append(letters, string(a))
		for _, b := range "ab" {
			letters = append(letters, string(a)+string(b))
		}
	}

	path := filepath.Join(t.TempDir(), "veil.db")
	// A round's store may hold its applier back until release: the log
	// then piles up (as much as a crash can find pending) and is applied
	// at once while the writers go on, or replayed after the crash when
	// release comes too late. Not with the small pending bound, where the
	// committer would wait for room forever.
	release := func() {}
	open := func() *persistence.Bolt {
		opts := persistence.BoltOptions{ApplyDelay: delay}
		if pendingGroups == 0 && rng.IntN(2) == 0 {
			s, r, err := persistence.OpenBoltHeld(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			release = r
			return s
		}
		s, err := persistence.OpenBoltControlled(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		release = func() {}
		return s
	}
	s := open()
	defer func() {
		if s != nil { // a failure left it open
			release()
			_ = s.Close()
		}
	}()
	for _, c := range counters {
		if _, err := s.Apply(context.Background(), persistence.Put("c", c, []byte("init"), persistence.Absent())); err != nil {
			t.Fatal(err)
		}
	}

	ws := make([]*concurrentWriter, writers)
	for w := range ws {
		ws[w] = &concurrentWriter{
			ns: fmt.Sprintf("w%d/", w), m: model{}, tables: tables, letters: letters, counters: counters,
			rng: rand.New(rand.NewPCG(seed, uint64(w))),
		}
	}
	// sets[counter] are the successful sets of every writer and round.
	sets := map[string][]counterSet{}

	for round, crash := range []bool{true, true, false} {
		var answered atomic.Int64
		enough := make(chan struct{})
		var once sync.Once
		end := func() { once.Do(func() { close(enough) }) }
		releaseAt := int64(perRound/4 + rng.IntN(perRound)) // past perRound: never
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() {
				w.run(t, s, func() {
					switch answered.Add(1) {
					case releaseAt:
						release()
					case int64(perRound):
						end()
					}
				}, end)
			})
		}
		<-enough
		pendingAtEnd := s.PendingGroups()
		var err error
		if crash {
			err = s.Abandon() // while the writers write
		} else {
			release()
			err = s.Close()
		}
		s = nil
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			return
		}

		// What the store must hold: every writer's namespace and the
		// counters as their sets left them.
		want := model{}
		var keys []string
		for _, w := range ws {
			for table, recs := range w.m {
				if want[table] == nil {
					want[table] = map[string]persistence.Record{}
				}
				maps.Copy(want[table], recs)
			}
			for _, l := range letters {
				keys = append(keys, w.ns+l)
			}
			for c, got := range w.sets {
				sets[c] = append(sets[c], got...)
			}
			w.sets = nil
		}
		want["c"] = map[string]persistence.Record{}
		for _, c := range counters {
			last := checkCounterSets(t, c, sets[c])
			want["c"][c] = last
		}
		keys = append(keys, counters...)
		if crash {
			s = open() // replays the log the crash left
		} else {
			s, err = persistence.OpenBolt(path, persistence.BoltOptions{NoLog: true}) // Close left none
			if err != nil {
				t.Fatal(err)
			}
		}
		checkAll(t, s, want, append(slices.Clone(tables), "c"), keys)
		t.Logf("round %d: %d batches answered, %d groups pending at its end, %d counter sets so far",
			round, answered.Load(), pendingAtEnd, len(sets[counters[0]])+len(sets[counters[1]]))
	}
}

// counterSet is one successful compare-and-set of a shared counter.
type counterSet struct {
	version uint64
	value   string
}

// checkCounterSets checks that the sets of counter c numbered its
// versions 2, 3, … (1 is its creation) without a gap or a repeat, and
// returns the record the last one left.
func checkCounterSets(t *testing.T, c string, sets []counterSet) persistence.Record {
	t.Helper()
	slices.SortFunc(sets, func(a, b counterSet) int { return int(a.version) - int(b.version) })
	for i, set := range sets {
		if want := uint64(i + 2); set.version != want {
			t.Fatalf("counter %s: the successful sets answered versions %v; want 2…%d, each once", c, setVersions(sets), len(sets)+1)
		}
	}
	if len(sets) == 0 {
		return persistence.Record{Key: c, Value: []byte("init"), Version: 1}
	}
	last := sets[len(sets)-1]
	return persistence.Record{Key: c, Value: []byte(last.value), Version: last.version}
}

func setVersions(sets []counterSet) []uint64 {
	out := make([]uint64, len(sets))
	for i, s := range sets {
		out[i] = s.version
	}
	return out
}

// concurrentWriter is one writer of TestLogMatchesModelUnderConcurrentWriters.
type concurrentWriter struct {
	ns       string // every key it writes begins with ns
	m        model  // its namespace, as the store must hold it
	tables   []string
	letters  []string
	counters []string
	rng      *rand.Rand
	sets     map[string][]counterSet // this round's successful counter sets
	n        int
}

// run applies batches until the store is closed, calling answered after
// each answered batch; on a failure it reports it and calls end.
func (w *concurrentWriter) run(t *testing.T, s *persistence.Bolt, answered, end func()) {
	ctx := context.Background()
	fail := func(format string, args ...any) {
		t.Errorf(w.ns+" "+format, args...)
		end()
	}
	closed := func(err error) bool { return errors.Is(err, persistence.ErrClosed) }
	pick := func(xs []string) string { return xs[w.rng.IntN(len(xs))] }
	for {
		w.n++
		ops := w.batch(pick)
		// A third of the batches first set a shared counter, at the
		// version the writer last read.
		var counter string
		var value string
		if w.rng.IntN(3) == 0 {
			counter = pick(w.counters)
			cur, err := s.Get(ctx, "c", counter)
			if closed(err) {
				return
			}
			if err != nil {
				fail("Get c/%s: %v", counter, err)
				return
			}
			value = fmt.Sprintf("%s%d", w.ns, w.n)
			ops = append([]persistence.Op{persistence.Put("c", counter, []byte(value), persistence.AtVersion(cur.Version))}, ops...)
		}
		versions, err := s.Apply(ctx, ops...)
		if closed(err) {
			return
		}
		own := ops
		if counter != "" {
			own = ops[1:]
		}
		var ce *persistence.ConflictError
		if counter != "" && errors.As(err, &ce) && ce.Table == "c" {
			// The counter moved since the read: nothing of the batch
			// happened, which the reads below check.
			if ce.Key != counter || ce.Actual <= ce.Expected.Version {
				fail("Apply(%s) = %v; a counter conflict must name %s at a later version", fmtOps(ops), err, counter)
				return
			}
			answered()
		} else {
			next := w.m.clone()
			wantVersions, conflict := next.apply(own)
			switch {
			case conflict != nil:
				if !errors.As(err, &ce) || *ce != *conflict || versions != nil {
					fail("Apply(%s) = %v, %v; want the conflict %v", fmtOps(ops), versions, err, conflict)
					return
				}
			case err != nil:
				fail("Apply(%s): %v", fmtOps(ops), err)
				return
			default:
				got := versions
				if counter != "" {
					if w.sets == nil {
						w.sets = map[string][]counterSet{}
					}
					w.sets[counter] = append(w.sets[counter], counterSet{version: versions[0], value: value})
					got = versions[1:]
				}
				if !slices.Equal(got, wantVersions) {
					fail("Apply(%s) = %v; want versions %v after the counter's", fmtOps(ops), versions, wantVersions)
					return
				}
				w.m = next
			}
			answered()
		}
		// Read its own namespace back, through whatever of it is pending.
		table, key := pick(w.tables), w.ns+pick(w.letters)
		got, err := s.Get(ctx, table, key)
		if closed(err) {
			return
		}
		if want, ok := w.m[table][key]; !ok && !errors.Is(err, persistence.ErrNotFound) || ok && (err != nil || !sameRecord(got, want)) {
			fail("Get %s/%s = %+v, %v; want %+v (present %v)", table, key, got, err, want, ok)
			return
		}
		q := persistence.Query{Prefix: w.ns + pick([]string{"", "a", "b"}), Reverse: w.rng.IntN(2) == 0}
		if w.rng.IntN(2) == 0 {
			q.After = w.ns + pick(w.letters)
		}
		if w.rng.IntN(2) == 0 {
			q.Limit = 1 + w.rng.IntN(4)
		}
		list, err := s.List(ctx, table, q)
		if closed(err) {
			return
		}
		if want := w.m.list(table, q); err != nil || !slices.EqualFunc(list, want, sameRecord) {
			fail("List %s %+v = %v, %v; want %v", table, q, recKeys(list), err, recKeys(want))
			return
		}
	}
}

// batch is one to three random ops on the writer's namespace, with
// expectations that mostly hold (it alone writes there).
func (w *concurrentWriter) batch(pick func([]string) string) []persistence.Op {
	ops := make([]persistence.Op, 1+w.rng.IntN(3))
	for i := range ops {
		table, key := pick(w.tables), w.ns+pick(w.letters)
		cur := w.m[table][key].Version
		expect := persistence.Any()
		switch r := w.rng.IntN(10); {
		case r < 6 && cur == 0:
			expect = persistence.Absent()
		case r < 6:
			expect = persistence.AtVersion(cur)
		case r < 7:
			expect = persistence.AtVersion(cur + 1) // fails
		}
		switch r := w.rng.IntN(10); {
		case r < 6:
			ops[i] = persistence.Put(table, key, []byte(fmt.Sprintf("%d", w.rng.IntN(1000))), expect)
		case r < 8:
			ops[i] = persistence.Delete(table, key, expect)
		case r < 9:
			ops[i] = persistence.DeletePrefix(table, w.ns+pick([]string{"a", "b", "ab"}))
		default:
			ops[i] = persistence.Check(table, key, expect)
		}
	}
	return ops
}
