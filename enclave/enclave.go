// Package enclave derives, holds and uses the keys of Veil's agents. Keys are
// derived on demand from a root secret, never stored; a Provider is the only
// thing that ever holds private key material, and it hands out a private key
// only through Export (the account key, after the owner's fresh signature
// was checked by the caller) and ScanKeys (the viewing key, which the
// in-process scanner needs).
//
// Providers:
//
//   - enclave/software: a 32-byte root sealed in the data directory (the
//     default) or given in the configuration (cluster members).
//   - enclave/dstack: keys from the dstack guest agent's derived key, TDX
//     quotes from the guest agent.
//
// The derivation, the attestation formats and the export format are written
// down in docs/enclave.md.
package enclave

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"golang.org/x/crypto/sha3"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
)

// Provider is an enclave. Every method is safe for concurrent use. No
// method logs or returns private key material except Export and ScanKeys.
type Provider interface {
	// DeriveKeys returns the public keys of an agent on a chain at a key
	// epoch (0 for the first keys; a later epoch rotates every key).
	DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (PublicKeys, error)
	// Sign signs req.Payload with the account key of req.Key (AgentID,
	// Chain, Epoch), or, when req.Key.EphemeralPub is set, with the
	// one-time stealth key of the payment announced with that ephemeral
	// public key. The one-time key is derived inside the provider and
	// never returned. It refuses a request that CheckRequest refuses: a
	// transaction that moves value is signed only with an explicit spend
	// (WithPolicy checks that spend against the owner's policy). See
	// chains.SignRequest for the payload and signature formats.
	Sign(ctx context.Context, req chains.SignRequest) ([]byte, error)
	// ScanKeys returns what a scanner needs to find the agent's payments:
	// the viewing private key and the spending public key. The viewing key
	// leaves the provider because the scanner runs in-process and checks
	// every announcement against every agent (one ECDH per pair); asking
	// the provider per pair would cost a message per announcement. The
	// viewing key reveals which payments an agent received, never lets
	// anyone spend them.
	ScanKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (ScanKeys, error)
	// Attest binds the agent's public keys on the given chains (epoch 0)
	// and the caller's nonce (see CheckNonce) into a signed statement or
	// quote.
	Attest(ctx context.Context, agentID string, chainIDs []chains.ID, nonce []byte) (Attestation, error)
	// Info describes the provider (see Info).
	Info(ctx context.Context) (Info, error)
	// Export returns the agent's account private key on chain as a
	// 0x-prefixed lower-case hex string: for EVM chains the 32-byte
	// secp256k1 scalar, for Stellar and Solana the 32-byte ed25519 seed
	// (RFC 8032), from which Stellar's "S…" secret seed and Solana's 64-byte
	// keypair (seed || public key) follow. The caller must have checked the
	// owner's fresh signature.
	Export(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (string, error)
}

// Errors. Match with errors.Is; chains.ErrUnknownChain reports a bad chain.
var (
	// ErrInvalidInput: a malformed agent id, payload, ephemeral key or
	// nonce (the HTTP layer answers 400).
	ErrInvalidInput = errors.New("enclave: invalid input")
	// ErrAttestation: an attestation that does not verify.
	ErrAttestation = errors.New("enclave: attestation does not verify")
	// ErrUnavailable: the provider cannot serve (closed, not started).
	ErrUnavailable = errors.New("enclave: unavailable")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidInput, fmt.Sprintf(format, args...))
}

// PublicKeys are an agent's public keys on one chain.
type PublicKeys struct {
	Chain chains.ID
	Epoch uint32
	// Address is the account address: EIP-55 "0x…" on EVM chains, the
	// "G…" StrKey on Stellar, base58 on Solana.
	Address string
	// AccountPublicKey: 33-byte compressed SEC1 secp256k1 key (EVM) or the
	// 32-byte ed25519 key (Stellar, Solana).
	AccountPublicKey []byte
	// SpendingPublicKey and ViewingPublicKey are the stealth keys: 33-byte
	// compressed secp256k1 keys (EVM); an ed25519 key and an X25519 key of
	// 32 bytes each (Stellar, Solana).
	SpendingPublicKey []byte
	ViewingPublicKey  []byte
	// MetaAddress is "st:eth:0x…", "st:xlm:…" or "st:sol:…".
	MetaAddress string
}

// ScanKeys are an agent's scanning keys on one chain.
type ScanKeys struct {
	Chain chains.ID
	Epoch uint32
	// ViewingPrivateKey: a big-endian secp256k1 scalar (EVM) or an X25519
	// private key (Stellar, Solana).
	ViewingPrivateKey [32]byte
	// SpendingPublicKey: 33 bytes compressed (EVM) or 32 bytes ed25519.
	SpendingPublicKey []byte
}

