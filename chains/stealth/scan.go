package stealth

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Match says that announcement anns[Announcement] pays keys[Key] (indices
// into the slices given to a scheme's Scanner).
type Match struct {
	Announcement int
	Key          int
}

// PairChunk is how many (announcement, key) pairs a scan worker claims at
// once: ~1–2 ms of work, so the shared counter costs nothing and the cores
// stay balanced to the end.
const PairChunk = 32

// ScanPairs runs check over every (announcement, key) pair of an
// nAnn × nKeys grid on runtime.GOMAXPROCS(0) goroutines and returns the pairs
// for which it returned true, ordered by announcement then key. The grid is
// walked announcement-major in chunks of PairChunk, so consecutive calls of
// one worker usually share the announcement (workers cache what they decode
// from it) and a few announcements with many keys use every core as well as
// many announcements with one key. newWorker is called once per goroutine and
// returns that goroutine's check function, which owns its scratch state.
// ScanPairs itself allocates per call and per match, never per pair.
// It is exported for the scheme sub-packages.
func ScanPairs(nAnn, nKeys int, newWorker func() (check func(ann, key int) bool, done func())) []Match {
	total := nAnn * nKeys
	if total <= 0 {
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if chunks := (total + PairChunk - 1) / PairChunk; workers > chunks {
		workers = chunks
	}
	var next atomic.Int64
	results := make([][]Match, workers)
	run := func(w int) {
		check, done := newWorker()
		if done != nil {
			defer done()
		}
		var found []Match
		for {
			start := int(next.Add(PairChunk)) - PairChunk
			if start >= total {
				results[w] = found
				return
			}
			end := min(start+PairChunk, total)
			for p := start; p < end; p++ {
				ai, ki := p/nKeys, p%nKeys
				if check(ai, ki) {
					found = append(found, Match{Announcement: ai, Key: ki})
				}
			}
		}
	}
	if workers == 1 {
		run(0)
		return results[0]
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(w)
		}()
	}
	wg.Wait()
	var out []Match
	for _, r := range results {
		out = append(out, r...)
	}
	slices.SortFunc(out, func(a, b Match) int {
		if a.Announcement != b.Announcement {
			return a.Announcement - b.Announcement
		}
		return a.Key - b.Key
	})
	return out
}
