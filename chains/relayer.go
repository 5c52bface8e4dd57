package chains

import (
	"math/big"
	"strings"
)

// RelayerID is the key owner of the relayers: the enclave derives the
// relayer of a chain at "veil/relayer/<chain>/<epoch>/account"
// (docs/enclave.md), a path no agent id can reach ('@' is not a character
// of an agent id), so a relayer's key is never an agent's. A KeyRef with
// this AgentID signs as the relayer; its spends name it too and are
// checked by the relayer's own policy (relayer.Authorizer), never by an
// agent's.
const RelayerID = "@relayer"

// RelayerKey is the KeyRef of chain's relayer (epoch 0).
func RelayerKey(chain ID) KeyRef { return KeyRef{AgentID: RelayerID, Chain: chain} }

// IsRelayer says whether k is a relayer's key.
func (k KeyRef) IsRelayer() bool { return k.AgentID == RelayerID }

// Relayer is a chain's server-wide relayer account as a connector uses it
// (docs/operations.md, "Relayers"): one account per chain, its key in the
// enclave, funded by the operator, that pays what one-time addresses need
// so that their agent's main account never does — EVM gas top-ups and
// x402 settlements, the Solana fee payer, the Stellar sponsor. A relayer's
// value-moving signatures are spends of RelayerID (Key); what it pays for a
// one-time address it recovers from the amount moved where the asset
// allows, in a fee spend of the agent to Address (RelayerFee).
type Relayer struct {
	Chain ID
	// Key is RelayerKey(Chain): sign with the connector's Signer.
	Key KeyRef
	// Address is the relayer's account address on Chain.
	Address string
	// Spent, when set, is told what one relay cost the relayer, in base
	// units of the chain's native asset (gas, a fee, a reserve): the
	// runway metric divides the balance by the recent mean. Safe to call
	// concurrently.
	Spent func(native *big.Int)
	// Fees are the fee the relayer takes from a withdrawal it pays for, by
	// asset symbol (upper case), in whole units of that asset: taken out of
	// the amount moved, in the withdrawal's own asset. An asset without a
	// fee pays none (the relayer's cost is not recovered).
	Fees map[string]string
}

// Fee is the relayer's fee for a withdrawal of asset ("" when none).
func (r *Relayer) Fee(asset string) string {
	if r == nil {
		return ""
	}
	return r.Fees[strings.ToUpper(asset)]
}

// Paid reports cost to Spent, when set.
func (r *Relayer) Paid(cost *big.Int) {
	if r != nil && r.Spent != nil && cost != nil && cost.Sign() > 0 {
		r.Spent(new(big.Int).Set(cost))
	}
}

// RelayerUser is implemented by a connector that can use a relayer. veild
// calls UseRelayer once, before the connector serves, for every chain
// whose relayer is enabled (--relayer); a connector never given one keeps
// its behaviour without a relayer.
type RelayerUser interface {
	UseRelayer(r *Relayer)
}

// RelayerFeeKey is the idempotency key of the fee a withdrawal with
// idempotency key key pays its relayer.
func RelayerFeeKey(key string) string { return "relayfee/" + key }

// GasKey is the idempotency key of the gas the payer's account sends to a
// one-time address ahead of the withdrawal with idempotency key key
// (chains.GasPayer): its own transaction, settled under this key.
func GasKey(key string) string { return "gas/" + key }
