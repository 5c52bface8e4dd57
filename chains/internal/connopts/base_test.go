package connopts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
)

func TestBaseUnavailable(t *testing.T) {
	b := NewBase(chains.Solana, "https://x/tx/{hash}", 0, nil)
	nodeErr := errors.New("connection refused")
	for _, tc := range []struct {
		name        string
		err         error
		unavailable bool
		msg         string
	}{
		{"node error", nodeErr, true, "chains: chain unavailable: solana balance: connection refused"},
		{"cancelled", context.Canceled, false, "context canceled"},
		{"deadline, wrapped", fmt.Errorf("rpc: %w", context.DeadlineExceeded), false, "rpc: context deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := b.Unavailable("balance", tc.err)
			if errors.Is(got, chains.ErrUnavailable) != tc.unavailable {
				t.Fatalf("Unavailable(%v) = %v: ErrUnavailable %v, want %v", tc.err, got, !tc.unavailable, tc.unavailable)
			}
			if got.Error() != tc.msg {
				t.Fatalf("Unavailable(%v) = %q, want %q", tc.err, got, tc.msg)
			}
		})
	}
}

func TestBaseResult(t *testing.T) {
	for _, tc := range []struct {
		explorer, hash, link string
	}{
		{"https://x/tx/{hash}", "abc", "https://x/tx/abc"},
		{"", "abc", ""},
	} {
		b := NewBase(chains.Base, tc.explorer, 84532, nil)
		if got := b.Result(tc.hash); got != (chains.TxResult{TxHash: tc.hash, TxLink: tc.link}) {
			t.Errorf("Result(%q) with %q = %+v, want link %q", tc.hash, tc.explorer, got, tc.link)
		}
		if b.Chain() != chains.Base {
			t.Errorf("Chain() = %q", b.Chain())
		}
	}
}

func TestBasePaymentTarget(t *testing.T) {
	b := NewBase(chains.Base, "", 84532, baseAssets)
	for _, tc := range []struct {
		asset   string
		chainID uint64
		token   string
		ok      bool
	}{
		{"ETH", 84532, "", true},
		{"eth", 84532, "", true},
		{"Usdc", 84532, "0xabc", true},
		{"DAI", 0, "", false},
		{"", 0, "", false},
	} {
		id, token, ok := b.PaymentTarget(tc.asset)
		if id != tc.chainID || token != tc.token || ok != tc.ok {
			t.Errorf("PaymentTarget(%q) = %d, %q, %v; want %d, %q, %v", tc.asset, id, token, ok, tc.chainID, tc.token, tc.ok)
		}
	}
}

var baseAssets = []chains.Asset{
	{Chain: chains.Base, Symbol: "ETH", Decimals: 18},
	{Chain: chains.Base, Symbol: "USDC", Decimals: 6, Ref: "0xabc"},
}

// A connector pays only in a descriptor that is exactly one of its own:
// the right symbol with a contract, decimals or chain of the caller's
// choice is refused, and so is a descriptor nobody resolved.
func TestBaseOwnRefusesForeignDescriptors(t *testing.T) {
	b := NewBase(chains.Base, "", 84532, baseAssets)
	usdc, err := b.Asset(" usdc ")
	if err != nil || usdc != baseAssets[1] {
		t.Fatalf("Asset(usdc) = %+v, %v; want %+v", usdc, err, baseAssets[1])
	}
	if err := b.Own(usdc); err != nil {
		t.Fatalf("Own(its own USDC) = %v", err)
	}
	if native, err := b.Asset(""); err != nil || native != b.NativeAsset() || !native.Native() {
		t.Fatalf(`Asset("") = %+v, %v; want the native asset`, native, err)
	}
	for name, a := range map[string]chains.Asset{
		"other contract":  {Chain: chains.Base, Symbol: "USDC", Decimals: 6, Ref: "0xdef"},
		"other decimals":  {Chain: chains.Base, Symbol: "USDC", Decimals: 18, Ref: "0xabc"},
		"other chain":     {Chain: chains.Ethereum, Symbol: "USDC", Decimals: 6, Ref: "0xabc"},
		"native as token": {Chain: chains.Base, Symbol: "ETH", Decimals: 18, Ref: "0xabc"},
		"unresolved":      {},
	} {
		if err := b.Own(a); !errors.Is(err, chains.ErrUnknownAsset) {
			t.Errorf("%s: Own(%+v) = %v; want ErrUnknownAsset", name, a, err)
		}
	}
	if _, err := b.Asset("DAI"); !errors.Is(err, chains.ErrUnknownAsset) || !strings.Contains(err.Error(), "ETH, USDC") {
		t.Errorf("Asset(DAI) = %v; want ErrUnknownAsset naming ETH, USDC", err)
	}
}
