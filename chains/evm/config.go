// Package evm is the chains.Connector of the four EVM chains (horizen,
// ethereum, polygon, base). It speaks JSON-RPC through go-ethereum's ethclient
// to any node: a public test network's RPC URL or the embedded devnet on a
// loopback port, the same code path either way.
//
// A Connector holds no keys (every signature comes from a chains.Signer) and
// assigns every nonce it uses from a ledger in the persistence.Store: the
// nonce and the signed transaction are persisted together before the
// transaction is broadcast, so a crash anywhere neither reuses nor skips a
// nonce and a payment retried with the same idempotency key is sent once.
// Connector.Maintain rebroadcasts what a restart left unconfirmed, resubmits
// stuck transactions with a higher fee, fills nonce gaps and records
// confirmations; the chain actor (actors/chain) calls it and serialises the
// writes of each address. See docs/chains-evm.md.
package evm

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/connopts"
)

// NativeDecimals is the precision of every EVM chain's native asset.
const NativeDecimals = 18

// CanonicalAnnouncer is the ERC-5564 Announcer's address on every chain it
// is deployed on (CREATE2 singleton); the devnets place the same code there.
var CanonicalAnnouncer = common.HexToAddress("0x55649E01B5Df198D18D95b5cc5051630cfD45564")

// Token is an ERC-20 the connector reports and pays in.
type Token struct {
	Symbol   string         `json:"symbol"`
	Address  common.Address `json:"address"`
	Decimals int            `json:"decimals"`
}

// Config describes one EVM chain.
type Config struct {
	Chain   chains.ID `json:"chain"`
	ChainID uint64    `json:"chainId"`
	RPCURL  string    `json:"rpcUrl"`
	// ExplorerTx is the transaction link template: "{hash}" is replaced by
	// the 0x-prefixed transaction hash. Empty: TxLink returns "".
	ExplorerTx string `json:"explorerTx"`

	// Contracts. Sender (StealthSender) and Names (VeilNames) may be zero
	// on a network where they are not deployed: the operations that need
	// them fail with chains.ErrUnavailable.
	Announcer common.Address `json:"announcer"`
	Sender    common.Address `json:"sender"`
	Names     common.Address `json:"names"`
	Tokens    []Token        `json:"tokens"`

	// FromBlock is where Scan starts from an empty cursor (the sender's
	// deployment block on a public network).
	FromBlock uint64 `json:"fromBlock"`
	// Confirmations: Scan reads only blocks this deep (0 on a devnet).
	Confirmations uint64 `json:"confirmations"`
	// LogRange is the widest block range of one eth_getLogs call
	// (default 2000; public RPC providers cap it).
	LogRange uint64 `json:"logRange"`

	// DevnetFaucet: the node serves Veil's devnet faucet method
	// (veil_fund). Without it Fund reports chains.ErrUnavailable.
	DevnetFaucet bool `json:"devnetFaucet"`
	// TokenGasStipend is how much gas (in units, priced at the send's fee
	// cap) of the native asset a token payment carries to the stealth
	// address so that the recipient can move the tokens. Default 100000.
	TokenGasStipend uint64 `json:"tokenGasStipend"`
	// StuckAfter: a transaction unconfirmed for this long is resubmitted
	// with a higher fee. Default 45s.
	StuckAfter time.Duration `json:"stuckAfter"`
	// PollInterval is how often WaitMined and the chain actor's
	// maintenance poll for receipts. Default 2s (devnets: 20ms).
	PollInterval time.Duration `json:"pollInterval"`
}

