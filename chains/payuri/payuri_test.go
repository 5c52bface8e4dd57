package payuri

import (
	"errors"
	"testing"

	"github.com/veilhq/veil/chains"
)

const (
	evmTo     = "0x1111111111111111111111111111111111111111"
	usdcEVM   = "0x2222222222222222222222222222222222222222"
	solTo     = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	solMint   = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
	solRef    = "82ZJ7nbGpixjeDCmEhUcmwXYfvurzAgGdtSMuHnUgyny"
	xlmTo     = "GBZXN7PIRZGNMHGA7MUUUF4GWPY5AYPV6LY4UV2GL6VJGIQRXFDNMADI"
	xlmIssuer = "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"
)

func TestFor(t *testing.T) {
	tests := []struct {
		name   string
		family chains.Family
		req    Request
		want   string
	}{
		{"evm native", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "0.05", Decimals: 18, ChainID: 1},
			"ethereum:" + evmTo + "@1?value=50000000000000000"},
		{"evm native huge exact", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "123456789.123456789123456789", Decimals: 18, ChainID: 31337},
			"ethereum:" + evmTo + "@31337?value=123456789123456789123456789"},
		{"evm token", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "12.5", Decimals: 6, Token: usdcEVM, ChainID: 8453},
			"ethereum:" + usdcEVM + "@8453/transfer?address=" + evmTo + "&uint256=12500000"},
		{"evm token smallest unit", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "0.000001", Decimals: 6, Token: usdcEVM, ChainID: 137},
			"ethereum:" + usdcEVM + "@137/transfer?address=" + evmTo + "&uint256=1"},
		{"solana native", chains.FamilySolana, Request{PayTo: solTo, Amount: "1.500000000", Decimals: 9},
			"solana:" + solTo + "?amount=1.5"},
		{"solana token with text", chains.FamilySolana, Request{PayTo: solTo, Amount: "0.000001", Decimals: 6, Token: solMint, Reference: solRef, Label: "alice.veil", Message: "Invoice 7", Memo: "coffee & cake+tip"},
			"solana:" + solTo + "?amount=0.000001&spl-token=" + solMint + "&reference=" + solRef + "&label=alice.veil&message=Invoice%207&memo=coffee%20%26%20cake%2Btip"},
		{"stellar native", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "10", Decimals: 7, AssetCode: "XLM"},
			"web+stellar:pay?destination=" + xlmTo + "&amount=10"},
		{"stellar token with memo", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "0.0000001", Decimals: 7, AssetCode: "USDC", Token: xlmIssuer, Memo: "inv 1"},
			"web+stellar:pay?destination=" + xlmTo + "&amount=0.0000001&asset_code=USDC&asset_issuer=" + xlmIssuer + "&memo=inv%201&memo_type=MEMO_TEXT"},
		{"stellar memo clipped to 28 bytes", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "1", Decimals: 7, Memo: "ééééééééééééééé"},
			"web+stellar:pay?destination=" + xlmTo + "&amount=1&memo=" + "%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9%C3%A9" + "&memo_type=MEMO_TEXT"},
		// SEP-7's network_passphrase: named off the public network, left
		// out on it (the default a wallet assumes).
		{"stellar testnet names its network", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "2", Decimals: 7, NetworkPassphrase: "Test SDF Network ; September 2015"},
			"web+stellar:pay?destination=" + xlmTo + "&amount=2&network_passphrase=Test%20SDF%20Network%20%3B%20September%202015"},
		{"stellar devnet names its network after the memo", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "2", Decimals: 7, Memo: "m", NetworkPassphrase: "Standalone Network ; February 2017"},
			"web+stellar:pay?destination=" + xlmTo + "&amount=2&memo=m&memo_type=MEMO_TEXT&network_passphrase=Standalone%20Network%20%3B%20February%202017"},
		{"stellar public network carries none", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "2", Decimals: 7, NetworkPassphrase: "Public Global Stellar Network ; September 2015"},
			"web+stellar:pay?destination=" + xlmTo + "&amount=2"},
		// EIP-681 carries the chain id: a devnet's and a mainnet's differ.
		{"evm devnet chain id", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "1", Decimals: 18, ChainID: 11155111},
			"ethereum:" + evmTo + "@11155111?value=1000000000000000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(tt.family, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestForRefuses(t *testing.T) {
	tests := []struct {
		name   string
		family chains.Family
		req    Request
		want   error
	}{
		{"evm without chain id", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "1", Decimals: 18}, ErrIncomplete},
		{"evm without address", chains.FamilyEVM, Request{Amount: "1", Decimals: 18, ChainID: 1}, ErrIncomplete},
		{"too many decimals", chains.FamilyEVM, Request{PayTo: evmTo, Amount: "0.0000001", Decimals: 6, Token: usdcEVM, ChainID: 1}, chains.ErrInvalidAmount},
		{"zero", chains.FamilySolana, Request{PayTo: solTo, Amount: "0", Decimals: 9}, chains.ErrInvalidAmount},
		{"exponent", chains.FamilySolana, Request{PayTo: solTo, Amount: "1e3", Decimals: 9}, chains.ErrInvalidAmount},
		{"stellar token without code", chains.FamilyStellar, Request{PayTo: xlmTo, Amount: "1", Decimals: 7, Token: xlmIssuer}, ErrIncomplete},
		{"unknown family", chains.Family("btc"), Request{PayTo: "x", Amount: "1"}, ErrIncomplete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(tt.family, tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("For = %q, %v; want %v", got, err, tt.want)
			}
		})
	}
}
