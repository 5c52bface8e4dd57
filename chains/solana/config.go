// Package solana is the chains.Connector of Solana. It speaks JSON-RPC
// through solana-go's rpc client to any node: a public cluster's RPC URL
// (devnet or testnet) or the embedded devnet (chains/devnet/solanadev) on a
// loopback port, the same code path either way. Transactions are built with
// solana-go and signed by a chains.Signer (the enclave): the agent's
// account key, or the one-time stealth key for a withdrawal.
//
// Every write is an intent persisted in the store before it is sent, so a
// retry with the same idempotency key never pays twice; a transaction
// whose blockhash expired before it landed is rebuilt with a fresh
// blockhash and re-signed, once the old one provably cannot land. The
// formats are in docs/stealth.md and the operations in
// docs/chains-solana.md.
package solana

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	solanago "github.com/gagliardetto/solana-go"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/connopts"
)

// Runtime figures.
const (
	// Decimals of SOL (lamports).
	Decimals = 9
	// LamportsPerSignature is the base fee.
	LamportsPerSignature = 5000
	// TokenStipendFees is the lamports a token payment gives the one-time
	// account for the fees of its withdrawal, on top of the rent-exempt
	// minimum of an empty account and of one token account (the
	// destination's associated token account, if it must be created).
	TokenStipendFees = 20_000
)

// Memo prefixes (docs/stealth.md).
const (
	// AnnouncementMemo prefixes the memo of a payment: then 66 lower-case
	// hex digits of view tag ‖ ephemeral X25519 key.
	AnnouncementMemo = "veil:stealth:1:"
	// NameMemo prefixes the memo of a name registration: then
	// "<name>:<128 hex digits of spending key ‖ viewing key>".
	NameMemo = "veil:name:1:"
)

// IndexAccount is a "nothing up my sleeve" address: the first
// SHA-256("veil/solana/" + label + "/v1" ‖ counter as 4 bytes big-endian)
// that is NOT on the ed25519 curve, so that no private key exists for it
// (like a program-derived address). Labels: "announcements", "names".
func IndexAccount(label string) solanago.PublicKey {
	for i := uint32(0); ; i++ {
		var ctr [4]byte
		binary.BigEndian.PutUint32(ctr[:], i)
		h := sha256.Sum256(append([]byte("veil/solana/"+label+"/v1"), ctr[:]...))
		if !solanago.IsOnCurve(h[:]) {
			return solanago.PublicKeyFromBytes(h[:])
		}
	}
}

// The well-known index accounts, the same on every cluster.
var (
	AnnouncementAccount = IndexAccount("announcements")
	RegistryAccount     = IndexAccount("names")
)

// Token is an SPL token the connector reports and pays in.
type Token struct {
	Symbol   string `json:"symbol"`
	Mint     string `json:"mint"`
	Decimals int    `json:"decimals"`
}

// Config describes the Solana cluster a connector talks to.
type Config struct {
	RPCURL string `json:"rpcUrl"`
	// ExplorerTx is the transaction link template with "{hash}" (the
	// base58 signature). Empty: TxLink returns "".
	ExplorerTx string  `json:"explorerTx"`
	Tokens     []Token `json:"tokens"`
	// AnnouncementAccount and RegistryAccount default to the well-known
	// index accounts.
	AnnouncementAccount string `json:"announcementAccount"`
	RegistryAccount     string `json:"registryAccount"`
	// DevnetFaucet: the node serves Veil's devnet faucet method
	// (veilFund: SOL and USDC). Otherwise Fund uses requestAirdrop
	// (SOL only, where the cluster allows it).
	DevnetFaucet bool `json:"devnetFaucet"`
	// AirdropLamports is what Fund requests with requestAirdrop
	// (default 1 SOL).
	AirdropLamports uint64 `json:"airdropLamports"`
	// PollInterval is how often confirmations are polled (default 500ms).
	PollInterval time.Duration `json:"pollInterval"`
	// ConfirmTimeout bounds the wait for a sent transaction to be
	// confirmed (default 60s).
	ConfirmTimeout time.Duration `json:"confirmTimeout"`
}

