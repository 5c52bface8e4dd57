package evm_test

import (
	"strings"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
)

// TestConfigFromEnvFollowsChainID: what Veil knows of the public test
// network (explorer, Circle's USDC, confirmation depth) applies only to its
// chain id, and an empty explorer variable turns links off.
func TestConfigFromEnvFollowsChainID(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		explorer string
		tokens   int
		confirms uint64
		err      string
	}{
		{"sepolia defaults", map[string]string{}, "https://sepolia.etherscan.io/tx/{hash}", 1, 2, ""},
		{"hardhat chain id", map[string]string{"VEIL_EVM_ETHEREUM_CHAIN_ID": "31337"}, "", 0, 0, ""},
		{"geth --dev chain id", map[string]string{"VEIL_EVM_ETHEREUM_CHAIN_ID": "1337"}, "", 0, 0, ""},
		{"mainnet chain id", map[string]string{"VEIL_EVM_ETHEREUM_CHAIN_ID": "1"}, "", 0, 2, ""},
		{"dev node with explicit depth", map[string]string{"VEIL_EVM_ETHEREUM_CHAIN_ID": "31337", "VEIL_EVM_ETHEREUM_CONFIRMATIONS": "1"}, "", 0, 1, ""},
		{"links off (empty)", map[string]string{"VEIL_EXPLORER_ETHEREUM": ""}, "", 1, 2, ""},
		{"links off (none)", map[string]string{"VEIL_EXPLORER_ETHEREUM": "none"}, "", 1, 2, ""},
		{"own explorer on another chain", map[string]string{"VEIL_EVM_ETHEREUM_CHAIN_ID": "1", "VEIL_EXPLORER_ETHEREUM": "https://etherscan.io/tx/{hash}"}, "https://etherscan.io/tx/{hash}", 0, 2, ""},
		{"template without {hash}", map[string]string{"VEIL_EXPLORER_ETHEREUM": "https://etherscan.io/tx/"}, "", 0, 0, "needs {hash}"},
		{"tokens on a dev node", map[string]string{"VEIL_EVM_ETHEREUM_CHAIN_ID": "31337", "VEIL_EVM_ETHEREUM_TOKENS": "USDC=0x5FbDB2315678afecb367f032d93F642f64180aa3:6"}, "", 1, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"VEIL_RPC_ETHEREUM": "http://127.0.0.1:1"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, ok, err := evm.ConfigFromLookup(chains.Ethereum, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "VEIL_EXPLORER_ETHEREUM") {
					t.Fatalf("err %v, want %q naming the variable", err, tc.err)
				}
				return
			}
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			if cfg.ExplorerTx != tc.explorer || len(cfg.Tokens) != tc.tokens || cfg.Confirmations != tc.confirms {
				t.Fatalf("explorer %q tokens %v confirmations %d; want %q, %d tokens, %d", cfg.ExplorerTx, cfg.Tokens, cfg.Confirmations, tc.explorer, tc.tokens, tc.confirms)
			}
		})
	}
	// Without VEIL_RPC_<CHAIN> the chain runs on the devnet.
	if _, ok, err := evm.ConfigFromLookup(chains.Base, func(string) (string, bool) { return "", false }); ok || err != nil {
		t.Fatal(ok, err)
	}
}
