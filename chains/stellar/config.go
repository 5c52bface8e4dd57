// Package stellar is the chains.Connector of Stellar. It talks to a Horizon
// server through the Stellar Go SDK (horizonclient, txnbuild, keypair, xdr):
// the public test network's Horizon or the embedded devnet
// (chains/devnet/stellardev) on a loopback port, the same code path either
// way.
//
// A Connector holds no keys: every transaction hash is signed by a
// chains.Signer (the enclave), with the agent's account key or, for a
// withdrawal, with the one-time stealth key. Every write is an intent
// persisted in the store before it is submitted, so that a retry with the
// same idempotency key never pays twice; a transaction rejected with
// tx_bad_seq is rebuilt with the account's current sequence number and
// re-signed. The formats (announcements, names) are in docs/stealth.md and
// the operations in docs/chains-stellar.md.
package stellar

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"filippo.io/edwards25519"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/connopts"
)

// Amounts, in stroops (1 XLM = 10^7 stroops).
const (
	// Decimals of XLM and of every Stellar asset amount.
	Decimals = 7
	// BaseReserve is the network's base reserve (0.5 XLM): an account's
	// minimum balance is (2 + subentries + sponsoring) × BaseReserve.
	BaseReserve = 5_000_000
	// BaseFee is the minimum fee per operation (100 stroops).
	BaseFee = 100
	// AnnouncementStroops is what every announcement pays the
	// announcement account (1 stroop), so that the account's history lists
	// the transaction.
	AnnouncementStroops = 1
	// TokenStartingBalance is the XLM a token payment gives the new
	// one-time account: its own reserve (1 XLM), one trustline (0.5 XLM)
	// and fees for the withdrawal (0.5 XLM). The withdrawal merges it back
	// to the recipient's destination.
	TokenStartingBalance = 20_000_000
)

// Names of the data entries and labels of the formats (docs/stealth.md).
const (
	// AnnouncementData is the ManageData name whose 33-byte value is the
	// announcement payload (view tag ‖ ephemeral X25519 key). The same
	// transaction deletes the entry again, so it costs no reserve.
	AnnouncementData = "veil.stealth.v1"
	// NameData and MetaData are the ManageData entries a name registration
	// sets on the owner's account: the name (without ".veil") and the 64
	// raw bytes of the meta-address (spending key ‖ viewing key).
	NameData = "veil.name"
	MetaData = "veil.meta"
)

// IndexAccount is a "nothing up my sleeve" account id: the first
// SHA-256("veil/stellar/" + label + "/v1" ‖ counter as 4 bytes big-endian),
// counter = 0, 1, …, that decodes as an ed25519 point of full order. Nobody
// knows its private key, so nobody can merge the account or move what it
// holds; anyone can create it. Labels: "announcements", "names".
func IndexAccount(label string) string {
	for i := uint32(0); ; i++ {
		var ctr [4]byte
		binary.BigEndian.PutUint32(ctr[:], i)
		h := sha256.Sum256(append([]byte("veil/stellar/"+label+"/v1"), ctr[:]...))
		p, err := new(edwards25519.Point).SetBytes(h[:])
		if err != nil || string(p.Bytes()) != string(h[:]) {
			continue
		}
		if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
			continue
		}
		s, err := strkey.Encode(strkey.VersionByteAccountID, h[:])
		if err != nil {
			panic(err)
		}
		return s
	}
}

// The well-known index accounts (IndexAccount of "announcements" and
// "names"), the same on every network.
var (
	AnnouncementAccount = IndexAccount("announcements")
	RegistryAccount     = IndexAccount("names")
)

// Asset is a credit asset the connector reports and pays in.
type Asset struct {
	Code   string `json:"code"`
	Issuer string `json:"issuer"`
}

// Config describes the Stellar network a connector talks to.
type Config struct {
	HorizonURL        string `json:"horizonUrl"`
	NetworkPassphrase string `json:"networkPassphrase"`
	// ExplorerTx is the transaction link template: "{hash}" is replaced
	// by the hex transaction hash. Empty: TxLink returns "".
	ExplorerTx string `json:"explorerTx"`
	// Assets are the credit assets (USDC) by code.
	Assets []Asset `json:"assets"`
	// AnnouncementAccount and RegistryAccount default to the well-known
	// index accounts.
	AnnouncementAccount string `json:"announcementAccount"`
	RegistryAccount     string `json:"registryAccount"`
	// Friendbot: Horizon serves /friendbot (the test network and the
	// devnet do). Without it Fund reports chains.ErrUnavailable.
	Friendbot bool `json:"friendbot"`
	// TxTimeout is every transaction's validity window (time bounds), so
	// that an attempt that did not land is provably dead after it and may
	// be rebuilt. Default 2 minutes.
	TxTimeout time.Duration `json:"txTimeout"`
	// HTTPTimeout bounds one Horizon request. Default 30s.
	HTTPTimeout time.Duration `json:"httpTimeout"`
}

