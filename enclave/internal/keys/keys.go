// Package keys turns derived 32-byte seeds into an agent's key set on one
// chain and uses it: public keys, signatures (account and one-time stealth
// keys), export and scanning keys. It is shared by the enclave providers,
// which differ only in where the seeds come from (docs/enclave.md). Nothing
// here logs, and no error message carries key material.
package keys

import (
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	dcr "github.com/decred/dcrd/dcrec/secp256k1/v4"
	dcrecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	secpstealth "github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
)

// KDF returns the 32-byte output of the provider's key derivation for a
// path (enclave.KeyPath, possibly with a retry suffix).
type KDF func(path string) ([32]byte, error)

// MaxRetries bounds the counter of the secp256k1 retry (each try fails with
// probability < 2⁻¹²⁷).
const MaxRetries = 255

// MaxPayload is the largest ed25519 message Sign accepts (a Solana
// transaction message is at most 1232 bytes, a Stellar payload 32).
const MaxPayload = 64 << 10

// Set is one agent's keys on one chain at one epoch.
type Set struct {
	chain chains.ID
	epoch uint32
	pub   enclave.PublicKeys

	account [32]byte // secp256k1 scalar (EVM) or ed25519 seed
	evm     secpstealth.Keys
	ed      edstealth.Keys
}

// RetryPath is the path of try i (i ≥ 1 appends "/<i>").
func RetryPath(path string, i int) string {
	if i == 0 {
		return path
	}
	return path + "/" + strconv.Itoa(i)
}

// Secp256k1Scalar derives a secp256k1 private key: the KDF output of path,
// read big-endian, if it is in 1..n-1; otherwise the output of
// RetryPath(path, 1), then 2, … (at most MaxRetries).
func Secp256k1Scalar(kdf KDF, path string) ([32]byte, error) {
	for i := 0; i <= MaxRetries; i++ {
		k, err := kdf(RetryPath(path, i))
		if err != nil {
			return k, err
		}
		var s dcr.ModNScalar
		overflow := s.SetBytes(&k) != 0
		ok := !overflow && !s.IsZero()
		s.Zero()
		if ok {
			return k, nil
		}
		clear(k[:])
	}
	return [32]byte{}, errors.New("enclave: no valid secp256k1 scalar within the retry bound")
}

// Derive computes the key set of agentID on chain at epoch. agentID and
// chain must have been checked.
func Derive(kdf KDF, agentID string, chain chains.ID, epoch uint32) (*Set, error) {
	s := &Set{chain: chain, epoch: epoch}
	path := func(role string) string { return enclave.KeyPath(agentID, chain, epoch, role) }
	if agentID == chains.RelayerID {
		return deriveRelayer(kdf, s, path(enclave.RoleAccount))
	}
	var err error
	if chain.Family() == chains.FamilyEVM {
		var spend, view [32]byte
		if s.account, err = Secp256k1Scalar(kdf, path(enclave.RoleAccount)); err != nil {
			return nil, err
		}
		if spend, err = Secp256k1Scalar(kdf, path(enclave.RoleSpend)); err != nil {
			s.Zero()
			return nil, err
		}
		if view, err = Secp256k1Scalar(kdf, path(enclave.RoleView)); err != nil {
			s.Zero()
			return nil, err
		}
		s.evm, err = secpstealth.KeysFromSeeds(spend, view)
		clear(spend[:])
		clear(view[:])
		if err != nil {
			s.Zero()
			return nil, fmt.Errorf("enclave: derive stealth keys: %w", err)
		}
		accPub, err := secpstealth.PublicKey(s.account)
		if err != nil {
			s.Zero()
			return nil, fmt.Errorf("enclave: derive account key: %w", err)
		}
		addr, _ := enclave.AccountAddress(chain, accPub[:])
		s.pub = enclave.PublicKeys{
			Chain: chain, Epoch: epoch, Address: addr,
			AccountPublicKey:  accPub[:],
			SpendingPublicKey: clone(s.evm.Meta.Spend[:]),
			ViewingPublicKey:  clone(s.evm.Meta.View[:]),
			MetaAddress:       s.evm.Meta.String(),
		}
		return s, nil
	}

	c := edstealth.Stellar
	if chain == chains.Solana {
		c = edstealth.Solana
	}
	var spend, view [32]byte
	if s.account, err = kdf(path(enclave.RoleAccount)); err != nil {
		return nil, err
	}
	if spend, err = kdf(path(enclave.RoleSpend)); err != nil {
		s.Zero()
		return nil, err
	}
	if view, err = kdf(path(enclave.RoleView)); err != nil {
		s.Zero()
		return nil, err
	}
	s.ed, err = edstealth.KeysFromSeeds(c, spend, view)
	clear(spend[:])
	clear(view[:])
	if err != nil {
		s.Zero()
		return nil, fmt.Errorf("enclave: derive stealth keys: %w", err)
	}
	priv := ed25519.NewKeyFromSeed(s.account[:])
	accPub := clone(priv[32:])
	clear(priv)
	addr, _ := enclave.AccountAddress(chain, accPub)
	s.pub = enclave.PublicKeys{
		Chain: chain, Epoch: epoch, Address: addr,
		AccountPublicKey:  accPub,
		SpendingPublicKey: clone(s.ed.Meta.Spend[:]),
		ViewingPublicKey:  clone(s.ed.Meta.View[:]),
		MetaAddress:       s.ed.Meta.String(),
	}
	return s, nil
}

