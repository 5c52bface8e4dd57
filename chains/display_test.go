package chains

import "testing"

func TestDisplayAmountAndErrorWords(t *testing.T) {
	for _, tc := range []struct{ in, sym, want string }{
		{"9.999949976784703522", "ETH", "9.999949 ETH"},
		{"0.5", "USDC", "0.5 USDC"},
		{"25", "USDC", "25 USDC"},
		{"1000000.000000999", "XLM", "1000000 XLM"},
		{"0", "SOL", "0 SOL"},
		{"0.0000001", "ETH", "<0.000001 ETH"},
		{"-1.25", "ZEN", "-1.25 ZEN"},
		{"n/a", "ETH", "n/a ETH"},
	} {
		if got := DisplayAmount(tc.in, tc.sym); got != tc.want {
			t.Errorf("DisplayAmount(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct {
		chain    ID
		in, want string
	}{
		{Base, "insufficient funds for gas * price + value: balance 9999949976784703522, tx cost 500000021000000000000, overshot 1",
			"insufficient funds: 9.999949 ETH available, 500.000021 ETH needed (amount + network fee); nothing was sent"},
		{Solana, "balance 1000 wei does not cover the fee 5000 wei", "insufficient funds: 0.000001 SOL available, the network fee alone is 0.000005 SOL; nothing was sent"},
		{Ethereum, "insufficient funds: 0xabc holds 1.000000000000000001 ETH, needs 2.000000000000000021 ETH with the fee",
			"insufficient funds: 0xabc holds 1 ETH, needs 2 ETH with the fee"},
		// An amount the user typed is not cut.
		{Ethereum, "amount for ETH: 0.1234567891 ETH has too many decimals", "amount for ETH: 0.1234567891 ETH has too many decimals"},
	} {
		if got := ErrorWordsFor(tc.chain, tc.in); got != tc.want {
			t.Errorf("ErrorWordsFor(%s, %q)\n got %q\nwant %q", tc.chain, tc.in, got, tc.want)
		}
	}
}
