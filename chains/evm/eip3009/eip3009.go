// Package eip3009 hashes, checks and encodes EIP-3009 transfer
// authorizations (chains.TransferAuthorization): the EIP-712 digest a
// holder signs, the signer it recovers to, and the
// transferWithAuthorization call that settles it. It has no I/O; the
// enclave (enclave/txcheck), the x402 protocol (chains/evm/x402) and the
// EVM connector share it so that all three hash the same bytes.
//
// The typed data is the real USDC's (FiatToken v2) and x402's:
//
//	EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)
//	TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)
package eip3009

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/bindings"
)

var (
	domainType   = crypto.Keccak256Hash([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	transferType = crypto.Keccak256Hash([]byte("TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"))
	// secp256k1n/2: a signature with a larger s is refused (EIP-2), as the
	// token refuses it.
	halfN, _   = new(big.Int).SetString("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0", 16)
	maxUint256 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
)

// ErrMalformed reports an authorization or signature that cannot be hashed
// or recovered (a bad address, a negative or oversized number, a signature
// of the wrong length or form).
var ErrMalformed = errors.New("eip3009: malformed authorization")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// Address parses a 0x-prefixed 20-byte hex address.
func Address(s string) (common.Address, error) {
	if !common.IsHexAddress(s) || len(s) != 42 {
		return common.Address{}, malformed("%q is not a 0x-prefixed 20-byte address", s)
	}
	return common.HexToAddress(s), nil
}

func word(n *big.Int, what string) ([]byte, error) {
	if n == nil || n.Sign() < 0 || n.Cmp(maxUint256) > 0 {
		return nil, malformed("%s is missing or not a uint256", what)
	}
	return common.LeftPadBytes(n.Bytes(), 32), nil
}

// Digest is the EIP-712 digest of a: keccak256("\x19\x01" ‖ domain
// separator ‖ struct hash).
func Digest(a chains.TransferAuthorization) ([32]byte, error) {
	contract, err := Address(a.Contract)
	if err != nil {
		return [32]byte{}, fmt.Errorf("verifyingContract: %w", err)
	}
	from, err := Address(a.From)
	if err != nil {
		return [32]byte{}, fmt.Errorf("from: %w", err)
	}
	to, err := Address(a.To)
	if err != nil {
		return [32]byte{}, fmt.Errorf("to: %w", err)
	}
	if a.Name == "" || a.Version == "" {
		return [32]byte{}, malformed("the EIP-712 domain needs the token's name and version")
	}
	chainID, err := word(a.ChainID, "chainId")
	if err != nil {
		return [32]byte{}, err
	}
	if a.ChainID.Sign() == 0 {
		return [32]byte{}, malformed("chainId is 0")
	}
	words := [][]byte{}
	for _, n := range []struct {
		v    *big.Int
		what string
	}{{a.Value, "value"}, {a.ValidAfter, "validAfter"}, {a.ValidBefore, "validBefore"}} {
		w, err := word(n.v, n.what)
		if err != nil {
			return [32]byte{}, err
		}
		words = append(words, w)
	}
	domain := crypto.Keccak256(domainType[:], crypto.Keccak256([]byte(a.Name)), crypto.Keccak256([]byte(a.Version)),
		chainID, common.LeftPadBytes(contract[:], 32))
	structHash := crypto.Keccak256(transferType[:], common.LeftPadBytes(from[:], 32), common.LeftPadBytes(to[:], 32),
		words[0], words[1], words[2], a.Nonce[:])
	return crypto.Keccak256Hash([]byte{0x19, 0x01}, domain, structHash), nil
}

// Signature is an authorization's 65-byte ECDSA signature r ‖ s ‖ v with v
// 27 or 28 (the form wallets and x402 clients produce).
type Signature [65]byte

// ParseSignature reads 65 bytes r ‖ s ‖ v, v in {0, 1, 27, 28} (0 and 1
// are normalised to 27 and 28), s in the lower half of the curve order.
func ParseSignature(b []byte) (Signature, error) {
	var sig Signature
	if len(b) != 65 {
		return sig, malformed("a signature is 65 bytes (r, s, v), got %d", len(b))
	}
	copy(sig[:], b)
	switch sig[64] {
	case 0, 1:
		sig[64] += 27
	case 27, 28:
	default:
		return sig, malformed("signature v is %d, want 27 or 28", b[64])
	}
	if new(big.Int).SetBytes(sig[32:64]).Cmp(halfN) > 0 {
		return sig, malformed("signature s is in the upper half of the curve order")
	}
	return sig, nil
}

// RSV splits the signature as transferWithAuthorization takes it.
func (s Signature) RSV() (r, ss [32]byte, v uint8) {
	copy(r[:], s[:32])
	copy(ss[:], s[32:64])
	return r, ss, s[64]
}

// Recover returns the address that signed a with sig.
func Recover(a chains.TransferAuthorization, sig Signature) (common.Address, error) {
	d, err := Digest(a)
	if err != nil {
		return common.Address{}, err
	}
	raw := sig
	raw[64] -= 27
	pub, err := crypto.SigToPub(d[:], raw[:])
	if err != nil {
		return common.Address{}, malformed("the signature does not recover: %v", err)
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// Verify checks that sig is a's signature by a.From.
func Verify(a chains.TransferAuthorization, sig Signature) error {
	from, err := Address(a.From)
	if err != nil {
		return fmt.Errorf("from: %w", err)
	}
	got, err := Recover(a, sig)
	if err != nil {
		return err
	}
	if got != from {
		return malformed("the signature is by %s, not by from %s", got.Hex(), from.Hex())
	}
	return nil
}

// Calldata is the transferWithAuthorization(from, to, value, validAfter,
// validBefore, nonce, v, r, s) call that settles a.
func Calldata(a chains.TransferAuthorization, sig Signature) ([]byte, error) {
	if _, err := Digest(a); err != nil { // validates every field
		return nil, err
	}
	r, s, v := sig.RSV()
	return bindings.NewTestToken().PackTransferWithAuthorization0(common.HexToAddress(a.From), common.HexToAddress(a.To),
		a.Value, a.ValidAfter, a.ValidBefore, a.Nonce, v, r, s), nil
}

// SignWithKey signs a with a raw secp256k1 key, as a wallet does: the
// 65-byte r ‖ s ‖ v with v 27 or 28. Veil's own keys never leave the
// enclave (agents sign through chains.AuthorizationRequest); this is for
// clients and tests that hold a key.
func SignWithKey(a chains.TransferAuthorization, key *ecdsa.PrivateKey) ([]byte, error) {
	d, err := Digest(a)
	if err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(d[:], key)
	if err != nil {
		return nil, err
	}
	sig[64] += 27
	return sig, nil
}
