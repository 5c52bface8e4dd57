package connopts

import (
	"context"
	"errors"
	"fmt"
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
	b := NewBase(chains.Base, "", 84532, []Asset{{Symbol: "ETH"}, {Symbol: "USDC", Token: "0xabc"}})
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
