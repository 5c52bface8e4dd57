// Package chains names Veil's six chains and defines what a chain connector
// does. Connectors (evm, stellar, solana) talk to a configured RPC URL or to
// the embedded devnet with the real SDK client; they hold no keys: every
// signature comes from the enclave through a Signer.
//
// # What a write answers
//
// A write (SendStealth, Withdraw, RegisterName) records its signed
// transaction under its idempotency key before the transaction leaves the
// process. Its error says which side of that line it stopped on:
//
//   - ErrUnavailable (and the other sentinels: ErrInsufficientFunds, …):
//     nothing was recorded, or the record was removed because the node
//     refused the transaction: nothing was done and nothing will be.
//   - ErrOutcomeUnknown, as an *OutcomeUnknownError carrying the chain,
//     the recorded transaction's hash and its idempotency key: the
//     transaction was signed and recorded and may have reached the node
//     (its answer lost, a transport failure or time-out after the bytes
//     may have left, the caller's context ended). The payment is pending,
//     never "nothing was done"; a retry under the same key answers that
//     transaction and never signs a second payment.
//
// # Settlements
//
// When a recorded transaction's outcome becomes final — confirmed, or
// failed (reverted or failed on chain, or provably never to be mined: its
// nonce or sequence number taken by another transaction) — the connector
// reports a Settlement to its connopts.Options.OnSettled, a SettlementFunc:
// once per transaction, from whichever path learns it (the call itself, a
// retry, the periodic maintenance, the restart pass), durably (kept in the
// store until the receiver takes it). Fee bumps and rebuilt attempts are
// the same payment: one settlement, under the payment's key, naming the
// attempt that was mined. SettlementFunc holds the receiver's contract;
// cmd/veild hands every connector one SettlementRelay, whose receiver is
// set once the agents run.
package chains

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ID is a chain identifier as the API spells it.
type ID string

// The six chains, in the canonical order (create with chain "all" deploys on
// all of them in this order; the first is the create response's chain).
const (
	Horizen  ID = "horizen"
	Ethereum ID = "ethereum"
	Polygon  ID = "polygon"
	Base     ID = "base"
	Stellar  ID = "stellar"
	Solana   ID = "solana"
)

// All is the pseudo-chain meaning every chain.
const All = "all"

// Order lists every chain in canonical order. Callers must not modify it.
func Order() []ID { return []ID{Horizen, Ethereum, Polygon, Base, Stellar, Solana} }

// Family groups chains that share a key scheme and a connector.
type Family string

const (
	FamilyEVM     Family = "evm"
	FamilyStellar Family = "stellar"
	FamilySolana  Family = "solana"
)

// ErrUnknownChain reports an identifier that is not one of the six.
var ErrUnknownChain = errors.New("chains: unknown chain")

// Parse checks a single chain identifier (not "all").
func Parse(s string) (ID, error) {
	switch id := ID(s); id {
	case Horizen, Ethereum, Polygon, Base, Stellar, Solana:
		return id, nil
	}
	return "", fmt.Errorf("%w %q: use one of horizen, ethereum, polygon, base, stellar, solana", ErrUnknownChain, s)
}

// Family of the chain.
func (id ID) Family() Family {
	switch id {
	case Stellar:
		return FamilyStellar
	case Solana:
		return FamilySolana
	default:
		return FamilyEVM
	}
}

// NativeAsset is the chain's native asset symbol.
func (id ID) NativeAsset() string {
	switch id {
	case Horizen:
		return "ZEN"
	case Polygon:
		return "POL"
	case Stellar:
		return "XLM"
	case Solana:
		return "SOL"
	default:
		return "ETH"
	}
}

