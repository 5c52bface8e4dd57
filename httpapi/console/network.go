package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stellar/go-stellar-sdk/network"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
)

// Network is the network a chain runs on, as the console's devnet banner
// and the pay page show it: the chain, the network's name, the EVM chain
// id, and whether its money is test money (an embedded devnet, a public
// test network, a local development node). A real network's money is not
// marked.
type Network struct {
	Chain   chains.ID `json:"chain"`
	Name    string    `json:"network"`
	ChainID uint64    `json:"chainId,omitempty"`
	Test    bool      `json:"test"`
}

// Label is the chain and its network in words: "ethereum (embedded
// devnet, chain id 11155111)".
func (n Network) Label() string {
	s := string(n.Chain) + " (" + n.Name
	if n.ChainID != 0 {
		s += ", chain id " + strconv.FormatUint(n.ChainID, 10)
	}
	return s + ")"
}

// The names of the networks the classifiers give.
const (
	NetEmbedded = "embedded devnet"
	NetTestnet  = "testnet"
	NetLocal    = "local development node"
	NetMainnet  = "mainnet"
)

// EVMNetwork classifies an EVM chain by its chain id: an embedded devnet
// (which uses its public test network's chain id), the public test
// network Veil knows for the chain (Sepolia, Amoy, Base Sepolia, Horizen's
// testnet), a local development node (31337, 1337) are test money; any
// other chain id is named by its id and not marked (a real network's).
func EVMNetwork(id chains.ID, chainID uint64, embedded bool) Network {
	n := Network{Chain: id, ChainID: chainID}
	switch {
	case embedded:
		n.Name, n.Test = NetEmbedded, true
	case evm.DevChainIDs[chainID]:
		n.Name, n.Test = NetLocal, true
	case chainID != 0 && chainID == evm.TestnetChainID(id):
		n.Name, n.Test = NetTestnet, true
	default:
		n.Name = NetMainnet
	}
	return n
}

// StellarNetwork classifies Stellar by its network passphrase: only the
// public network's is real money.
func StellarNetwork(passphrase string, embedded bool) Network {
	n := Network{Chain: chains.Stellar}
	switch {
	case embedded:
		n.Name, n.Test = NetEmbedded, true
	case passphrase == network.PublicNetworkPassphrase:
		n.Name = NetMainnet
	case passphrase == network.TestNetworkPassphrase:
		n.Name, n.Test = NetTestnet, true
	default:
		n.Name, n.Test = "private network", true
	}
	return n
}

// SolanaNetwork classifies Solana by its RPC URL (Solana names its
// clusters in their URLs: api.devnet.solana.com, api.testnet.solana.com,
// a provider's …-devnet…): devnet, testnet and a loopback validator are
// test money; anything else is taken for mainnet-beta and not marked.
func SolanaNetwork(rpcURL string, embedded bool) Network {
	n := Network{Chain: chains.Solana}
	u := strings.ToLower(rpcURL)
	host := ""
	if p, err := url.Parse(u); err == nil {
		host = p.Hostname()
	}
	switch {
	case embedded:
		n.Name, n.Test = NetEmbedded, true
	case strings.Contains(u, "devnet"):
		n.Name, n.Test = "devnet", true
	case strings.Contains(u, "testnet"):
		n.Name, n.Test = NetTestnet, true
	case host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1":
		n.Name, n.Test = NetLocal, true
	default:
		n.Name = "mainnet-beta"
	}
	return n
}

// Networks is what the console's banner reads: every chain's network,
// and whether any of them carries test money.
type Networks struct {
	Test     bool      `json:"test"`
	Networks []Network `json:"networks"`
}

// networksOf lists the networks in the chains' canonical order.
func (c *Console) networksOf() Networks {
	out := Networks{Networks: []Network{}}
	for _, id := range chains.Order() {
		n, ok := c.networks[id]
		if !ok {
			continue
		}
		out.Networks = append(out.Networks, n)
		out.Test = out.Test || n.Test
	}
	return out
}

// NetworkOf is the network chain runs on here (ok is false for a chain
// this server does not know).
func (c *Console) NetworkOf(id chains.ID) (Network, bool) {
	n, ok := c.networks[id]
	return n, ok
}

// network is GET /console/api/network: public, like the pay page that
// shows the same (a payer must know the money is test money).
func (c *Console) network(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, c.networksOf())
}
