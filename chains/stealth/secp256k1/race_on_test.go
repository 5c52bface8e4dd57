//go:build race

package secp256k1

// raceEnabled: the race detector's sync.Pool drops a quarter of what is
// put back on purpose, so a pooled checker is allocated again at random.
const raceEnabled = true