// Errors a connector returns. Match with errors.Is.
var (
	// ErrUnavailable: no connector is configured or reachable for the
	// chain; the operation did not happen (nothing was recorded) and may
	// be retried later.
	ErrUnavailable = errors.New("chains: chain unavailable")
	// ErrOutcomeUnknown: the transaction was signed and recorded, and may
	// have reached the node, but its outcome is not known (the node's
	// answer was lost, the request timed out). The payment is pending: it
	// is never reported as "nothing was done", and a retry under the same
	// idempotency key answers the recorded transaction, never a second one.
	// Distinct from ErrUnavailable, which means nothing was signed.
	// Connectors return it as an *OutcomeUnknownError (the hash).
	ErrOutcomeUnknown = errors.New("chains: signed and recorded, outcome unknown")
	// ErrInsufficientFunds: the source cannot pay amount plus fees.
	ErrInsufficientFunds = errors.New("chains: insufficient funds")
	// ErrNameTaken: the name is registered to another meta-address.
	ErrNameTaken = errors.New("chains: name already registered")
	// ErrNotFound: no such name, transaction or account.
	ErrNotFound = errors.New("chains: not found")
	// ErrInvalidAmount: an amount that is not a positive decimal with at
	// most the asset's decimals (see ParseAmount).
	ErrInvalidAmount = errors.New("chains: invalid amount")
	// ErrUnknownAsset: an asset symbol the chain does not carry.
	ErrUnknownAsset = errors.New("chains: unknown asset")
	// ErrInvalidAddress: a malformed address or meta-address.
	ErrInvalidAddress = errors.New("chains: invalid address")
	// ErrInvalidName: a name that is not 3-32 characters of [a-z0-9-]
	// (optionally followed by ".veil").
	ErrInvalidName = errors.New("chains: invalid name")
	// ErrNoFaucet: the network has no faucet Veil can call (a public
	// network, a node without Veil's devnet faucet). Not a failure to reach
	// the network: the address has to be funded from outside.
	ErrNoFaucet = errors.New("chains: no faucet on this network")
	// ErrIdempotencyConflict: an idempotency key already used for a
	// different operation (other recipient, amount or asset).
	ErrIdempotencyConflict = errors.New("chains: idempotency key reused with different parameters")
)

// Balance is an address's holdings as decimal strings in whole units.
type Balance struct {
	Native string            `json:"native"`
	Tokens map[string]string `json:"tokens"`
}

// TxResult identifies a submitted transaction.
type TxResult struct {
	TxHash string `json:"txHash"`
	TxLink string `json:"txLink"`
}

// ExplorerLink is the link of transaction txHash in an explorer whose
// template holds "{hash}"; "" without a template or a hash.
func ExplorerLink(template, txHash string) string {
	if template == "" || txHash == "" {
		return ""
	}
	return strings.ReplaceAll(template, "{hash}", txHash)
}

// KeyRef names a key held by the enclave; a connector passes it to its
// Signer and never sees the private key. When EphemeralPub is set the key is
// the one-time stealth key of a payment the agent received.
type KeyRef struct {
	AgentID      string
	Chain        ID
	Epoch        uint32
	EphemeralPub []byte
}

// Signer signs for a connector (the enclave). Every request says whether
// it moves value (SignRequest): a signer refuses a request that does not.
type Signer interface {
	Sign(ctx context.Context, req SignRequest) ([]byte, error)
}

// GasPayer is the account that pays the gas of a withdrawal from a
// one-time address that holds none of the native asset: the agent's main
// account (its KeyRef and address).
type GasPayer struct {
	Key     KeyRef
	Address string
	// Record, when set, wraps the gas transfer's signing request (send),
	// so that the payer keeps its own record of it (the agent's
	// gas_funding payment record, docs/payments.md): the connector calls
	// it, before anything is signed, with what the transfer will be;
	// Record runs send at most once and answers what send answered (an
	// error without running send: nothing is signed). It is not called
	// when the relayer pays (the operator's money, not the payer's), nor
	// by a retry that finds the transfer already made.
	Record func(ctx context.Context, g GasFunding, send func(context.Context) (TxResult, error)) (TxResult, error)
}

// GasFunding is a gas transfer to a one-time address ahead of its
// withdrawal: Amount of the chain's native asset (Asset) from the payer to
// To, sent under IdempotencyKey ("gas/<key>"); For is the withdrawal's
// own idempotency key.
type GasFunding struct {
	Chain          ID
	IdempotencyKey string
	For            string
	To             string
	Asset          string
	Amount         Amount
}

// GasFunder is implemented by connectors on which moving tokens out of a
// one-time address costs the native asset (the EVM chains).
// WithdrawWithGas is Withdraw, except that the gas the address lacks is
// first sent to it from payer in the same call: a value-moving transfer
// signed under its own spend (idempotency key "gas/<key>") that the
// agent's policy checks like any payment. The transfer links the payer's
// address to the one-time address on chain (docs/chains-evm.md).
type GasFunder interface {
	WithdrawWithGas(ctx context.Context, from KeyRef, req WithdrawRequest, payer GasPayer) (TxResult, error)
}