func (c *Config) defaults() {
	if c.LogRange == 0 {
		c.LogRange = 2000
	}
	if c.TokenGasStipend == 0 {
		c.TokenGasStipend = 100_000
	}
	if c.StuckAfter <= 0 {
		c.StuckAfter = 45 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.Announcer == (common.Address{}) {
		c.Announcer = CanonicalAnnouncer
	}
}

// assets are the connector's own asset descriptors (chains.Asset): the
// native asset, then the tokens, by their checksummed contract address.
func (c *Config) assets() []chains.Asset {
	out := []chains.Asset{{Chain: c.Chain, Symbol: c.Chain.NativeAsset(), Decimals: NativeDecimals}}
	for _, t := range c.Tokens {
		out = append(out, t.asset(c.Chain))
	}
	return out
}

// asset is the token's descriptor on chain.
func (t Token) asset(chain chains.ID) chains.Asset {
	return chains.Asset{Chain: chain, Symbol: strings.ToUpper(t.Symbol), Decimals: t.Decimals, Ref: t.Address.Hex()}
}

// Validate reports what is missing or wrong.
func (c *Config) Validate() error {
	if c.Chain.Family() != chains.FamilyEVM {
		return fmt.Errorf("evm: %q is not an EVM chain", c.Chain)
	}
	if _, err := chains.Parse(string(c.Chain)); err != nil {
		return err
	}
	if c.ChainID == 0 {
		return fmt.Errorf("evm: %s: chain id missing", c.Chain)
	}
	if c.RPCURL == "" {
		return fmt.Errorf("evm: %s: RPC URL missing", c.Chain)
	}
	seen := connopts.NewSymbols(c.Chain.NativeAsset())
	for _, t := range c.Tokens {
		if !seen.Add(t.Symbol) {
			return fmt.Errorf("evm: %s: token symbol %q empty or duplicated (the native asset is %s)", c.Chain, t.Symbol, c.Chain.NativeAsset())
		}
		if t.Decimals < 0 || t.Decimals > 36 {
			return fmt.Errorf("evm: %s: token %s: decimals %d", c.Chain, t.Symbol, t.Decimals)
		}
	}
	return nil
}

// Public test networks Veil's EVM chains map to.
var testnets = map[chains.ID]struct {
	chainID  uint64
	explorer string
	usdc     string
}{
	chains.Horizen:  {2651420, "", ""},
	chains.Ethereum: {11155111, "https://sepolia.etherscan.io/tx/{hash}", "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"},
	chains.Polygon:  {80002, "https://amoy.polygonscan.com/tx/{hash}", "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582"},
	chains.Base:     {84532, "https://sepolia.basescan.org/tx/{hash}", "0x036CbD53842c5426634e7929541eC2318f3dCF7e"},
}

// TestnetChainID is the chain id of the public test network id maps to
// (and of its devnet).
func TestnetChainID(id chains.ID) uint64 { return testnets[id].chainID }

// EVMChains lists the EVM chains in canonical order.
func EVMChains() []chains.ID {
	var out []chains.ID
	for _, id := range chains.Order() {
		if id.Family() == chains.FamilyEVM {
			out = append(out, id)
		}
	}
	return out
}

// DevChainIDs are the chain ids of local development nodes (Hardhat and
// Anvil 31337, geth --dev and Ganache 1337). They mine a block only when a
// transaction arrives, so a confirmation depth would hide a payment until
// unrelated transactions push two more blocks: their default depth is 0.
var DevChainIDs = map[uint64]bool{31337: true, 1337: true}

// ConfigFromEnv reads a chain's configuration for a real network from the
// environment (getenv; nil means the process environment, where a variable
// set to "" is told apart from an unset one). ok is false when
// VEIL_RPC_<CHAIN> is unset: the chain then runs on the devnet. Variables,
// with CHAIN the upper-case chain id:
//
//	VEIL_RPC_<CHAIN>              RPC URL (required)
//	VEIL_EVM_<CHAIN>_CHAIN_ID     default: the test network's (see docs)
//	VEIL_EXPLORER_<CHAIN>         tx link template with {hash}; set to "" (or "none") for no links;
//	                              default: the test network's explorer, only for its chain id
//	VEIL_EVM_<CHAIN>_ANNOUNCER    default: the canonical ERC-5564 announcer
//	VEIL_EVM_<CHAIN>_SENDER       StealthSender address
//	VEIL_EVM_<CHAIN>_NAMES        VeilNames address
//	VEIL_EVM_<CHAIN>_TOKENS       SYMBOL=0xaddress:decimals,... (default: Circle's test USDC, only
//	                              for the test network's chain id)
//	VEIL_EVM_<CHAIN>_FROM_BLOCK   first block to scan
//	VEIL_EVM_<CHAIN>_CONFIRMATIONS  scan depth (default 2; 0 for DevChainIDs)
//	VEIL_EVM_<CHAIN>_LOG_RANGE    blocks per eth_getLogs (default 2000)
func ConfigFromEnv(id chains.ID, getenv func(string) string) (cfg Config, ok bool, err error) {
	if getenv == nil {
		return ConfigFromLookup(id, os.LookupEnv)
	}
	return ConfigFromLookup(id, func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	})
}

