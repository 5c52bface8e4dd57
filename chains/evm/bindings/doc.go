// Package bindings holds the abigen v2 bindings of Veil's contracts
// (contracts/src) and the runtime code the devnets place in their genesis.
// Every *.gen.go file is generated: regenerate them all, with the compiled
// artifacts in contracts/build, by running contracts/gen.sh (needs Node.js
// and npm; builds and tests only use the committed outputs).
package bindings

//go:generate sh ../../../contracts/gen.sh