// Secp256k1Entry returns the keys as the EVM scanner takes them.
func (k ScanKeys) Secp256k1Entry() (secpstealth.ViewKeyEntry, error) {
	var e secpstealth.ViewKeyEntry
	if k.Chain.Family() != chains.FamilyEVM || len(k.SpendingPublicKey) != 33 {
		return e, invalid("scan keys of %s are not secp256k1 keys", k.Chain)
	}
	e.ViewPriv = k.ViewingPrivateKey
	copy(e.SpendPub[:], k.SpendingPublicKey)
	return e, nil
}

// Ed25519Entry returns the keys as the Stellar and Solana scanner takes them.
func (k ScanKeys) Ed25519Entry() (edstealth.ViewKeyEntry, error) {
	var e edstealth.ViewKeyEntry
	if k.Chain.Family() == chains.FamilyEVM || len(k.SpendingPublicKey) != 32 {
		return e, invalid("scan keys of %s are not ed25519 keys", k.Chain)
	}
	e.ViewPriv = k.ViewingPrivateKey
	copy(e.SpendPub[:], k.SpendingPublicKey)
	return e, nil
}

// Zero overwrites the viewing private key.
func (k *ScanKeys) Zero() { clear(k.ViewingPrivateKey[:]) }

// Info describes a provider (GET /tee/info).
type Info struct {
	// Provider is "software" or "dstack".
	Provider string `json:"provider"`
	// Measurement identifies the running code: for software,
	// "sha256:<hex>" of the executable file, computed once per process;
	// for dstack, "compose-hash:<hex>" of the app's compose file.
	Measurement string `json:"measurement"`
	// InstanceID identifies this process (random per start for software;
	// the CVM's instance id for dstack).
	InstanceID string `json:"instanceId"`
	// AttestationKeyType is "ed25519" for software, "tdx-dcap" for dstack.
	AttestationKeyType string `json:"attestationKeyType"`
	// AttestationPublicKey is the key that signs statements: 64 lower-case
	// hex digits (32 bytes), no prefix; empty for dstack (Intel certifies
	// the quote's key).
	AttestationPublicKey string `json:"attestationPublicKey"`
	// Note says what the attestation proves.
	Note string `json:"note"`
}

// SoftwareNote is Info.Note of the software provider.
const SoftwareNote = "software attestation proves only that the signer holds this deployment's root secret; " +
	"it does not prove that the code runs in an isolated TEE"

// AttestedKeys are one chain's public keys in an attestation.
type AttestedKeys struct {
	Epoch       uint32 `json:"epoch"`
	Address     string `json:"address"`
	MetaAddress string `json:"metaAddress"`
	// AccountPublicKey is lower-case hex without prefix (see PublicKeys).
	AccountPublicKey string `json:"accountPublicKey"`
}

// Attestation is the reply of GET /tee/attest/:agentId.
type Attestation struct {
	AgentID    string                     `json:"agentId"`
	PublicKeys map[chains.ID]AttestedKeys `json:"publicKeys"`
	// ReportData is hex SHA-256 of ReportDataInput (64 hex digits).
	ReportData string `json:"reportData"`
	// Provider, Measurement and InstanceID repeat the signer's Info.
	Provider    string `json:"provider"`
	Measurement string `json:"measurement"`
	InstanceID  string `json:"instanceId"`
	// QuoteType is "software-ed25519" (Quote is the base64 ed25519
	// signature over Statement) or, for dstack, "tdx" (Quote is the hex
	// TDX quote).
	QuoteType string `json:"quoteType"`
	Quote     string `json:"quote"`
	// Statement is the exact signed text (software only); a verifier
	// rebuilds it from the other fields and never trusts it as given.
	Statement string `json:"statement,omitempty"`
	// EventLog (dstack only) is the guest agent's event log as it returned
	// it with the quote (a JSON array); replayed, it must give the quote's
	// RTMRs, and its RTMR3 events name the compose hash, app id, instance
	// id and key provider.
	EventLog string `json:"eventLog,omitempty"`
	// Nonce is the caller's nonce as given (UTF-8 text).
	Nonce string `json:"nonce"`
	// IssuedAt is RFC 3339 UTC with second precision.
	IssuedAt string `json:"issuedAt"`
}

// MaxNonceLen is the longest nonce, in bytes (a hex-encoded 64-byte value
// fits exactly).
const MaxNonceLen = 128