// Announcement is one stealth payment announced on chain.
type Announcement struct {
	StealthAddress  string `json:"stealthAddress"`
	EphemeralPubKey []byte `json:"ephemeralPubKey"`
	ViewTag         byte   `json:"viewTag"`
	Asset           string `json:"asset"`
	Amount          string `json:"amount"`
	TxHash          string `json:"txHash"`
	// Position orders announcements on the chain (block, index).
	Position uint64 `json:"position"`
}

// Connector is one chain's client. Every method is safe for concurrent use;
// the chain actor decides what must be serialised (nonces).
type Connector interface {
	Chain() ID
	// Assets lists the assets the connector carries, its own descriptors
	// (Asset), the native asset first. A SendRequest or WithdrawRequest
	// pays only in one of them.
	Assets() []Asset
	Balance(ctx context.Context, address string) (Balance, error)
	// SendStealth pays req.To, a meta-address, from fromAddress (signed
	// with from): derives a one-time address, transfers and announces in
	// ONE transaction. req.IdempotencyKey makes a retry with the same key
	// return the first result instead of paying again.
	SendStealth(ctx context.Context, from KeyRef, fromAddress string, req SendRequest) (TxResult, error)
	// Scan returns announcements after cursor ("" = from genesis) and the
	// cursor to resume from.
	Scan(ctx context.Context, cursor string, limit int) ([]Announcement, string, error)
	// Withdraw spends from the stealth address req.From with its one-time
	// key; req.All withdraws everything (less fees).
	Withdraw(ctx context.Context, from KeyRef, req WithdrawRequest) (TxResult, error)
	RegisterName(ctx context.Context, owner KeyRef, ownerAddress, name, metaAddress string) (TxResult, error)
	ResolveName(ctx context.Context, name string) (string, error)
	// Fund asks the test network's faucet to fund address.
	Fund(ctx context.Context, address string) (TxResult, error)
	TxLink(txHash string) string
}

// Kinds of SideSpend.
const (
	// SideRelayerFee is the relayer's fee taken from a withdrawal
	// (RelayerFeeKey): a transfer of its own on EVM chains, an operation
	// of the withdrawal's own transaction on Stellar and Solana (SameTx).
	SideRelayerFee = "relayfee"
	// SideRemainder is the native rest an everything-withdrawal of a token
	// sends after it (key "rest/<key>", chains/evm).
	SideRemainder = "rest"
)

// SideSpend is value a withdrawal moves besides its own transfer, under a
// spend of its own: Spend's Key ("relayfee/<key>", "rest/<key>"), Chain,
// Asset, Amount and Recipient say what; For is the withdrawal's own key;
// SameTx says that it rides in the withdrawal's transaction (settled by
// the withdrawal's settlement, not one of its own).
type SideSpend struct {
	Kind   string
	Spend  Spend
	For    string
	SameTx bool
}

// SideRecorder wraps the signing request (send) of a SideSpend so that
// the payer keeps a record of it (the agent's relayer_fee and remainder
// payment records, docs/payments.md): called before anything is signed,
// it runs send at most once and answers what send answered (an error
// without running send: nothing is signed).
type SideRecorder func(ctx context.Context, s SideSpend, send func(context.Context) (TxResult, error)) (TxResult, error)

// RecordSide runs send, the signing request of s, through r (the
// withdrawal's WithdrawRequest.Sides) when there is one and s has a key,
// else on its own.
func RecordSide(ctx context.Context, r SideRecorder, s SideSpend, send func(context.Context) (TxResult, error)) (TxResult, error) {
	if r != nil && s.Spend.Key != "" {
		return r(ctx, s, send)
	}
	return send(ctx)
}

// SideOf is the SideSpend of kind for the withdrawal under key whose
// spend is sp (a zero SideSpend when sp is nil: RecordSide then only runs
// send).
func SideOf(kind string, sp *Spend, key string, sameTx bool) SideSpend {
	if sp == nil {
		return SideSpend{}
	}
	return SideSpend{Kind: kind, Spend: *sp, For: key, SameTx: sameTx}
}
