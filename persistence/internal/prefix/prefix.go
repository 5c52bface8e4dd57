// Package prefix holds the key-range arithmetic both stores (bbolt and
// PostgreSQL) use to turn a key prefix into a range.
package prefix

import "bytes"

// End returns the smallest key greater than every key that starts with p,
// and false when there is none (empty p, or p all 0xff).
func End(p []byte) ([]byte, bool) {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1], true
		}
	}
	return nil, false
}