func (c *Config) defaults() {
	if c.NetworkPassphrase == "" {
		c.NetworkPassphrase = network.TestNetworkPassphrase
	}
	if c.AnnouncementAccount == "" {
		c.AnnouncementAccount = AnnouncementAccount
	}
	if c.RegistryAccount == "" {
		c.RegistryAccount = RegistryAccount
	}
	if c.TxTimeout <= 0 {
		c.TxTimeout = 2 * time.Minute
	}
	if c.HTTPTimeout <= 0 {
		c.HTTPTimeout = 30 * time.Second
	}
	c.HorizonURL = strings.TrimRight(c.HorizonURL, "/")
}

// assets are the connector's own asset descriptors (chains.Asset): XLM,
// then the credit assets by issuer, all with Stellar's 7 decimals.
func (c *Config) assets() []chains.Asset {
	out := []chains.Asset{{Chain: chains.Stellar, Symbol: "XLM", Decimals: Decimals}}
	for _, a := range c.Assets {
		out = append(out, chains.Asset{Chain: chains.Stellar, Symbol: strings.ToUpper(a.Code), Decimals: Decimals, Ref: a.Issuer})
	}
	return out
}

// Validate reports what is missing or wrong.
func (c *Config) Validate() error {
	if c.HorizonURL == "" {
		return fmt.Errorf("stellar: Horizon URL missing")
	}
	for _, a := range []string{c.AnnouncementAccount, c.RegistryAccount} {
		if !strkey.IsValidEd25519PublicKey(a) {
			return fmt.Errorf("stellar: %q is not an account id", a)
		}
	}
	seen := connopts.NewSymbols("XLM")
	for _, a := range c.Assets {
		if len(strings.ToUpper(a.Code)) > 12 || !seen.Add(a.Code) {
			return fmt.Errorf("stellar: asset code %q empty, too long or duplicated", a.Code)
		}
		if !strkey.IsValidEd25519PublicKey(a.Issuer) {
			return fmt.Errorf("stellar: asset %s: issuer %q is not an account id", a.Code, a.Issuer)
		}
	}
	return nil
}

// Test network defaults.
const (
	TestnetHorizon  = "https://horizon-testnet.stellar.org"
	TestnetExplorer = "https://stellar.expert/explorer/testnet/tx/{hash}"
	// TestnetUSDCIssuer is Circle's test USDC issuer on the test network.
	TestnetUSDCIssuer = "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"
)

// ConfigFromEnv reads the configuration for a real network from the
// environment (getenv; nil means os.Getenv). ok is false when
// VEIL_RPC_STELLAR is unset: the chain then runs on the devnet. Variables:
//
//	VEIL_RPC_STELLAR               Horizon URL ("testnet" = SDF's test network)
//	VEIL_STELLAR_PASSPHRASE        network passphrase (default: the test network's)
//	VEIL_EXPLORER_STELLAR          tx link template with {hash}
//	VEIL_STELLAR_ASSETS            CODE=ISSUER,... (default: USDC of Circle's test issuer)
//	VEIL_STELLAR_ANNOUNCEMENTS     announcement account (default: the well-known one)
//	VEIL_STELLAR_REGISTRY          name registry account (default: the well-known one)
//	VEIL_STELLAR_FRIENDBOT         "1": Horizon serves /friendbot (default on the test network)
//	VEIL_STELLAR_TX_TIMEOUT_SECONDS  transaction validity window (default 120)
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	getenv = connopts.Getenv(getenv)
	url := getenv("VEIL_RPC_STELLAR")
	if url == "" {
		return Config{}, false, nil
	}
	if url == "testnet" {
		url = TestnetHorizon
	}
	cfg = Config{
		HorizonURL: url, NetworkPassphrase: network.TestNetworkPassphrase,
		ExplorerTx: TestnetExplorer, Assets: []Asset{{Code: "USDC", Issuer: TestnetUSDCIssuer}},
	}
	if v := getenv("VEIL_STELLAR_PASSPHRASE"); v != "" {
		cfg.NetworkPassphrase = v
		cfg.ExplorerTx = ""
	}
	cfg.Friendbot = cfg.NetworkPassphrase == network.TestNetworkPassphrase
	if v := getenv("VEIL_EXPLORER_STELLAR"); v != "" {
		cfg.ExplorerTx = v
	}
	assets, set, err := connopts.List(getenv, "VEIL_STELLAR_ASSETS", "CODE=ISSUER", func(item string) (Asset, bool) {
		code, issuer, ok := strings.Cut(item, "=")
		return Asset{Code: strings.ToUpper(code), Issuer: issuer}, ok
	})
	if err != nil {
		return Config{}, true, err
	}
	if set {
		cfg.Assets = assets
	}
	cfg.AnnouncementAccount = getenv("VEIL_STELLAR_ANNOUNCEMENTS")
	cfg.RegistryAccount = getenv("VEIL_STELLAR_REGISTRY")
	if v := getenv("VEIL_STELLAR_FRIENDBOT"); v != "" {
		cfg.Friendbot = v == "1" || strings.EqualFold(v, "true")
	}
	secs, err := connopts.Positive(getenv, "VEIL_STELLAR_TX_TIMEOUT_SECONDS")
	if err != nil {
		return Config{}, true, err
	}
	cfg.TxTimeout = time.Duration(secs) * time.Second
	cfg.defaults()
	return cfg, true, cfg.Validate()
}
