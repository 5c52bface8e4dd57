package walletsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"
	"github.com/stellar/go-stellar-sdk/strkey"
)

// Scheme is a wallet's signature scheme.
type Scheme string

// The supported schemes.
const (
	SchemeEVM     Scheme = "evm"     // secp256k1, EIP-191 personal_sign
	SchemeStellar Scheme = "stellar" // ed25519, G… StrKey account
	SchemeSolana  Scheme = "solana"  // ed25519, base58 public key
)

// ChainAll is the chain identifier meaning "every chain"; the wallet's scheme
// is then detected from its format.
const ChainAll = "all"

// chainSchemes maps each single chain to its wallet scheme.
var chainSchemes = map[string]Scheme{
	"horizen":  SchemeEVM,
	"ethereum": SchemeEVM,
	"polygon":  SchemeEVM,
	"base":     SchemeEVM,
	"stellar":  SchemeStellar,
	"solana":   SchemeSolana,
}

// ChainScheme returns the scheme a wallet must use on chain, "" for ChainAll
// (any scheme), or an error matching ErrUnknownChain.
func ChainScheme(chain string) (Scheme, error) {
	if chain == ChainAll {
		return "", nil
	}
	if s, ok := chainSchemes[chain]; ok {
		return s, nil
	}
	return "", fail(ErrUnknownChain, "unknown chain %s: use one of horizen, ethereum, polygon, base, stellar, solana or all", quote(chain))
}

// wallet is a parsed wallet address.
type wallet struct {
	scheme Scheme
	text   string // as the client wrote it
	norm   string // normalized form (see NormalizeWallet)
	evm    common.Address
	ed     ed25519.PublicKey
}

// NormalizeWallet detects a wallet's scheme from its format and returns its
// normalized form, the one Veil stores and indexes:
//
//   - EVM: "0x" + 40 lowercase hex digits. Input may be all-lowercase,
//     all-uppercase or EIP-55 checksummed; mixed case with a wrong checksum is
//     rejected (it is almost always a typo).
//   - Stellar: the G… StrKey, unchanged (StrKeys are case-sensitive and
//     canonical; muxed M… accounts are not accepted).
//   - Solana: the base58 public key, unchanged (it must decode to 32 bytes
//     and be the canonical encoding of them).
//
// Errors match ErrBadWallet.
func NormalizeWallet(w string) (string, Scheme, error) {
	p, err := parseWallet(w)
	if err != nil {
		return "", "", err
	}
	return p.norm, p.scheme, nil
}

func parseWallet(w string) (wallet, error) {
	switch {
	case w == "":
		return wallet{}, fail(ErrMissingField, "wallet is required: send the owner wallet's address")
	case strings.HasPrefix(w, "0x"):
		return parseEVMWallet(w)
	case len(w) == 56 && w[0] == 'G':
		raw, err := strkey.Decode(strkey.VersionByteAccountID, w)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			return wallet{}, fail(ErrBadWallet, "wallet is not a valid Stellar account: check the G… address (56 characters) for typos")
		}
		return wallet{scheme: SchemeStellar, text: w, norm: w, ed: ed25519.PublicKey(raw)}, nil
	case len(w) == 56 && w[0] == 'S':
		return wallet{}, fail(ErrBadWallet, "wallet looks like a Stellar secret seed: never send a secret key; send the public G… address")
	case len(w) == 69 && w[0] == 'M':
		return wallet{}, fail(ErrBadWallet, "muxed Stellar accounts (M…) are not accepted: send the underlying G… account")
	}
	if len(w) <= 44 {
		if raw, err := base58.Decode(w); err == nil && len(raw) == ed25519.PublicKeySize && base58.Encode(raw) == w {
			return wallet{scheme: SchemeSolana, text: w, norm: w, ed: ed25519.PublicKey(raw)}, nil
		}
	} else if len(w) <= 90 {
		if raw, err := base58.Decode(w); err == nil && len(raw) == 64 {
			return wallet{}, fail(ErrBadWallet, "wallet looks like a Solana secret key: never send a secret key; send the base58 public key")
		}
	}
	return wallet{}, fail(ErrBadWallet, "wallet is not a valid address: send a 0x EVM address (40 hex digits), a G… Stellar account or a base58 Solana public key")
}