// deriveRelayer fills s with a relayer's account key only: a relayer
// receives no stealth payments, so it has no spending or viewing key (and
// its public keys no meta-address).
func deriveRelayer(kdf KDF, s *Set, path string) (*Set, error) {
	var accPub []byte
	if s.chain.Family() == chains.FamilyEVM {
		var err error
		if s.account, err = Secp256k1Scalar(kdf, path); err != nil {
			return nil, err
		}
		pub, err := secpstealth.PublicKey(s.account)
		if err != nil {
			s.Zero()
			return nil, fmt.Errorf("enclave: derive relayer key: %w", err)
		}
		accPub = pub[:]
	} else {
		var err error
		if s.account, err = kdf(path); err != nil {
			return nil, err
		}
		priv := ed25519.NewKeyFromSeed(s.account[:])
		accPub = clone(priv[32:])
		clear(priv)
	}
	addr, _ := enclave.AccountAddress(s.chain, accPub)
	s.pub = enclave.PublicKeys{Chain: s.chain, Epoch: s.epoch, Address: addr, AccountPublicKey: clone(accPub)}
	return s, nil
}

// Public returns the public keys (a copy).
func (s *Set) Public() enclave.PublicKeys {
	p := s.pub
	p.AccountPublicKey = clone(p.AccountPublicKey)
	p.SpendingPublicKey = clone(p.SpendingPublicKey)
	p.ViewingPublicKey = clone(p.ViewingPublicKey)
	return p
}

// ScanKeys returns the viewing private key and spending public key.
func (s *Set) ScanKeys() enclave.ScanKeys {
	k := enclave.ScanKeys{Chain: s.chain, Epoch: s.epoch, SpendingPublicKey: clone(s.pub.SpendingPublicKey)}
	if s.chain.Family() == chains.FamilyEVM {
		k.ViewingPrivateKey = s.evm.ViewPriv
	} else {
		k.ViewingPrivateKey = s.ed.ViewPriv
	}
	return k
}

// Export returns the account private key as "0x" + 64 lower-case hex
// digits: the secp256k1 scalar (EVM) or the ed25519 seed.
func (s *Set) Export() string { return "0x" + hex.EncodeToString(s.account[:]) }

// Sign signs payload with the account key, or with the one-time key of the
// payment announced with ephemeralPub when it is non-empty (see
// chains.Signer for the formats).
func (s *Set) Sign(payload, ephemeralPub []byte) ([]byte, error) {
	if s.chain.Family() == chains.FamilyEVM {
		if len(payload) != 32 {
			return nil, fmt.Errorf("%w: an EVM signature is over a 32-byte digest, got %d bytes", enclave.ErrInvalidInput, len(payload))
		}
		if len(ephemeralPub) == 0 {
			return signSecp256k1(s.account, payload), nil
		}
		return signOneTime(ephemeralPub, secpstealth.ParseEphemeralPub,
			func(eph [33]byte) ([32]byte, error) {
				return secpstealth.DeriveStealthPrivateKey(s.evm.SpendPriv, s.evm.ViewPriv, eph)
			},
			func(k [32]byte) ([]byte, error) { return signSecp256k1(k, payload), nil })
	}
	if len(payload) > MaxPayload {
		return nil, fmt.Errorf("%w: payload larger than %d bytes", enclave.ErrInvalidInput, MaxPayload)
	}
	if len(ephemeralPub) == 0 {
		priv := ed25519.NewKeyFromSeed(s.account[:])
		sig := ed25519.Sign(priv, payload)
		clear(priv)
		return sig, nil
	}
	return signOneTime(ephemeralPub, edstealth.ParseEphemeralPub,
		func(eph [32]byte) ([32]byte, error) {
			return edstealth.DeriveStealthPrivateKey(s.ed.SpendScalar, s.ed.ViewPriv, eph)
		},
		func(k [32]byte) ([]byte, error) { return edstealth.SignWithScalar(k, payload) })
}

// signOneTime signs with the one-time key of a payment: the announced
// ephemeral key parsed, the private key derived from it (derive holds the
// set's spend and view keys), used by sign and zeroed.
func signOneTime[E any](ephemeralPub []byte, parse func([]byte) (E, error), derive func(E) ([32]byte, error), sign func([32]byte) ([]byte, error)) ([]byte, error) {
	eph, err := parse(ephemeralPub)
	if err != nil {
		return nil, inputErr("ephemeral public key", err)
	}
	k, err := derive(eph)
	if err != nil {
		return nil, inputErr("one-time key", err)
	}
	sig, err := sign(k)
	clear(k[:])
	if err != nil {
		return nil, inputErr("one-time key", err)
	}
	return sig, nil
}

// Zero overwrites the private keys (best effort: Go may have copied them).
func (s *Set) Zero() {
	clear(s.account[:])
	clear(s.evm.SpendPriv[:])
	clear(s.evm.ViewPriv[:])
	clear(s.ed.SpendScalar[:])
	clear(s.ed.ViewPriv[:])
}

// signSecp256k1 returns R || S || V (V ∈ {0, 1}, low S, RFC 6979 nonce).
func signSecp256k1(k [32]byte, digest []byte) []byte {
	priv := dcr.PrivKeyFromBytes(k[:])
	compact := dcrecdsa.SignCompact(priv, digest, false) // [27+V] || R || S
	priv.Zero()
	sig := make([]byte, 65)
	copy(sig, compact[1:])
	sig[64] = compact[0] - 27
	return sig
}

// inputErr reports a bad ephemeral key (the stealth packages' messages
// describe the input, never a key).
func inputErr(what string, err error) error {
	var se *stealth.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %s: %s", enclave.ErrInvalidInput, what, se.Detail)
	}
	return fmt.Errorf("%w: %s is invalid", enclave.ErrInvalidInput, what)
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
