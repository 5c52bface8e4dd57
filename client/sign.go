package client

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/accounts/keystore"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/veilhq/veil/chains/walletsig"
)

// Wallet signature schemes (docs/signatures.md).
const (
	SchemeEVM     = "evm"
	SchemeStellar = "stellar"
	SchemeSolana  = "solana"
)

// Signer is an owner wallet that signs Veil's create and export messages
// (docs/signatures.md). The constructors below cover EVM keys (raw or a
// go-ethereum keystore file), Stellar and Solana ed25519 keys; implement it
// to sign elsewhere (a hardware wallet, a remote signer).
type Signer interface {
	// Scheme is SchemeEVM, SchemeStellar or SchemeSolana.
	Scheme() string
	// Address is the wallet address as it goes into the message and the
	// request (EIP-55 for EVM, G… for Stellar, base58 for Solana).
	Address() string
	// Sign signs the message text in the scheme's encoding.
	Sign(message string) (string, error)
}

// timeNow is the clock of the *Signed helpers.
var timeNow = time.Now

// SignCreate builds a signed POST /agent/create body: the three-line create
// message with Issued At = at, signed by s. It checks the name rule and
// that s's scheme fits chain, so a mistake fails here rather than at the
// server.
func SignCreate(s Signer, name, chain string, at time.Time) (CreateAgentRequest, error) {
	name = strings.TrimSuffix(name, NameSuffix)
	if !ValidName(name) {
		return CreateAgentRequest{}, fmt.Errorf("veil: invalid agent name %q: use 3 to 32 lowercase letters, digits and hyphens", name)
	}
	want, err := walletsig.ChainScheme(chain)
	if err != nil {
		return CreateAgentRequest{}, fmt.Errorf("veil: %w", err)
	}
	if want != "" && string(want) != s.Scheme() {
		return CreateAgentRequest{}, fmt.Errorf("veil: chain %s needs %s wallet, not %s one", chain, article(string(want)), article(s.Scheme()))
	}
	msg := walletsig.CreateMessage(name, chain, s.Address(), at)
	sig, err := s.Sign(msg)
	if err != nil {
		return CreateAgentRequest{}, err
	}
	return CreateAgentRequest{Name: name, Chain: chain, Wallet: s.Address(), Signature: sig, Message: msg}, nil
}

// SignExport builds a signed POST /agent/:id/export body with Issued At =
// at. s must be the agent's owner wallet.
func SignExport(s Signer, agentID string, at time.Time) (ExportRequest, error) {
	if agentID == "" {
		return ExportRequest{}, errors.New("veil: SignExport: empty agent id")
	}
	msg := walletsig.ExportMessage(agentID, s.Address(), at)
	sig, err := s.Sign(msg)
	if err != nil {
		return ExportRequest{}, err
	}
	return ExportRequest{Signature: sig, Message: msg}, nil
}

// CreateMessage and ExportMessage return the exact texts a wallet signs,
// for signing outside Go (MetaMask, Freighter, Phantom, cast).
func CreateMessage(name, chain, wallet string, at time.Time) string {
	return walletsig.CreateMessage(strings.TrimSuffix(name, NameSuffix), chain, wallet, at)
}

// ExportMessage: see CreateMessage.
func ExportMessage(agentID, wallet string, at time.Time) string {
	return walletsig.ExportMessage(agentID, wallet, at)
}

func article(scheme string) string {
	switch scheme {
	case SchemeEVM:
		return "an EVM"
	case SchemeStellar:
		return "a Stellar"
	default:
		return "a Solana"
	}
}

// --- EVM ---

type evmSigner struct{ key *ecdsa.PrivateKey }

// NewEVMSigner signs with an EVM private key (EIP-191 personal_sign).
func NewEVMSigner(key *ecdsa.PrivateKey) Signer { return evmSigner{key} }

// EVMSignerFromHex parses a hex private key (64 digits, 0x optional).
func EVMSignerFromHex(h string) (Signer, error) {
	key, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(h), "0x"))
	if err != nil {
		return nil, errors.New("veil: not an EVM private key: want 64 hex digits, 0x optional")
	}
	return evmSigner{key}, nil
}

