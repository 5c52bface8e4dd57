package secp256k1

import (
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
			k := &s.keys[ki]
			ok, _ := c.check(&ephXY, &k.view, &k.spendXY, &anns[ai])
			return ok
		}, func() { putChecker(c) }
	})
}
