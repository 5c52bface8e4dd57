//go:build !race

package secp256k1

// raceEnabled: see race_on_test.go.
const raceEnabled = false
