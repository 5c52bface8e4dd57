package agent

import (
	"context"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
)

// Enclave is the part of an enclave (or its actor) the agent uses.
type Enclave interface {
	DeriveKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.PublicKeys, error)
	Export(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (string, error)
	Attest(ctx context.Context, agentID string, chainIDs []chains.ID, nonce []byte) (enclave.Attestation, error)
}

// EnclaveKeys adapts per-chain enclaves to Keys. forChain returns the
// enclave that serves a chain (one enclave actor per chain).
func EnclaveKeys(forChain func(chains.ID) Enclave) Keys { return enclaveKeys{forChain} }

type enclaveKeys struct{ forChain func(chains.ID) Enclave }

// Keys are derived at epoch 0; rotation (a later epoch) is not offered yet.
const keyEpoch = 0

func (k enclaveKeys) Derive(ctx context.Context, agentID string, chain chains.ID) (ChainKeys, error) {
	pk, err := k.forChain(chain).DeriveKeys(ctx, agentID, chain, keyEpoch)
	if err != nil {
		return ChainKeys{}, err
	}
	return ChainKeys{Address: pk.Address, MetaAddress: pk.MetaAddress}, nil
}

func (k enclaveKeys) Export(ctx context.Context, agentID string, chain chains.ID) (string, error) {
	return k.forChain(chain).Export(ctx, agentID, chain, keyEpoch)
}

func (k enclaveKeys) Attest(ctx context.Context, agentID string, deployed []chains.ID, nonce string) (any, error) {
	return k.forChain(deployed[0]).Attest(ctx, agentID, deployed, []byte(nonce))
}
