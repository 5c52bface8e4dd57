package edstealth

import (
	"filippo.io/edwards25519"

	"github.com/veilhq/veil/chains/stealth"
)

// ViewKeyEntry is one agent's scanning material.
type ViewKeyEntry struct {
	ViewPriv [32]byte // X25519 private key
	SpendPub [32]byte // K_spend
}

// Match says that announcement anns[Announcement] pays keys[Key].
type Match = stealth.Match

// Scanner checks batches of announcements against many agents' viewing keys
// on all cores. It is safe for concurrent use.
type Scanner struct {
	keys []scanKey
}

type scanKey struct {
	view  [32]byte
	spend *edwards25519.Point // decoded and validated once, here
}

// NewScanner validates the keys (spending keys fully, as ParseMetaAddress
// does) and decodes each spending key once.
func NewScanner(keys []ViewKeyEntry) (*Scanner, error) {
	s := &Scanner{keys: make([]scanKey, len(keys))}
	for i := range keys {
		p, err := decodeSpendKey(&keys[i].SpendPub, true)
		if err != nil {
			return nil, stealth.Errorf(stealth.ErrInvalidPoint, "key %d: %v", i, err)
		}
		s.keys[i] = scanKey{view: keys[i].ViewPriv, spend: p}
	}
	return s, nil
}

// Len is the number of keys.
func (s *Scanner) Len() int { return len(s.keys) }

// Scan returns every (announcement, key) pair whose announcement pays that
// key, ordered by announcement then key, using runtime.GOMAXPROCS(0)
// goroutines (see stealth.ScanPairs). Per pair: one X25519 and one SHA-256;
// the one-time key is computed only on a view-tag hit. Ephemeral keys that
// are not canonically encoded or have small order match nothing. Nothing is
// allocated per announcement, on a tag miss or a hit; only recording a
// match appends to a slice.
func (s *Scanner) Scan(anns []Announcement) []Match {
	return stealth.ScanPairs(len(anns), len(s.keys), func() (func(int, int) bool, func()) {
		S := new([32]byte)
		return func(ai, ki int) bool {
			k := &s.keys[ki]
			a := &anns[ai]
			if !canonicalU(&a.EphemeralPub) || !x25519(S, &k.view, &a.EphemeralPub) {
				return false
			}
			return checkShared(k.spend, S, a)
		}, func() { clear(S[:]) }
	})
}
