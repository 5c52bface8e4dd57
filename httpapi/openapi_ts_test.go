package httpapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"regexp"
	"testing"
)

// TestTypeScriptTypesFresh: the TypeScript client's generated types
// (clients/typescript/src/openapi.ts, docs/typescript.md) were made from
// this openapi.json. The file records the document's SHA-256, so a change of
// the document without regeneration fails here, without node; the
// TypeScript tests compare the whole file.
func TestTypeScriptTypesFresh(t *testing.T) {
	doc, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := os.ReadFile("../clients/typescript/src/openapi.ts")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^// openapi\.json sha256: ([0-9a-f]{64})$`).FindSubmatch(gen)
	if m == nil {
		t.Fatal("clients/typescript/src/openapi.ts has no \"openapi.json sha256\" line: run `npm ci && npm run generate` in clients/typescript")
	}
	sum := sha256.Sum256(doc)
	if got := hex.EncodeToString(sum[:]); string(m[1]) != got {
		t.Fatalf("clients/typescript/src/openapi.ts was generated from another openapi.json (sha256 %s, now %s): run `npm ci && npm run generate` in clients/typescript and commit src/openapi.ts", m[1], got)
	}
}
