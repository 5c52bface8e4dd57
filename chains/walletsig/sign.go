package walletsig

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
	"github.com/stellar/go-stellar-sdk/strkey"
)

// Client-side helpers: what a wallet does, for tests, the Go client and the
// CLI. The server never signs.

// SignEVM signs msg with EIP-191 personal_sign and returns the signature as
// "0x" + 130 hex digits with v = 27 or 28: what MetaMask, ethers.js
// signMessage and `cast wallet sign` return. Signatures are deterministic
// (RFC 6979) and low-s. It panics if priv is not a valid secp256k1 key.
func SignEVM(priv *ecdsa.PrivateKey, msg string) string {
	sig, err := crypto.Sign(eip191Hash(msg), priv)
	if err != nil {
		panic("walletsig: SignEVM: " + err.Error())
	}
	sig[64] += 27
	return "0x" + hex.EncodeToString(sig)
}

// SignEd25519Base64 signs the UTF-8 bytes of msg with ed25519 and returns the
// signature in standard padded base64 (the Stellar form; Solana accepts it
// too).
func SignEd25519Base64(priv ed25519.PrivateKey, msg string) string {
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(msg)))
}

// SignStellarSEP53 signs msg the way Stellar wallets implementing SEP-53 do
// (Freighter's signMessage, `stellar message sign`): ed25519 over
// sha256("Stellar Signed Message:\n" + msg), in standard base64.
func SignStellarSEP53(priv ed25519.PrivateKey, msg string) string {
	d := sha256.Sum256([]byte(sep53Prefix + msg))
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, d[:]))
}

// SignSolana signs the UTF-8 bytes of msg with ed25519 and returns the
// signature in base58, as Solana wallets' signMessage does (Phantom returns
// the raw bytes; clients usually base58-encode them).
func SignSolana(priv ed25519.PrivateKey, msg string) string {
	return base58.Encode(ed25519.Sign(priv, []byte(msg)))
}

// EVMAddress returns the EIP-55 checksummed address of pub.
func EVMAddress(pub *ecdsa.PublicKey) string {
	return crypto.PubkeyToAddress(*pub).Hex()
}

// StellarAddress returns the G… StrKey account address of pub.
func StellarAddress(pub ed25519.PublicKey) string {
	return strkey.MustEncode(strkey.VersionByteAccountID, pub)
}

// SolanaAddress returns the base58 address of pub.
func SolanaAddress(pub ed25519.PublicKey) string {
	return base58.Encode(pub)
}
