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
	ScanKeys(ctx context.Context, agentID string, chain chains.ID, epoch uint32) (enclave.ScanKeys, error)
}

// EnclaveKeys adapts an enclave to Keys; in veild it is the group of
// enclave actors, which routes each call to its chain's actor.
func EnclaveKeys(e Enclave) Keys { return enclaveKeys{e} }

type enclaveKeys struct{ e Enclave }

// Keys are derived at epoch 0; rotation (a later epoch) is not offered yet.
const keyEpoch = 0

// KeyEpoch is the epoch of every agent key, for callers outside the
// actor that sign with one (the scanner's reclaim of an invoice's
// prepared destination).
const KeyEpoch = keyEpoch

func (k enclaveKeys) Derive(ctx context.Context, agentID string, chain chains.ID) (ChainKeys, error) {
	pk, err := k.e.DeriveKeys(ctx, agentID, chain, keyEpoch)
	if err != nil {
		return ChainKeys{}, err
	}
	return ChainKeys{Address: pk.Address, MetaAddress: pk.MetaAddress}, nil
}

func (k enclaveKeys) Export(ctx context.Context, agentID string, chain chains.ID) (string, error) {
	return k.e.Export(ctx, agentID, chain, keyEpoch)
}

func (k enclaveKeys) Attest(ctx context.Context, agentID string, deployed []chains.ID, nonce string) (enclave.Attestation, error) {
	return k.e.Attest(ctx, agentID, deployed, []byte(nonce))
}

func (k enclaveKeys) ScanKeys(ctx context.Context, agentID string, chain chains.ID) (enclave.ScanKeys, error) {
	return k.e.ScanKeys(ctx, agentID, chain, keyEpoch)
}
