// Package layering holds the test that enforces DESIGN.md's import arrows
// (httpapi → runtime/actors → agent/tools, llm → chains, enclave →
// persistence; chains/stealth and persistence import nothing of ours). It
// has no code: see layering_test.go for the layers and the known
// exceptions, each with its reason.
package layering
