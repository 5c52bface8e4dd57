package connopts

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

func TestSymbols(t *testing.T) {
	s := NewSymbols("eth")
	for _, tc := range []struct {
		sym string
		ok  bool
	}{
		{"USDC", true},
		{"", false},
		{"ETH", false},  // the native asset
		{"usdc", false}, // taken, case-insensitively
		{"DAI", true},
	} {
		if got := s.Add(tc.sym); got != tc.ok {
			t.Errorf("Add(%q) = %v, want %v", tc.sym, got, tc.ok)
		}
	}
}

func TestDefaultsNamesTheChain(t *testing.T) {
	var out strings.Builder
	o := Options{Store: struct{ persistence.Store }{}, Log: slog.New(slog.NewTextHandler(&out, nil))}
	if err := o.Defaults("solana", chains.Solana, 0); err != nil {
		t.Fatal(err)
	}
	o.Log.Info("x")
	if !strings.Contains(out.String(), "chain=solana") {
		t.Fatalf("log line %q does not name the chain", out.String())
	}
	if err := (&Options{}).Defaults("solana", chains.Solana, 0); err == nil || !strings.Contains(err.Error(), "solana: Options.Store is required") {
		t.Fatalf("Defaults without a Store = %v", err)
	}
}
