package secp256k1

import (
	"errors"
	"fmt"

	"github.com/veilhq/veil/chains/stealth"
)

// ViewKeyEntry is one agent's scanning material: the viewing private key and
// the spending public key (the spending private key is never needed to scan).
type ViewKeyEntry struct {
	ViewPriv [32]byte
	SpendPub [33]byte
}

// Match says that announcement anns[Announcement] pays keys[Key].
type Match = stealth.Match

// Scanner checks batches of announcements against many agents' viewing keys
// on all cores. It is safe for concurrent use; the keys are fixed at
// construction.
type Scanner struct {
	keys []ScanKey
}

// NewScanner validates the keys and decodes each once (see ScanKey). It
// fails on the first invalid entry; the error says which.
func NewScanner(keys []ViewKeyEntry) (*Scanner, error) {
	s := &Scanner{keys: make([]ScanKey, len(keys))}
	for i := range keys {
		if err := s.keys[i].parse(&keys[i]); err != nil {
			var e *stealth.Error
			if errors.As(err, &e) {
				return nil, stealth.Errorf(e.Kind, "key %d: %s", i, e.Detail)
			}
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
	}
	return s, nil
}

// Len is the number of keys.
func (s *Scanner) Len() int { return len(s.keys) }

// Scan returns every (announcement, key) pair whose announcement pays that
// key, ordered by announcement then key. Work is spread over
// runtime.GOMAXPROCS(0) goroutines over the flattened (announcement × key)
// grid (see stealth.ScanPairs), so a few announcements with many keys use
// every core as well as many announcements with one key. Per pair the cost
// is one ECDH and one Keccak (the view tag filters the rest); a worker
// decompresses each announcement's ephemeral key once. Announcements with an
// invalid ephemeral key match nothing. Nothing is allocated per announcement:
// workers reuse their scratch state and allocate only to record a match.
func (s *Scanner) Scan(anns []Announcement) []Match {
	return stealth.ScanPairs(len(anns), len(s.keys), func() (func(int, int) bool, func()) {
		c := getChecker()
		var ephXY [64]byte
		cur, curOK := -1, false
		return func(ai, ki int) bool {
			if ai != cur {
				cur = ai
				curOK = decompress(&anns[ai].EphemeralPub, &ephXY)
			}
			if !curOK {
				return false
			}
			ok, _ := c.check(&ephXY, &s.keys[ki], &anns[ai])
			return ok
		}, func() { putChecker(c) }
	})
}