func parseEVMWallet(w string) (wallet, error) {
	h := w[2:]
	if len(h) == 64 && isHex(h) {
		return wallet{}, fail(ErrBadWallet, "wallet has 32 bytes, an EVM address has 20: send the 0x address (40 hex digits), never a private key")
	}
	if len(h) != 40 || !isHex(h) {
		return wallet{}, fail(ErrBadWallet, "wallet is not a valid EVM address: send \"0x\" followed by 40 hex digits")
	}
	addr := common.HexToAddress(h)
	if h != strings.ToLower(h) && h != strings.ToUpper(h) && addr.Hex() != w {
		return wallet{}, fail(ErrBadWallet, "wallet has an invalid EIP-55 checksum: copy the address again from the wallet, or send it in lowercase")
	}
	return wallet{scheme: SchemeEVM, text: w, norm: "0x" + strings.ToLower(h), evm: addr}, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// same reports whether the wallet written in a message is the request's:
// EVM hex is compared case-insensitively, StrKeys and base58 exactly.
func (w wallet) same(inMessage string) bool {
	if w.scheme == SchemeEVM {
		return strings.EqualFold(w.text, inMessage) && strings.HasPrefix(inMessage, "0x")
	}
	return w.text == inMessage
}

// maxSignatureLen bounds the signature text before any decoding.
const maxSignatureLen = 200

// secp256k1N and secp256k1HalfN are the group order and its half.
var (
	secp256k1N, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	secp256k1HalfN = new(big.Int).Rsh(secp256k1N, 1)
)

// decodeEVMSignature decodes a personal_sign signature: 65 bytes r‖s‖v as hex
// with an optional 0x prefix, v in {27, 28, 0, 1}. It returns r‖s‖v with v
// normalized to 0/1 and rejects high-s (malleable) and out-of-range values.
func decodeEVMSignature(sig string) ([]byte, error) {
	if len(sig) > maxSignatureLen {
		return nil, fail(ErrBadSignature, "signature is too long: an EVM signature is 65 bytes, 130 hex digits")
	}
	h := strings.TrimPrefix(strings.TrimPrefix(sig, "0x"), "0X")
	if len(h) != 130 || !isHex(h) {
		return nil, fail(ErrBadSignature, "signature is malformed: an EVM signature is 65 bytes as hex (130 hex digits, optional 0x), as personal_sign returns it")
	}
	b, _ := hex.DecodeString(h)
	v := b[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return nil, fail(ErrBadSignature, "signature has an invalid recovery byte v: expected 27 or 28 (or 0 or 1); sign with personal_sign, not a transaction signer")
	}
	b[64] = v
	r := new(big.Int).SetBytes(b[:32])
	s := new(big.Int).SetBytes(b[32:64])
	if s.Cmp(secp256k1HalfN) > 0 && s.Cmp(secp256k1N) < 0 {
		return nil, fail(ErrBadSignature, "signature is not canonical (high s value): sign again with a standard wallet, which produces low-s signatures")
	}
	if !crypto.ValidateSignatureValues(v, r, s, true) {
		return nil, fail(ErrBadSignature, "signature is malformed: its r or s value is out of range")
	}
	return b, nil
}

// eip191Hash is the personal_sign digest of msg.
func eip191Hash(msg string) []byte {
	return crypto.Keccak256([]byte("\x19Ethereum Signed Message:\n" + strconv.Itoa(len(msg)) + msg))
}

// decodeEd25519Signature returns every distinct 64-byte value the signature
// text decodes to under the encodings accepted for the scheme: Stellar hex or
// base64 (standard alphabet, padded or not); Solana additionally base58.
// Decoders are strict (canonical padding bits), and an encoding is tried only
// when the text fits it, so at most one or two candidates come back.
func decodeEd25519Signature(scheme Scheme, sig string) ([][]byte, error) {
	if len(sig) > maxSignatureLen {
		return nil, fail(ErrBadSignature, "signature is too long: an ed25519 signature is 64 bytes")
	}
	var out [][]byte
	add := func(b []byte, err error) {
		if err != nil || len(b) != ed25519.SignatureSize {
			return
		}
		for _, o := range out {
			if bytes.Equal(o, b) {
				return
			}
		}
		out = append(out, b)
	}
	if h := strings.TrimPrefix(strings.TrimPrefix(sig, "0x"), "0X"); len(h) == 2*ed25519.SignatureSize && isHex(h) {
		add(hex.DecodeString(h))
	}
	if scheme == SchemeSolana {
		add(base58.Decode(sig))
	}
	if strings.HasSuffix(sig, "=") {
		add(base64.StdEncoding.Strict().DecodeString(sig))
	} else {
		add(base64.RawStdEncoding.Strict().DecodeString(sig))
	}
	if len(out) == 0 {
		if scheme == SchemeSolana {
			return nil, fail(ErrBadSignature, "signature is malformed: a Solana signature is 64 bytes as base58, base64 or hex")
		}
		return nil, fail(ErrBadSignature, "signature is malformed: a Stellar signature is 64 bytes as base64 or hex")
	}
	return out, nil
}

// sep53Prefix is SEP-53's domain separator: Stellar wallets (Freighter, the
// stellar CLI's `message sign`) sign sha256(sep53Prefix + message).
const sep53Prefix = "Stellar Signed Message:\n"

// verifySignature checks sig over msg against w.
func verifySignature(w wallet, msg, sig string) error {
	if sig == "" {
		return fail(ErrMissingField, "signature is required: sign the message with the owner wallet and send it as \"signature\"")
	}
	switch w.scheme {
	case SchemeEVM:
		rsv, err := decodeEVMSignature(sig)
		if err != nil {
			return err
		}
		pub, err := crypto.SigToPub(eip191Hash(msg), rsv)
		if err != nil || crypto.PubkeyToAddress(*pub) != w.evm {
			return fail(ErrSignatureMismatch, "signature does not match: it was not made by wallet %s over this exact message; sign the exact message with personal_sign from that wallet", w.text)
		}
		return nil
	default:
		cands, err := decodeEd25519Signature(w.scheme, sig)
		if err != nil {
			return err
		}
		var sep53 []byte
		if w.scheme == SchemeStellar {
			d := sha256.Sum256([]byte(sep53Prefix + msg))
			sep53 = d[:]
		}
		for _, c := range cands {
			if ed25519.Verify(w.ed, []byte(msg), c) || (sep53 != nil && ed25519.Verify(w.ed, sep53, c)) {
				return nil
			}
		}
		return fail(ErrSignatureMismatch, "signature does not match: it was not made by wallet %s over this exact message; sign the exact UTF-8 message bytes with that wallet's ed25519 key", w.text)
	}
}
