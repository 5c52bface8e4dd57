package chains

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// OutcomeUnknownError is the error of a write whose transaction was signed
// and recorded but whose outcome is not known: the node's answer was lost,
// the broadcast failed in transport after the bytes may have left, the
// call timed out or its context ended after the record was written. It
// matches ErrOutcomeUnknown (errors.Is) and never ErrUnavailable: the
// payment is pending, and its settlement (Settlement) comes later. A retry
// under IdempotencyKey answers this same transaction, never a second one.
// Match it with errors.As to read the hash.
type OutcomeUnknownError struct {
	Chain ID
	// TxHash is the recorded transaction's hash (EVM: of its latest
	// attempt; a fee bump may be the one mined, under the same key).
	TxHash string
	// IdempotencyKey is the key the transaction is recorded under: the
	// caller's, or "gas/<key>" for the gas a withdrawal's one-time
	// address was sent first (see GasFunder).
	IdempotencyKey string
	// Cause is what left the outcome unknown. It is only worded, not
	// unwrapped: a time-out in it is not the caller's context.
	Cause error
}

// OutcomeUnknown is the error of transaction txHash of chain, recorded
// under key, whose outcome is unknown because of cause.
func OutcomeUnknown(chain ID, key, txHash string, cause error) error {
	return &OutcomeUnknownError{Chain: chain, TxHash: txHash, IdempotencyKey: key, Cause: cause}
}

func (e *OutcomeUnknownError) Error() string {
	msg := fmt.Sprintf("%v: %s transaction %s (idempotency key %q)", ErrOutcomeUnknown, e.Chain, e.TxHash, e.IdempotencyKey)
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg + "; it may still be mined: do not pay again, a retry with the same idempotency key answers this transaction"
}

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// SettlementStatus is the final outcome of a recorded transaction (or,
// SettlementPending, a note that it has none yet).
type SettlementStatus string

const (
	// SettlementConfirmed: in a block (a ledger), succeeded.
	SettlementConfirmed SettlementStatus = "confirmed"
	// SettlementFailed: it will never move the value: it reverted or
	// failed on chain (the fee may be spent), or it can provably never be
	// mined (its nonce or sequence number was taken by another
	// transaction, the node refused it for good after it was recorded).
	SettlementFailed SettlementStatus = "failed"
	// SettlementPending is no outcome: news of a transaction still on its
	// way, delivered only under NoteKey(key), whose Reason the payment's
	// record shows while it waits (an x402 authorization whose nonce is
	// used with no log to say how, chains/evm). The receiver moves nothing
	// but that reason and tells nobody. Under NoteKey a receiver that knows
	// only final settlements (a member of an earlier version) finds no
	// record for it and drops it, rather than reading it as confirmed.
	SettlementPending SettlementStatus = "pending"
)

// NoteKey is the idempotency key a SettlementPending note about the
// payment recorded under key is delivered under.
func NoteKey(key string) string { return "note/" + key }

// NotedKey is the payment key a NoteKey names, and whether key is one.
func NotedKey(key string) (string, bool) { return strings.CutPrefix(key, "note/") }

// Settlement reports that a recorded transaction reached its final
// outcome. See SettlementFunc for when and how often it is delivered.
type Settlement struct {
	Chain ID `json:"chain"`
	// IdempotencyKey is the key the transaction was recorded under, as
	// the caller gave it (or the connector chose it, see SendRequest):
	// "gas/<key>" is the gas sent ahead of withdrawal <key>,
	// "rest/<key>" the native rest of an everything-withdrawal, and
	// "approve/…" and "register/…" keys are a token approval and a name
	// registration, which are no payment.
	IdempotencyKey string `json:"idempotencyKey"`
	// AgentID is the agent whose key signed it.
	AgentID string `json:"agentId"`
	// Op is what the transaction does, in the connector's words ("send",
	// "withdraw", "gas", "approve", "register"/"registration", "fill").
	Op string `json:"op"`
	// TxHash is the transaction that settled it: for a fee-bumped or
	// rebuilt payment, the attempt that was mined, which may differ from
	// the hash the caller was given first (same payment, same key).
	TxHash string           `json:"txHash"`
	Status SettlementStatus `json:"status"`
	// Confirmations is how many blocks (ledgers) include it, counting its
	// own, when the connector reported it (at least 1 when confirmed; 0
	// when failed without being mined).
	Confirmations uint64 `json:"confirmations"`
	// Reason says why it failed ("" when confirmed).
	Reason string `json:"reason,omitempty"`
	// At is when the connector saw the outcome.
	At time.Time `json:"at"`
}

// SettlementFunc receives settlements (connopts.Options.OnSettled; cmd/veild
// passes one to every connector). Its contract:
//
//   - Every transaction a connector recorded (signed and persisted, the
//     moment a call can no longer answer "nothing was done") gets one
//     settlement when its outcome becomes final, from whichever path
//     learns it: the call itself (a Stellar or Solana send waits for its
//     ledger; an EVM send returns once the node has it), a retry under the
//     same key, the periodic maintenance (EVM receipts; Stellar and Solana
//     look up what a lost answer left pending), or the restart pass. A
//     call's own settlement may arrive before the call returns.
//   - A transaction the node refused before it could be mined, whose
//     record the connector removed (the call answered that error, nothing
//     moved, the key is free again), gets none: the call's error says it.
//   - Delivery is durable: the settlement is written in the same commit as
//     the outcome, and removed once the function returns nil. An error
//     keeps it for the next maintenance pass (about every second), so a
//     receiver that is not ready yet (start-up) returns an error. After a
//     crash between delivery and removal, or in a cluster where two
//     members see the same outcome, the same settlement may come again:
//     the receiver moves its record forward only and notifies once.
//   - It runs on the connector's maintenance or on a caller's write path:
//     it must not block for long, and must not make a write through the
//     same chain's connector (the chain actor's lanes).
type SettlementFunc func(ctx context.Context, s Settlement) error

// ErrNoSettlementReceiver is SettlementRelay's answer before Set: the
// connector keeps the settlement and delivers it again.
var ErrNoSettlementReceiver = errors.New("chains: no settlement receiver yet")

// SettlementRelay forwards settlements to a receiver set after the
// connectors start (the connectors need it at start; the receiver, the
// agents' payment records, needs the connectors running first). Until Set,
// Deliver answers ErrNoSettlementReceiver and the settlement waits in the
// connector's store. The zero value is ready to use.
type SettlementRelay struct {
	mu sync.RWMutex
	f  SettlementFunc
}

// Set installs the receiver (nil removes it).
func (r *SettlementRelay) Set(f SettlementFunc) {
	r.mu.Lock()
	r.f = f
	r.mu.Unlock()
}

// Deliver is a SettlementFunc: it hands s to the receiver.
func (r *SettlementRelay) Deliver(ctx context.Context, s Settlement) error {
	r.mu.RLock()
	f := r.f
	r.mu.RUnlock()
	if f == nil {
		return ErrNoSettlementReceiver
	}
	return f(ctx, s)
}
