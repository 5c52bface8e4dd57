// Package evmtest holds test helpers for code that uses chains/evm: agents
// with deterministic keys and a real chains.Signer over them (go-ethereum's
// secp256k1 signing; a stand-in for the enclave, not a mock of the chain).
package evmtest

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/enclave"
)

// Agent is a test agent: an account key that holds and sends funds, and the
// ERC-5564 spending and viewing keys behind its meta-address.
type Agent struct {
	ID      string
	Account *ecdsa.PrivateKey
	Address common.Address
	Keys    secp256k1.Keys
	Meta    string
}

// NewAgent derives an agent's keys from its id (same id, same keys).
func NewAgent(id string) *Agent {
	acct, err := crypto.ToECDSA(crypto.Keccak256([]byte("veil test account " + id)))
	if err != nil {
		panic(err)
	}
	spend := [32]byte(crypto.Keccak256([]byte("veil test spend " + id)))
	view := [32]byte(crypto.Keccak256([]byte("veil test view " + id)))
	keys, err := secp256k1.KeysFromSeeds(spend, view)
	if err != nil {
		panic(err)
	}
	return &Agent{ID: id, Account: acct, Address: crypto.PubkeyToAddress(acct.PublicKey), Keys: keys, Meta: keys.Meta.String()}
}

// Ref names the agent's account key on chain.
func (a *Agent) Ref(chain chains.ID) chains.KeyRef {
	return chains.KeyRef{AgentID: a.ID, Chain: chain}
}

// StealthRef names the one-time key of a payment announced with ephPub.
func (a *Agent) StealthRef(chain chains.ID, ephPub []byte) chains.KeyRef {
	return chains.KeyRef{AgentID: a.ID, Chain: chain, EphemeralPub: ephPub}
}

// Owns reports whether an announcement pays this agent (view-key check).
func (a *Agent) Owns(ann chains.Announcement) (bool, error) {
	eph, err := secp256k1.ParseEphemeralPub(ann.EphemeralPubKey)
	if err != nil {
		return false, err
	}
	addr := common.HexToAddress(ann.StealthAddress)
	return secp256k1.Check(a.Keys.ViewPriv, a.Keys.Meta.Spend, secp256k1.Announcement{
		StealthAddress: addr, EphemeralPub: eph, ViewTag: ann.ViewTag,
	})
}

// Signer signs for the agents it knows, like the enclave: the account key,
// or the stealth key derived from the spending and viewing keys when the
// KeyRef carries an ephemeral public key.
type Signer struct {
	mu     sync.RWMutex
	agents map[string]*Agent
}

// NewSigner knows agents.
func NewSigner(agents ...*Agent) *Signer {
	s := &Signer{agents: map[string]*Agent{}}
	for _, a := range agents {
		s.Add(a)
	}
	return s
}

// Add makes the signer know a.
func (s *Signer) Add(a *Agent) {
	s.mu.Lock()
	s.agents[a.ID] = a
	s.mu.Unlock()
}

// Sign implements chains.Signer: 65-byte [R || S || V], V in {0, 1}. Like
// the enclave it refuses a request that is neither a spend nor a no-value
// request that provably moves nothing (enclave.CheckRequest); it has no
// policy.
func (s *Signer) Sign(_ context.Context, req chains.SignRequest) ([]byte, error) {
	if err := enclave.CheckRequest(req); err != nil {
		return nil, err
	}
	key, payload := req.Key, req.Payload
	s.mu.RLock()
	a := s.agents[key.AgentID]
	s.mu.RUnlock()
	if a == nil {
		return nil, fmt.Errorf("evmtest: unknown agent %q", key.AgentID)
	}
	if len(payload) != 32 {
		return nil, fmt.Errorf("evmtest: payload is %d bytes, want a 32-byte digest", len(payload))
	}
	priv := a.Account
	if len(key.EphemeralPub) > 0 {
		eph, err := secp256k1.ParseEphemeralPub(key.EphemeralPub)
		if err != nil {
			return nil, err
		}
		sk, err := secp256k1.DeriveStealthPrivateKey(a.Keys.SpendPriv, a.Keys.ViewPriv, eph)
		if err != nil {
			return nil, err
		}
		if priv, err = crypto.ToECDSA(sk[:]); err != nil {
			return nil, err
		}
	}
	return crypto.Sign(payload, priv)
}
