package parse

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

// The chain's own assets: "X" (2 decimals) and "Y" (0 decimals, token
// "y1").
var (
	x = chains.Asset{Chain: chains.Base, Symbol: "X", Decimals: 2}
	y = chains.Asset{Chain: chains.Base, Symbol: "Y", Decimals: 0, Ref: "y1"}
)

// chain reads addresses "a…", meta-addresses "m…" and its assets x and y.
var chain = Chain[string, string, string]{
	Address: func(s string) (string, error) {
		if !strings.HasPrefix(s, "a") {
			return "", fmt.Errorf("%w %q", chains.ErrInvalidAddress, s)
		}
		return s, nil
	},
	Meta: Meta(func(s string) (string, error) {
		if !strings.HasPrefix(s, "m") {
			return "", errors.New("not a meta-address")
		}
		return s, nil
	}),
	Own:   func(a chains.Asset) error { return chains.Owns([]chains.Asset{x, y}, a) },
	Asset: func(a chains.Asset) string { return a.Symbol },
}

func amount(t *testing.T, s string) chains.Amount {
	t.Helper()
	a, err := chains.ParseAmountOf(s, 18)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSendIsReadInOneOrder(t *testing.T) {
	q := chains.Asset{Chain: chains.Base, Symbol: "Q", Decimals: 2}
	foreignY := y
	foreignY.Ref = "y2"
	ok := chains.SendRequest{Asset: x, Amount: amount(t, "1.25"), To: " m1 "}
	s, err := chain.Send("a1", ok)
	if err != nil || s.From != "a1" || s.To != "m1" || s.Asset != "X" || s.Units.Cmp(big.NewInt(125)) != 0 {
		t.Fatalf("Send = %+v, %v; want a1, m1 (trimmed), X, 125 base units", s, err)
	}
	for _, tc := range []struct {
		name string
		from string
		req  chains.SendRequest
		want error
	}{
		{"bad source first", "z", chains.SendRequest{Asset: q, To: "z"}, chains.ErrInvalidAddress},
		{"bad meta-address before the asset", "a1", chains.SendRequest{Asset: q, To: "z"}, chains.ErrInvalidAddress},
		{"unknown asset", "a1", chains.SendRequest{Asset: q, To: "m1"}, chains.ErrUnknownAsset},
		{"a known symbol with a token of the caller's choice", "a1", chains.SendRequest{Asset: foreignY, Amount: amount(t, "1"), To: "m1"}, chains.ErrUnknownAsset},
		{"an asset nobody resolved", "a1", chains.SendRequest{Amount: amount(t, "1"), To: "m1"}, chains.ErrUnknownAsset},
		{"amount in the asset's decimals", "a1", chains.SendRequest{Asset: y, Amount: amount(t, "1.5"), To: "m1"}, chains.ErrInvalidAmount},
	} {
		if _, err := chain.Send(tc.from, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, err, tc.want)
		}
	}
}

func TestWithdrawAndRegister(t *testing.T) {
	w, err := chain.Withdraw(chains.WithdrawRequest{From: "a1", To: "a2", Asset: y, All: true})
	if err != nil || w.From != "a1" || w.To != "a2" || w.Units != nil || !w.All {
		t.Fatalf("Withdraw(all) = %+v, %v", w, err)
	}
	if _, err := chain.Withdraw(chains.WithdrawRequest{From: "a1", To: "z", Asset: y, All: true}); !errors.Is(err, chains.ErrInvalidAddress) {
		t.Fatalf("Withdraw to a bad address: %v", err)
	}
	r, err := chain.Register("a1", "Alice.veil", "m1")
	if err != nil || r.Name != "alice" || r.Owner != "a1" || r.Meta != "m1" {
		t.Fatalf("Register = %+v, %v; want alice, a1, m1", r, err)
	}
	if _, err := chain.Register("z", "-", "m1"); !errors.Is(err, chains.ErrInvalidName) {
		t.Fatalf("Register with a bad name and owner: %v; want the name's error first", err)
	}
}