func (c *Config) defaults() {
	if c.AnnouncementAccount == "" {
		c.AnnouncementAccount = AnnouncementAccount.String()
	}
	if c.RegistryAccount == "" {
		c.RegistryAccount = RegistryAccount.String()
	}
	if c.AirdropLamports == 0 {
		c.AirdropLamports = solanago.LAMPORTS_PER_SOL
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.ConfirmTimeout <= 0 {
		c.ConfirmTimeout = 60 * time.Second
	}
}

// assets are the connector's own asset descriptors (chains.Asset): SOL,
// then the tokens by mint.
func (c *Config) assets() []chains.Asset {
	out := []chains.Asset{{Chain: chains.Solana, Symbol: "SOL", Decimals: Decimals}}
	for _, t := range c.Tokens {
		out = append(out, chains.Asset{Chain: chains.Solana, Symbol: strings.ToUpper(t.Symbol), Decimals: t.Decimals, Ref: t.Mint})
	}
	return out
}

// Validate reports what is missing or wrong.
func (c *Config) Validate() error {
	if c.RPCURL == "" {
		return fmt.Errorf("solana: RPC URL missing")
	}
	for _, a := range []string{c.AnnouncementAccount, c.RegistryAccount} {
		if _, err := solanago.PublicKeyFromBase58(a); err != nil {
			return fmt.Errorf("solana: %q is not an address", a)
		}
	}
	seen := connopts.NewSymbols("SOL")
	for _, t := range c.Tokens {
		if !seen.Add(t.Symbol) {
			return fmt.Errorf("solana: token symbol %q empty or duplicated", t.Symbol)
		}
		if _, err := solanago.PublicKeyFromBase58(t.Mint); err != nil {
			return fmt.Errorf("solana: token %s: mint %q is not an address", t.Symbol, t.Mint)
		}
		if t.Decimals < 0 || t.Decimals > 18 {
			return fmt.Errorf("solana: token %s: decimals %d", t.Symbol, t.Decimals)
		}
	}
	return nil
}

// Public cluster defaults.
const (
	DevnetRPC      = "https://api.devnet.solana.com"
	DevnetExplorer = "https://explorer.solana.com/tx/{hash}?cluster=devnet"
	// DevnetUSDCMint is Circle's USDC mint on Solana's devnet cluster.
	DevnetUSDCMint = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU"
)

// ConfigFromEnv reads the configuration for a real cluster from the
// environment (getenv; nil means os.Getenv). ok is false when
// VEIL_RPC_SOLANA is unset: the chain then runs on the embedded devnet.
//
//	VEIL_RPC_SOLANA              RPC URL ("devnet", "testnet": Solana's public clusters)
//	VEIL_EXPLORER_SOLANA         tx link template with {hash}
//	VEIL_SOLANA_TOKENS           SYMBOL=mint:decimals,... (default: Circle's devnet USDC)
//	VEIL_SOLANA_ANNOUNCEMENTS    announcement index account (default: the well-known one)
//	VEIL_SOLANA_REGISTRY         name registry index account (default: the well-known one)
//	VEIL_SOLANA_AIRDROP_LAMPORTS what Fund requests (default 1 SOL)
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	getenv = connopts.Getenv(getenv)
	url := getenv("VEIL_RPC_SOLANA")
	if url == "" {
		return Config{}, false, nil
	}
	switch url {
	case "devnet":
		url = DevnetRPC
	case "testnet":
		url = "https://api.testnet.solana.com"
	}
	cfg = Config{RPCURL: url, ExplorerTx: DevnetExplorer, Tokens: []Token{{Symbol: "USDC", Mint: DevnetUSDCMint, Decimals: 6}}}
	if v := getenv("VEIL_EXPLORER_SOLANA"); v != "" {
		cfg.ExplorerTx = v
	}
	tokens, set, err := connopts.List(getenv, "VEIL_SOLANA_TOKENS", "SYMBOL=mint:decimals", func(item string) (Token, bool) {
		sym, rest, ok1 := strings.Cut(item, "=")
		mint, d, ok2 := strings.Cut(rest, ":")
		dec, err := strconv.Atoi(d)
		return Token{Symbol: strings.ToUpper(sym), Mint: mint, Decimals: dec}, ok1 && ok2 && err == nil
	})
	if err != nil {
		return Config{}, true, err
	}
	if set {
		cfg.Tokens = tokens
	}
	cfg.AnnouncementAccount = getenv("VEIL_SOLANA_ANNOUNCEMENTS")
	cfg.RegistryAccount = getenv("VEIL_SOLANA_REGISTRY")
	if cfg.AirdropLamports, err = connopts.Positive(getenv, "VEIL_SOLANA_AIRDROP_LAMPORTS"); err != nil {
		return Config{}, true, err
	}
	cfg.defaults()
	return cfg, true, cfg.Validate()
}