// EVMSignerFromKeystore decrypts a go-ethereum (Web3 Secret Storage v3)
// keystore file, as geth, Foundry's `cast wallet` and MetaMask exports
// write them.
func EVMSignerFromKeystore(path, passphrase string) (Signer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("veil: keystore: %w", err)
	}
	key, err := keystore.DecryptKey(raw, passphrase)
	if err != nil {
		return nil, fmt.Errorf("veil: keystore %s: %w", path, err)
	}
	return evmSigner{key.PrivateKey}, nil
}

func (s evmSigner) Scheme() string  { return SchemeEVM }
func (s evmSigner) Address() string { return walletsig.EVMAddress(&s.key.PublicKey) }
func (s evmSigner) Sign(msg string) (string, error) {
	return walletsig.SignEVM(s.key, msg), nil
}

// --- Stellar ---

type stellarSigner struct {
	key   ed25519.PrivateKey
	sep53 bool
}

// NewStellarSigner signs the message bytes with ed25519 (base64), as the
// server's first Stellar form; sep53 signs the SEP-53 way instead
// (Freighter, `stellar message sign`).
func NewStellarSigner(key ed25519.PrivateKey, sep53 bool) Signer {
	return stellarSigner{key: key, sep53: sep53}
}

// StellarSignerFromSecret parses a Stellar secret seed (S…); sep53 as in
// NewStellarSigner.
func StellarSignerFromSecret(seed string, sep53 bool) (Signer, error) {
	raw, err := strkey.Decode(strkey.VersionByteSeed, strings.TrimSpace(seed))
	if err != nil {
		return nil, errors.New("veil: not a Stellar secret seed: want the S… key of 56 characters")
	}
	return stellarSigner{key: ed25519.NewKeyFromSeed(raw), sep53: sep53}, nil
}

func (s stellarSigner) Scheme() string { return SchemeStellar }
func (s stellarSigner) Address() string {
	return walletsig.StellarAddress(s.key.Public().(ed25519.PublicKey))
}
func (s stellarSigner) Sign(msg string) (string, error) {
	if s.sep53 {
		return walletsig.SignStellarSEP53(s.key, msg), nil
	}
	return walletsig.SignEd25519Base64(s.key, msg), nil
}

// --- Solana ---

type solanaSigner struct{ key ed25519.PrivateKey }

// NewSolanaSigner signs the message bytes with ed25519 (base58).
func NewSolanaSigner(key ed25519.PrivateKey) Signer { return solanaSigner{key} }

// SolanaSignerFromKeypair parses a Solana keypair: the Solana CLI's JSON
// array of 64 bytes (id.json), or the base58 string of those 64 bytes that
// wallets export. The public half must match the secret half.
func SolanaSignerFromKeypair(text string) (Signer, error) {
	text = strings.TrimSpace(text)
	var raw []byte
	if strings.HasPrefix(text, "[") {
		var arr []int
		if err := json.Unmarshal([]byte(text), &arr); err != nil {
			return nil, errors.New("veil: Solana keypair: want a JSON array of 64 numbers")
		}
		for _, v := range arr {
			if v < 0 || v > 255 {
				return nil, errors.New("veil: Solana keypair: numbers must be bytes (0 to 255)")
			}
			raw = append(raw, byte(v))
		}
	} else {
		b, err := base58.Decode(text)
		if err != nil {
			return nil, errors.New("veil: Solana keypair: want base58 or a JSON array of 64 bytes")
		}
		raw = b
	}
	if len(raw) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("veil: Solana keypair has %d bytes, want 64 (secret seed and public key)", len(raw))
	}
	key := ed25519.NewKeyFromSeed(raw[:32])
	if string(key[32:]) != string(raw[32:]) {
		return nil, errors.New("veil: Solana keypair: the public key does not match the secret")
	}
	return solanaSigner{key}, nil
}

// SolanaSignerFromKeypairFile reads a keypair file (see
// SolanaSignerFromKeypair).
func SolanaSignerFromKeypairFile(path string) (Signer, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("veil: Solana keypair: %w", err)
	}
	return SolanaSignerFromKeypair(string(raw))
}

func (s solanaSigner) Scheme() string { return SchemeSolana }
func (s solanaSigner) Address() string {
	return walletsig.SolanaAddress(s.key.Public().(ed25519.PublicKey))
}
func (s solanaSigner) Sign(msg string) (string, error) { return walletsig.SignSolana(s.key, msg), nil }
