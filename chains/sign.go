package chains

import (
	"errors"
	"fmt"
	"strings"
)

// Spend is the value one signature moves, as its requester states it: the
// enclave checks it against the agent's spending policy and counts it
// (once per Key) before it signs. Connectors build it from the operation's
// own parameters, so it says what the transaction does.
type Spend struct {
	// Key identifies the payment (its idempotency key): the several
	// signatures of one payment (an ERC-20 approval and the transfer, a fee
	// bump, a rebuilt transaction) carry the same Key and count once.
	Key     string `json:"key"`
	AgentID string `json:"agentId"`
	Chain   ID     `json:"chain"`
	// Asset is the asset's symbol ("ETH", "USDC", "XLM").
	Asset string `json:"asset"`
	// Amount is what moves, in base units. It is zero only when All is set.
	Amount Amount `json:"amount"`
	// All: everything the source holds of Asset (a withdrawal of the whole
	// balance, whose exact amount is known only on chain).
	All bool `json:"all,omitempty"`
	// Recipient is who is paid: a meta-address, a plain address or a name.
	Recipient string `json:"recipient"`
}

// Check validates the spend's fields (not the policy).
func (s Spend) Check() error {
	switch {
	case strings.TrimSpace(s.Key) == "":
		return errors.New("spend has no idempotency key")
	case s.AgentID == "":
		return errors.New("spend names no agent")
	case s.Chain == "":
		return errors.New("spend names no chain")
	case strings.TrimSpace(s.Asset) == "":
		return errors.New("spend names no asset")
	case strings.TrimSpace(s.Recipient) == "":
		return errors.New("spend names no recipient")
	case s.All && s.Amount.Sign() != 0:
		return errors.New("spend of everything also gives an amount")
	case !s.All && s.Amount.Sign() <= 0:
		return errors.New("spend amount must be greater than zero")
	}
	return nil
}

// SignRequest is one signature a connector asks of the enclave. It is
// exactly one of two kinds (build it with SpendRequest or NoValueRequest):
//
//   - a spend: the transaction moves value (a native or token send, a token
//     approval, a withdrawal) and Spend says how much of what to whom; the
//     enclave checks it against the agent's policy and counts it;
//   - no value: the transaction moves nothing (a name registration, a
//     zero-value nonce filler); the enclave decodes Unsigned (or, on
//     Solana, Payload) and refuses when it moves value or cannot be
//     decoded.
//
// A request of neither kind is refused.
type SignRequest struct {
	Key KeyRef
	// Payload is what is signed: a 32-byte digest for EVM keys (the
	// transaction's signing hash), the transaction hash for Stellar, the
	// message for Solana. The signature is 65 bytes [R || S || V] with V in
	// {0, 1} for EVM keys, 64 bytes for ed25519 keys.
	Payload []byte
	// Unsigned is the transaction Payload is the signing hash of, for the
	// enclave to decode: EVM, the unsigned transaction's binary encoding
	// (types.Transaction.MarshalBinary); Stellar, the XDR of the
	// TransactionEnvelope. Solana needs none (Payload is the message).
	Unsigned []byte
	// Network is the Stellar network passphrase Payload was hashed with.
	Network string
	// Spend is set for a transaction that moves value.
	Spend *Spend
	// Fee is set when the same transaction also pays its relayer's fee
	// from the signing key (a Solana withdrawal whose fee payer is the
	// relayer): a second spend of the same agent and chain, with its own
	// idempotency key (RelayerFeeKey) and the relayer as recipient, checked
	// by the policy and counted like Spend. Only with Spend.
	Fee *Spend
	// NoValue is set for a transaction that moves no value.
	NoValue bool
	// Authorization is set when Payload is not a transaction's hash but the
	// EIP-712 digest of an EIP-3009 transfer authorization (x402's `exact`
	// EVM scheme): a signature anyone can submit to move the signer's
	// tokens. It is signed only as a spend (AuthorizationRequest), and the
	// enclave checks that Payload is this authorization's digest and that
	// its value, recipient and asset are the spend's.
	Authorization *TransferAuthorization
}

// SpendRequest asks for a signature of a transaction that moves value.
func SpendRequest(key KeyRef, payload []byte, s Spend) SignRequest {
	return SignRequest{Key: key, Payload: payload, Spend: &s}
}

// NoValueRequest asks for a signature of a transaction that moves no
// value; unsigned and network are as SignRequest describes.
func NoValueRequest(key KeyRef, payload, unsigned []byte, network string) SignRequest {
	return SignRequest{Key: key, Payload: payload, Unsigned: unsigned, Network: network, NoValue: true}
}

// AuthorizationRequest asks for a signature of an EIP-3009 transfer
// authorization: payload is its EIP-712 digest and s the value it moves
// (asset, amount = auth.Value, recipient = auth.To).
func AuthorizationRequest(key KeyRef, payload []byte, auth TransferAuthorization, s Spend) SignRequest {
	return SignRequest{Key: key, Payload: payload, Spend: &s, Authorization: &auth}
}

// ErrUnlabelled reports a sign request that is neither a spend nor a
// no-value request, or both.
var ErrUnlabelled = errors.New("chains: a signature request must carry either a spend or the no-value label")

// CheckKind validates the request's kind: exactly one of Spend and NoValue,
// a well-formed spend of the key's own agent and chain.
func (r SignRequest) CheckKind() error {
	switch {
	case r.Spend == nil && !r.NoValue, r.Spend != nil && r.NoValue:
		return ErrUnlabelled
	case r.Fee != nil && r.Spend == nil:
		return fmt.Errorf("%w: a relayer fee is signed only with the spend it is taken from", ErrUnlabelled)
	case r.Authorization != nil && r.Spend == nil:
		return fmt.Errorf("%w: a transfer authorization moves value and is signed only with a spend", ErrUnlabelled)
	case r.Spend != nil:
		if err := r.Spend.Check(); err != nil {
			return fmt.Errorf("%w: %v", ErrUnlabelled, err)
		}
		if r.Spend.AgentID != r.Key.AgentID {
			return fmt.Errorf("%w: a spend of agent %s cannot be signed with a key of agent %s", ErrUnlabelled, r.Spend.AgentID, r.Key.AgentID)
		}
		if r.Spend.Chain != r.Key.Chain {
			return fmt.Errorf("%w: a spend on %s cannot be signed with a key on %s", ErrUnlabelled, r.Spend.Chain, r.Key.Chain)
		}
		if f := r.Fee; f != nil {
			if err := f.Check(); err != nil {
				return fmt.Errorf("%w: relayer fee: %v", ErrUnlabelled, err)
			}
			if f.AgentID != r.Key.AgentID || f.Chain != r.Key.Chain || f.All || f.Key == r.Spend.Key {
				return fmt.Errorf("%w: a relayer fee is a named amount of the signing key's own agent and chain, under its own idempotency key", ErrUnlabelled)
			}
		}
	}
	return nil
}