// CheckNonce validates an attestation nonce: 1 to MaxNonceLen bytes of
// valid UTF-8 text without control characters. The HTTP layer passes the
// ?nonce= query value as given (after URL decoding).
func CheckNonce(nonce []byte) error {
	if len(nonce) == 0 || len(nonce) > MaxNonceLen {
		return invalid("nonce must have 1 to %d bytes, has %d", MaxNonceLen, len(nonce))
	}
	if !utf8.Valid(nonce) {
		return invalid("nonce is not UTF-8 text")
	}
	for _, r := range string(nonce) {
		if r < 0x20 || r == 0x7f {
			return invalid("nonce contains a control character")
		}
	}
	return nil
}

// MaxAgentIDLen is the longest agent id the enclave derives keys for.
const MaxAgentIDLen = 128

// CheckAgentID validates an agent id: 1 to MaxAgentIDLen characters of
// [A-Za-z0-9._-]. Keys are bound to the exact string (no case folding):
// agent ids are lower-case UUIDs.
func CheckAgentID(id string) error {
	if len(id) == 0 || len(id) > MaxAgentIDLen {
		return invalid("agent id must have 1 to %d characters", MaxAgentIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return invalid("agent id may contain only letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// CheckKeyOwner validates the owner of a key a provider derives for
// DeriveKeys and Sign: an agent id (CheckAgentID) or chains.RelayerID.
// Export, ScanKeys and Attest take agent ids only: the relayer's key is
// never exported, and it has no stealth keys.
func CheckKeyOwner(id string) error {
	if id == chains.RelayerID {
		return nil
	}
	return CheckAgentID(id)
}

// CheckChain validates a single chain identifier.
func CheckChain(c chains.ID) error {
	_, err := chains.Parse(string(c))
	return err
}

// AccountAddress returns the account address of an account public key on
// chain: EIP-55 of a 33-byte compressed secp256k1 key (EVM), the Stellar
// "G…" StrKey or the Solana base58 encoding of a 32-byte ed25519 key.
func AccountAddress(chain chains.ID, pub []byte) (string, error) {
	if err := CheckChain(chain); err != nil {
		return "", err
	}
	switch chain.Family() {
	case chains.FamilyEVM:
		if len(pub) != 33 {
			return "", invalid("an EVM account public key has 33 bytes, got %d", len(pub))
		}
		a, err := secpstealth.Address([33]byte(pub))
		if err != nil {
			return "", invalid("account public key is not a secp256k1 point")
		}
		return EIP55(a), nil
	case chains.FamilyStellar:
		if len(pub) != 32 {
			return "", invalid("a Stellar account public key has 32 bytes, got %d", len(pub))
		}
		return edstealth.StellarAddress([32]byte(pub)), nil
	default:
		if len(pub) != 32 {
			return "", invalid("a Solana account public key has 32 bytes, got %d", len(pub))
		}
		return edstealth.SolanaAddress([32]byte(pub)), nil
	}
}

// EIP55 formats an Ethereum address with the EIP-55 mixed-case checksum.
func EIP55(a [20]byte) string {
	var lower [40]byte
	hex.Encode(lower[:], a[:])
	h := sha3.NewLegacyKeccak256()
	h.Write(lower[:])
	d := h.Sum(nil)
	out := make([]byte, 2, 42)
	out[0], out[1] = '0', 'x'
	for i, c := range lower {
		nib := d[i/2]
		if i%2 == 0 {
			nib >>= 4
		}
		if c >= 'a' && nib&0xf >= 8 {
			c -= 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// Key roles: every agent has three keys per chain and epoch.
const (
	RoleAccount = "account"
	RoleSpend   = "spend"
	RoleView    = "view"
)

// KeyPath is the derivation path of one key (docs/enclave.md):
// "veil/agent/<agentID>/<chain>/<epoch>/<role>", epoch in decimal. The
// caller has checked agentID (CheckAgentID) and chain.
//
// The relayer (chains.RelayerID) has its own path,
// "veil/relayer/<chain>/<epoch>/account": its key is never an agent's.
func KeyPath(agentID string, chain chains.ID, epoch uint32, role string) string {
	if agentID == chains.RelayerID {
		return "veil/relayer/" + string(chain) + "/" + strconv.FormatUint(uint64(epoch), 10) + "/" + role
	}
	return "veil/agent/" + agentID + "/" + string(chain) + "/" + strconv.FormatUint(uint64(epoch), 10) + "/" + role
}

// AttestationKeyPath is the derivation path of the attestation key.
const AttestationKeyPath = "veil/attestation"
