package agent

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/veilhq/veil/actors/msg"
)

// Every sentinel declared in errors.go has a code in sentinelCodes, so a
// new one cannot be forgotten on the wire: the test reads the file's
// errors.New messages and finds each among the table's errors.
func TestEverySentinelHasACode(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{} // message → name
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			call, ok := vs.Values[i].(*ast.CallExpr)
			if !ok || len(call.Args) != 1 || !strings.HasPrefix(name.Name, "Err") {
				continue
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Fatalf("%s: not errors.New of a literal", name.Name)
			}
			msg, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			declared[msg] = name.Name
		}
		return false
	})
	if len(declared) == 0 {
		t.Fatal("no sentinel found in errors.go")
	}
	coded := map[string]bool{}
	codes := map[string]bool{}
	for _, s := range sentinelCodes {
		if codes[s.code] {
			t.Errorf("code %s twice", s.code)
		}
		codes[s.code] = true
		coded[s.err.Error()] = true
	}
	for m, name := range declared {
		if !coded[m] {
			t.Errorf("%s has no code in sentinelCodes", name)
		}
	}
	if len(sentinelCodes) != len(declared) {
		t.Errorf("sentinelCodes has %d entries, errors.go declares %d sentinels", len(sentinelCodes), len(declared))
	}
}

// A wrapped sentinel comes back from the wire matching it, with its text.
func TestSentinelsCrossTheWire(t *testing.T) {
	c := msg.NewCodec()
	RegisterWire(c)
	for _, s := range sentinelCodes {
		t.Run(s.code, func(t *testing.T) {
			sent := fmt.Errorf("%w: details", s.err)
			got := c.DecodeError(c.EncodeError(sent))
			if !errors.Is(got, s.err) || got.Error() != sent.Error() {
				t.Errorf("got %v (is %v), want %v", got, errors.Is(got, s.err), sent)
			}
		})
	}
}