// ConfigFromLookup is ConfigFromEnv over a lookup that tells an empty
// variable from an unset one (os.LookupEnv).
func ConfigFromLookup(id chains.ID, lookup func(string) (string, bool)) (cfg Config, ok bool, err error) {
	getenv := func(k string) string {
		v, _ := lookup(k)
		return v
	}
	up := strings.ToUpper(string(id))
	url := getenv("VEIL_RPC_" + up)
	if url == "" {
		return Config{}, false, nil
	}
	tn := testnets[id]
	cfg = Config{Chain: id, RPCURL: url, ChainID: tn.chainID}
	env := func(name string) string { return getenv("VEIL_EVM_" + up + "_" + name) }
	num := func(name string, dst *uint64) {
		if v := env(name); v != "" && err == nil {
			n, e := strconv.ParseUint(v, 10, 64)
			if e != nil {
				err = fmt.Errorf("VEIL_EVM_%s_%s=%q: %w", up, name, v, e)
			}
			*dst = n
		}
	}
	addr := func(name string, dst *common.Address) {
		if v := env(name); v != "" && err == nil {
			if !common.IsHexAddress(v) {
				err = fmt.Errorf("VEIL_EVM_%s_%s=%q: not an address", up, name, v)
			}
			*dst = common.HexToAddress(v)
		}
	}
	num("CHAIN_ID", &cfg.ChainID)
	// What Veil knows of the public test network (explorer, Circle's USDC)
	// holds only on that network: another chain id (a local node, a
	// mainnet) starts without links and tokens.
	onTestnet := cfg.ChainID == tn.chainID
	if onTestnet {
		cfg.ExplorerTx = tn.explorer
		if tn.usdc != "" {
			cfg.Tokens = []Token{{Symbol: "USDC", Address: common.HexToAddress(tn.usdc), Decimals: 6}}
		}
	}
	cfg.Confirmations = 2
	if DevChainIDs[cfg.ChainID] {
		cfg.Confirmations = 0
	}
	num("FROM_BLOCK", &cfg.FromBlock)
	num("CONFIRMATIONS", &cfg.Confirmations)
	num("LOG_RANGE", &cfg.LogRange)
	addr("ANNOUNCER", &cfg.Announcer)
	addr("SENDER", &cfg.Sender)
	addr("NAMES", &cfg.Names)
	if v, set := lookup("VEIL_EXPLORER_" + up); set {
		cfg.ExplorerTx = strings.TrimSpace(v)
		if strings.EqualFold(cfg.ExplorerTx, "none") || strings.EqualFold(cfg.ExplorerTx, "off") {
			cfg.ExplorerTx = ""
		}
		if cfg.ExplorerTx != "" && !strings.Contains(cfg.ExplorerTx, "{hash}") && err == nil {
			err = fmt.Errorf("VEIL_EXPLORER_%s=%q: the template needs {hash} where the transaction hash goes (or set it empty for no links)", up, v)
		}
	}
	if err == nil {
		var tokens []Token
		var set bool
		if tokens, set, err = connopts.List(getenv, envVar(id, "TOKENS"), "SYMBOL=0xaddress:decimals", parseToken); set {
			cfg.Tokens = tokens
		}
	}
	if err != nil {
		return Config{}, true, err
	}
	cfg.defaults()
	return cfg, true, cfg.Validate()
}

func parseToken(item string) (Token, bool) {
	sym, rest, ok1 := strings.Cut(item, "=")
	a, d, ok2 := strings.Cut(rest, ":")
	dec, err := strconv.Atoi(d)
	return Token{Symbol: strings.ToUpper(sym), Address: common.HexToAddress(a), Decimals: dec}, ok1 && ok2 && err == nil && common.IsHexAddress(a)
}
