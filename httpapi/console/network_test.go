package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/veilhq/veil/chains"
)

// TestNetworkClassifiers: devnets, public test networks and local nodes
// are test money; mainnet chain ids, Stellar's public passphrase and a
// mainnet Solana RPC are not.
func TestNetworkClassifiers(t *testing.T) {
	tests := []struct {
		name     string
		got      Network
		wantName string
		test     bool
	}{
		{"embedded evm devnet", EVMNetwork(chains.Ethereum, 11155111, true), NetEmbedded, true},
		{"sepolia", EVMNetwork(chains.Ethereum, 11155111, false), NetTestnet, true},
		{"base sepolia", EVMNetwork(chains.Base, 84532, false), NetTestnet, true},
		{"anvil", EVMNetwork(chains.Polygon, 31337, false), NetLocal, true},
		{"geth dev", EVMNetwork(chains.Base, 1337, false), NetLocal, true},
		{"ethereum mainnet", EVMNetwork(chains.Ethereum, 1, false), NetMainnet, false},
		{"polygon mainnet", EVMNetwork(chains.Polygon, 137, false), NetMainnet, false},
		{"base mainnet", EVMNetwork(chains.Base, 8453, false), NetMainnet, false},
		{"another chain's testnet id is not this chain's", EVMNetwork(chains.Ethereum, 84532, false), NetMainnet, false},
		{"stellar embedded", StellarNetwork("Standalone Network ; February 2017", true), NetEmbedded, true},
		{"stellar testnet", StellarNetwork("Test SDF Network ; September 2015", false), NetTestnet, true},
		{"stellar private", StellarNetwork("Standalone Network ; February 2017", false), "private network", true},
		{"stellar public", StellarNetwork("Public Global Stellar Network ; September 2015", false), NetMainnet, false},
		{"solana embedded", SolanaNetwork("http://127.0.0.1:8899", true), NetEmbedded, true},
		{"solana devnet", SolanaNetwork("https://api.devnet.solana.com", false), "devnet", true},
		{"solana testnet", SolanaNetwork("https://api.testnet.solana.com", false), NetTestnet, true},
		{"solana local validator", SolanaNetwork("http://127.0.0.1:8899", false), NetLocal, true},
		{"solana mainnet", SolanaNetwork("https://api.mainnet-beta.solana.com", false), "mainnet-beta", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.Name != tt.wantName || tt.got.Test != tt.test {
				t.Fatalf("got %+v, want %q test=%v", tt.got, tt.wantName, tt.test)
			}
		})
	}
	if got := EVMNetwork(chains.Ethereum, 11155111, true).Label(); got != "ethereum (embedded devnet, chain id 11155111)" {
		t.Fatalf("label %q", got)
	}
}

// TestNetworkRead: GET /console/api/network lists the chains in order and
// says whether any is test money; a chain with an explorer and no network
// given is an embedded devnet.
func TestNetworkRead(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   Options
		test   bool
		chains string
	}{
		{"mainnet only", Options{Networks: map[chains.ID]Network{chains.Base: EVMNetwork(chains.Base, 8453, false), chains.Stellar: StellarNetwork("Public Global Stellar Network ; September 2015", false)}}, false, "base stellar "},
		{"one devnet among mainnets", Options{Networks: map[chains.ID]Network{chains.Base: EVMNetwork(chains.Base, 8453, false), chains.Solana: SolanaNetwork("", true)}}, true, "base solana "},
		{"explorer alone", Options{Explorers: map[chains.ID]Explorer{chains.Ethereum: fakeExplorer{chain: chains.Ethereum}}}, true, "ethereum "},
		{"nothing", Options{}, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := chi.NewRouter()
			New(tt.opts).Routes(r)
			w := httptest.NewRecorder()
			r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/console/api/network", nil))
			var got Networks
			if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &got) != nil {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			ids := ""
			for _, n := range got.Networks {
				ids += string(n.Chain) + " "
			}
			if got.Test != tt.test || ids != tt.chains {
				t.Fatalf("got %s", w.Body)
			}
		})
	}
}
