package secp256k1

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/veilhq/veil/chains/stealth"
)

// ViewKeyEntry is one agent's scanning material: the viewing private key and
// the spending public key (the spending private key is never needed to scan).
type ViewKeyEntry struct {
	ViewPriv [32]byte
	SpendPub [33]byte
}

// Match says that announcement anns[Announcement] pays keys[Key].
type Match struct {
	Announcement int
	Key          int
}

// Scanner checks batches of announcements against many agents' viewing keys
// on all cores. It is safe for concurrent use; the keys are fixed at
// construction.
type Scanner struct {
	keys []scanKey
}

type scanKey struct {
	view    [32]byte
	spendXY [64]byte // decompressed once, here
}

// NewScanner validates the keys and precomputes what each check reuses (the
// decompressed spending key). It fails on the first invalid entry; the error
// says which.
func NewScanner(keys []ViewKeyEntry) (*Scanner, error) {
	s := &Scanner{keys: make([]scanKey, len(keys))}
	for i := range keys {
		if !validScalar(&keys[i].ViewPriv) {
			return nil, stealth.Errorf(stealth.ErrZeroScalar, "key %d: viewing private key is zero or not below the group order", i)
		}
		if !decompress(&keys[i].SpendPub, &s.keys[i].spendXY) {
			return nil, stealth.Errorf(stealth.ErrInvalidPoint, "key %d: spending public key is not a compressed secp256k1 point", i)
		}
		s.keys[i].view = keys[i].ViewPriv
	}
	return s, nil
}

// Len is the number of keys.
func (s *Scanner) Len() int { return len(s.keys) }

// pairChunk is how many (announcement, key) pairs a worker claims at once:
// ~1 ms of work, so the atomic counter costs nothing and the cores stay
// balanced to the end.
const pairChunk = 32

// Scan returns every (announcement, key) pair whose announcement pays that
// key, ordered by announcement then key. Work is spread over
// runtime.GOMAXPROCS(0) goroutines over the flattened (announcement × key)
// space, so a few announcements with many keys use every core as well as
// many announcements with one key. Per pair the cost is one ECDH and one
// Keccak (the view tag filters the rest); each announcement's ephemeral key
// is decompressed once per worker. Announcements with an invalid ephemeral
// key match nothing. Nothing is allocated per announcement: workers reuse
// their scratch state and allocate only to record a match.
func (s *Scanner) Scan(anns []Announcement) []Match {
	nk := len(s.keys)
	total := len(anns) * nk
	if total == 0 {
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if chunks := (total + pairChunk - 1) / pairChunk; workers > chunks {
		workers = chunks
	}
	var next atomic.Int64
	results := make([][]Match, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[w] = s.worker(anns, &next, total)
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

func (s *Scanner) worker(anns []Announcement, next *atomic.Int64, total int) []Match {
	c := getChecker()
	defer putChecker(c)
	var found []Match
	nk := len(s.keys)
	var ephXY [64]byte
	cur, curOK := -1, false
	for {
		start := int(next.Add(pairChunk)) - pairChunk
		if start >= total {
			return found
		}
		end := min(start+pairChunk, total)
		for p := start; p < end; p++ {
			ai, ki := p/nk, p%nk
			if ai != cur {
				cur = ai
				curOK = decompress(&anns[ai].EphemeralPub, &ephXY)
			}
			if !curOK {
				continue
			}
			k := &s.keys[ki]
			if ok, _ := c.check(&ephXY, &k.view, &k.spendXY, &anns[ai]); ok {
				found = append(found, Match{Announcement: ai, Key: ki})
			}
		}
	}
}
