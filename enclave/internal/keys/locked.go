package keys

import (
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/enclave/txcheck"
)

// HKDF is both providers' KDF: HKDF-Expand(prk, info = path, 32 bytes)
// over the provider's pseudo-random key. A forgotten (nil) prk is
// enclave.ErrUnavailable: the provider was closed.
func HKDF(prk []byte, path string) ([32]byte, error) {
	var out [32]byte
	if prk == nil {
		return out, enclave.ErrUnavailable
	}
	b, err := hkdf.Expand(sha256.New, prk, path, 32)
	if err != nil {
		return out, fmt.Errorf("enclave: hkdf: %w", err)
	}
	copy(out[:], b)
	clear(b)
	return out, nil
}

// Locked derives key sets the way every provider does: arguments checked,
// then the KDF run with the provider's lock held for reading (Close takes
// it for writing to forget the root), and the keys zeroed on release. A
// provider embeds it for enclave.Provider's DeriveKeys, Sign, ScanKeys and
// Export; nothing else of it is exported, so no caller reaches a raw key.
type Locked struct {
	mu  *sync.RWMutex
	kdf KDF // called with mu held for reading
}

// NewLocked derives with kdf under mu.
func NewLocked(mu *sync.RWMutex, kdf KDF) Locked { return Locked{mu: mu, kdf: kdf} }

// withSet derives agentID's keys on chain at epoch and hands them to use,
// under the read lock; the keys are zeroed when use returns.
func withSet[T any](ctx context.Context, l Locked, agentID string, chain chains.ID, epoch uint32, use func(*Set) (T, error)) (T, error) {
	return withOwner(ctx, l, agentID, enclave.CheckAgentID, chain, epoch, use)
}

// withOwner is withSet with the key owner checked by check: the relayer
// (chains.RelayerID) is accepted only by DeriveKeys and Sign.
func withOwner[T any](ctx context.Context, l Locked, agentID string, check func(string) error, chain chains.ID, epoch uint32, use func(*Set) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if err := check(agentID); err != nil {
		return zero, err
	}
	if err := enclave.CheckChain(chain); err != nil {
		return zero, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	s, err := Derive(l.kdf, agentID, chain, epoch)
	if err != nil {
		return zero, err
	}
	defer s.Zero()
	return use(s)
}

// DeriveKeys is enclave.Provider's DeriveKeys.
func (l Locked) DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.PublicKeys, error) {
	return withOwner(ctx, l, agentID, enclave.CheckKeyOwner, chain, epoch, func(s *Set) (enclave.PublicKeys, error) { return s.Public(), nil })
}

// ScanKeys is enclave.Provider's ScanKeys.
func (l Locked) ScanKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.ScanKeys, error) {
	return withSet(ctx, l, agentID, chain, epoch, func(s *Set) (enclave.ScanKeys, error) { return s.ScanKeys(), nil })
}

// Sign is enclave.Provider's (and chains.Signer's) Sign: the request's
// kind checked (enclave.CheckRequest), then signed with the key it names.
func (l Locked) Sign(ctx context.Context, req chains.SignRequest) ([]byte, error) {
	if err := enclave.CheckRequest(req); err != nil {
		return nil, err
	}
	if req.Key.IsRelayer() && len(req.Key.EphemeralPub) > 0 {
		return nil, fmt.Errorf("%w: the relayer has no one-time keys", enclave.ErrInvalidInput)
	}
	// A sponsored activation passes CheckRequest only for the one-time
	// account it activates: signed with any other key it would be that
	// key's consent to sponsor, so the signature must verify as P's.
	var activated ed25519.PublicKey
	if req.NoValue && len(req.Key.EphemeralPub) > 0 {
		if p, err := txcheck.StellarActivation(req); err == nil {
			activated = p
		}
	}
	return withOwner(ctx, l, req.Key.AgentID, enclave.CheckKeyOwner, req.Key.Chain, req.Key.Epoch, func(s *Set) ([]byte, error) {
		sig, err := s.Sign(req.Payload, req.Key.EphemeralPub)
		if err == nil && activated != nil && !ed25519.Verify(activated, req.Payload, sig) {
			return nil, fmt.Errorf("%w: the activation is of another account than this one-time key's", enclave.ErrUnauthorized)
		}
		return sig, err
	})
}

// Export is enclave.Provider's Export.
func (l Locked) Export(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (string, error) {
	return withSet(ctx, l, agentID, chain, epoch, func(s *Set) (string, error) { return s.Export(), nil })
}

// Unquoted is the part of enclave.Provider's Attest both providers share:
// the arguments checked, the keys of epoch 0 on every chain of chainIDs
// (duplicates ignored, at least one) and the report data over them, with
// info's provider, measurement and instance. The provider adds the quote
// (of quoteType) and the time.
func (l Locked) Unquoted(ctx context.Context, info enclave.Info, quoteType, agentID string, chainIDs []chains.ID, nonce []byte) (enclave.Attestation, error) {
	if err := ctx.Err(); err != nil {
		return enclave.Attestation{}, err
	}
	if err := enclave.CheckAgentID(agentID); err != nil {
		return enclave.Attestation{}, err
	}
	if err := enclave.CheckNonce(nonce); err != nil {
		return enclave.Attestation{}, err
	}
	if len(chainIDs) == 0 {
		return enclave.Attestation{}, fmt.Errorf("%w: no chain to attest", enclave.ErrInvalidInput)
	}
	att := enclave.Attestation{
		AgentID:     agentID,
		PublicKeys:  make(map[chains.ID]enclave.AttestedKeys, len(chainIDs)),
		Provider:    info.Provider,
		Measurement: info.Measurement,
		InstanceID:  info.InstanceID,
		QuoteType:   quoteType,
		Nonce:       string(nonce),
	}
	for _, c := range chainIDs {
		if _, dup := att.PublicKeys[c]; dup {
			continue
		}
		k, err := l.DeriveKeys(ctx, agentID, c, 0)
		if err != nil {
			return enclave.Attestation{}, err
		}
		att.PublicKeys[c] = enclave.AttestedKeysOf(k)
	}
	var err error
	if att.ReportData, err = enclave.ReportData(agentID, att.PublicKeys, nonce); err != nil {
		return enclave.Attestation{}, err
	}
	return att, nil
}
