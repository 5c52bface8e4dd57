package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	mathrand "math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm/bindings"
	"github.com/veilhq/veil/persistence"
)

// Tables of the nonce ledger. Keys start with the chain id, so the four EVM
// chains share the tables.
const (
	// TableNonces: "<chain>/<address>" → next nonce to assign (decimal).
	TableNonces = "evm_nonces"
	// TableIntents: "<chain>/<idempotency key>" → intent (JSON): the
	// payment's parameters, its nonce, every signed attempt and its state.
	TableIntents = "evm_intents"
	// TablePending: "<chain>/<address>/<nonce, 20 digits>" → intent key of
	// every transaction not yet seen in a block.
	TablePending = "evm_pending"
)

// Intent states.
const (
	statePending  = "pending"  // persisted, maybe broadcast, not yet in a block
	stateMined    = "mined"    // in a block, succeeded
	stateReverted = "reverted" // in a block, reverted (fee spent, nothing moved)
	stateVoid     = "void"     // rejected by the node after its nonce was reserved; a no-op fills the nonce
)

type attempt struct {
	Hash   common.Hash   `json:"hash"`
	Raw    hexutil.Bytes `json:"raw"`
	TipCap *hexutil.Big  `json:"tipCap"`
	FeeCap *hexutil.Big  `json:"feeCap"`
	Value  *hexutil.Big  `json:"value"`
	At     time.Time     `json:"at"`
}

// intent is the durable record of one transaction Veil sends.
type intent struct {
	Op          string            `json:"op"` // send | withdraw | register | approve | fill
	Fingerprint string            `json:"fp"`
	From        common.Address    `json:"from"`
	KeyRef      chains.KeyRef     `json:"keyRef"`
	Nonce       uint64            `json:"nonce"`
	To          common.Address    `json:"to"`
	Data        hexutil.Bytes     `json:"data,omitempty"`
	Gas         uint64            `json:"gas"`
	Sweep       bool              `json:"sweep,omitempty"`
	Attempts    []attempt         `json:"attempts"`
	State       string            `json:"state"`
	TxHash      common.Hash       `json:"txHash"`
	Block       uint64            `json:"block,omitempty"`
	Created     time.Time         `json:"created"`
	Extra       map[string]string `json:"extra,omitempty"`
	// Spend is the value the transaction moves, as authorised when it was
	// first signed; every re-signature (fee bump) passes it again. Nil for
	// a transaction that moves no value (a registration).
	Spend *chains.Spend `json:"spend,omitempty"`
}

// txSpec is what an operation asks the ledger to send.
type txSpec struct {
	op          string
	fingerprint string
	from        common.Address
	ref         chains.KeyRef
	to          common.Address
	value       *big.Int
	data        []byte
	gas         uint64
	// sweep: value = sweepBalance − gas·price with tip = cap = price, so
	// that the fee is exactly gas·price and nothing is left behind.
	sweep        bool
	sweepBalance *big.Int
	// price, when set, is the transaction's tip and fee cap both: the fee
	// is then exactly gasUsed·price, which a one-time address funded with
	// gas·price (or holding a known balance) can pay without dust.
	price *big.Int
	extra map[string]string
	// spend is what the transaction moves (nil: nothing; see intent.Spend).
	spend *chains.Spend
}

func (c *Connector) addrKey(a common.Address) string {
	return string(c.cfg.Chain) + "/" + strings.ToLower(a.Hex())
}
func (c *Connector) intentKey(key string) string { return string(c.cfg.Chain) + "/" + key }
func (c *Connector) pendingKey(a common.Address, nonce uint64) string {
	return fmt.Sprintf("%s/%020d", c.addrKey(a), nonce)
}

// recorded answers a retry of an idempotency key from its record.
func (c *Connector) recorded(rec persistence.Record, fp string) (chains.TxResult, error) {
	var it intent
	if err := json.Unmarshal(rec.Value, &it); err != nil {
		return chains.TxResult{}, fmt.Errorf("evm: decode intent %s: %w", rec.Key, err)
	}
	if fp != "" && it.Fingerprint != fp {
		return chains.TxResult{}, fmt.Errorf("%w (key %q)", chains.ErrIdempotencyConflict, rec.Key)
	}
	switch it.State {
	case stateVoid:
		return chains.TxResult{}, fmt.Errorf("%w: the earlier attempt with this key was rejected by the node and is being cancelled; retry shortly", chains.ErrUnavailable)
	case stateReverted:
		return c.Result(it.TxHash.Hex()), fmt.Errorf("evm: %s: transaction %s of key %q reverted on chain: nothing was transferred (the fee was spent); pay again under a new idempotency key",
			c.cfg.Chain, it.TxHash.Hex(), strings.TrimPrefix(rec.Key, string(c.cfg.Chain)+"/"))
	}
	return c.Result(it.TxHash.Hex()), nil
}

// lookup returns the recorded result of key, if any. A pending intent is
// claimed before its hash is answered (see claim).
func (c *Connector) lookup(ctx context.Context, key, fp string) (chains.TxResult, bool, error) {
	rec, err := c.opts.Store.Get(ctx, TableIntents, c.intentKey(key))
	if errors.Is(err, persistence.ErrNotFound) {
		return chains.TxResult{}, false, nil
	}
	if err != nil {
		return chains.TxResult{}, false, err
	}
	r, err := c.recorded(rec, fp)
	if err != nil {
		return r, true, err
	}
	if _, err := c.claim(ctx, rec); err != nil {
		return r, true, c.OutcomeUnknown(c.callerKey(rec.Key), r.TxHash, "", err)
	}
	return c.answerPending(ctx, rec, r)
}

// callerKey is the idempotency key of intent key ikey, as its caller gave it.
func (c *Connector) callerKey(ikey string) string {
	return strings.TrimPrefix(ikey, string(c.cfg.Chain)+"/")
}

// answerPending answers a retry of a key whose intent is still pending (its
// earlier caller may have been told its outcome was unknown): the node is
// handed the latest attempt again, the same signed bytes, so that a
// transaction whose broadcast was lost reaches it now and never twice. The
// node taking it (or already knowing it) is the answer the first call
// would have had; anything else leaves the outcome unknown.
func (c *Connector) answerPending(ctx context.Context, rec persistence.Record, r chains.TxResult) (chains.TxResult, bool, error) {
	var it intent
	if err := json.Unmarshal(rec.Value, &it); err != nil || it.State != statePending || len(it.Attempts) == 0 {
		return r, true, nil
	}
	last := it.Attempts[len(it.Attempts)-1]
	berr := c.sendRaw(ctx, last.Raw)
	if classify(berr) == sentOK {
		return c.Result(last.Hash.Hex()), true, nil
	}
	for _, a := range it.Attempts {
		if rc, err := c.eth.TransactionReceipt(ctx, a.Hash); err == nil && rc != nil {
			if rc.Status != types.ReceiptStatusSuccessful {
				return c.Result(a.Hash.Hex()), true, fmt.Errorf("evm: %s: transaction %s of key %q reverted on chain: nothing was transferred (the fee was spent); pay again under a new idempotency key",
					c.cfg.Chain, a.Hash.Hex(), c.callerKey(rec.Key))
			}
			return c.Result(a.Hash.Hex()), true, nil
		}
	}
	return c.Result(last.Hash.Hex()), true, c.OutcomeUnknown(c.callerKey(rec.Key), last.Hash.Hex(), "rebroadcast", berr)
}

// claim rewrites a freshly reserved intent (version 1, still pending)
// unchanged before this process answers or rebroadcasts it, so that the
// writer's rollback of a rejected broadcast, which is conditional on
// version 1, can no longer delete it: a transaction another caller was
// given as the payment, or that another process sent again, stays
// recorded, and its writer tells its own caller to retry instead of that
// the payment failed. Later versions are past any rollback. It returns
// the record's version after the claim.
func (c *Connector) claim(ctx context.Context, rec persistence.Record) (uint64, error) {
	if rec.Version != 1 {
		return rec.Version, nil
	}
	var it intent
	if err := json.Unmarshal(rec.Value, &it); err != nil || it.State != statePending {
		return rec.Version, nil
	}
	vs, err := c.opts.Store.Apply(ctx, persistence.Put(TableIntents, rec.Key, rec.Value, persistence.AtVersion(1)))
	if errors.Is(err, persistence.ErrConflict) {
		// Rolled back or claimed meanwhile: the caller's retry reads
		// which (the caller words it as an unknown outcome: it was
		// recorded when read).
		return 0, fmt.Errorf("%s: the payment under this key changed while it was read; retry with the same idempotency key", c.cfg.Chain)
	}
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// ledgerNonce returns the next nonce to assign to a and the version of its
// ledger record (0: none yet; the chain's pending nonce seeds it).
func (c *Connector) ledgerNonce(ctx context.Context, a common.Address) (uint64, uint64, error) {
	rec, err := c.opts.Store.Get(ctx, TableNonces, c.addrKey(a))
	if err == nil {
		n, err := strconv.ParseUint(string(rec.Value), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("evm: nonce record %s: %w", rec.Key, err)
		}
		return n, rec.Version, nil
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		return 0, 0, err
	}
	n, err := c.eth.PendingNonceAt(ctx, a)
	if err != nil {
		return 0, 0, c.Unavailable("nonce", err)
	}
	return n, 0, nil
}

func expectVersion(v uint64) persistence.Expect {
	if v == 0 {
		return persistence.Absent()
	}
	return persistence.AtVersion(v)
}

// signTx has the Signer sign tx for from and checks the signature recovers
// to from (a KeyRef naming another key is refused, not broadcast). A
// transaction that moves value is signed as spend; one that moves nothing
// (spend nil) as a no-value request with the unsigned transaction, which
// the enclave decodes to check that it really moves nothing.
func (c *Connector) signTx(ctx context.Context, ref chains.KeyRef, from common.Address, tx *types.Transaction, spend *chains.Spend) (*types.Transaction, error) {
	if c.opts.Signer == nil {
		return nil, errors.New("evm: no Signer configured")
	}
	h := c.txSigner.Hash(tx)
	req := chains.SignRequest{}
	if spend != nil {
		req = chains.SpendRequest(ref, h[:], *spend)
	} else {
		unsigned, err := tx.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("evm: encode transaction: %w", err)
		}
		req = chains.NoValueRequest(ref, h[:], unsigned, "")
	}
	sig, err := c.opts.Signer.Sign(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("evm: sign: %w", err)
	}
	if len(sig) != 65 {
		return nil, fmt.Errorf("evm: signer returned %d bytes, want 65", len(sig))
	}
	stx, err := tx.WithSignature(c.txSigner, sig)
	if err != nil {
		return nil, fmt.Errorf("evm: signature: %w", err)
	}
	got, err := types.Sender(c.txSigner, stx)
	if err != nil {
		return nil, fmt.Errorf("evm: signature: %w", err)
	}
	if got != from {
		return nil, fmt.Errorf("evm: key %s/%s/%d signs for %s, not %s", ref.AgentID, ref.Chain, ref.Epoch, got.Hex(), from.Hex())
	}
	return stx, nil
}

// buildAttempt signs the transaction of it at its nonce with the given fees.
func (c *Connector) buildAttempt(ctx context.Context, it *intent, value, tip, feeCap *big.Int) (attempt, error) {
	to := it.To
	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID: c.chainID, Nonce: it.Nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: it.Gas, To: &to, Value: value, Data: it.Data,
	})
	spend := it.Spend
	if value.Sign() == 0 && len(it.Data) == 0 && it.To == it.From {
		spend = nil // a nonce filler: a zero-value transfer to itself
	}
	stx, err := c.signTx(ctx, it.KeyRef, it.From, tx, spend)
	if err != nil {
		return attempt{}, err
	}
	raw, err := stx.MarshalBinary()
	if err != nil {
		return attempt{}, err
	}
	return attempt{
		Hash: stx.Hash(), Raw: raw, TipCap: (*hexutil.Big)(tip), FeeCap: (*hexutil.Big)(feeCap),
		Value: (*hexutil.Big)(value), At: c.opts.Now().UTC(),
	}, nil
}

// sweepValue is what a sweep moves at this price, or an error when the
// balance does not cover the fee.
func sweepValue(balance *big.Int, gas uint64, price *big.Int) (*big.Int, error) {
	fee := new(big.Int).Mul(new(big.Int).SetUint64(gas), price)
	v := new(big.Int).Sub(balance, fee)
	if v.Sign() <= 0 {
		return nil, fmt.Errorf("%w: balance %s wei does not cover the fee %s wei", chains.ErrInsufficientFunds, balance, fee)
	}
	return v, nil
}

func (c *Connector) sendRaw(ctx context.Context, raw []byte) error {
	return c.rpc.CallContext(ctx, nil, "eth_sendRawTransaction", hexutil.Bytes(raw))
}

// maxReserveTries bounds nonce reservations lost to concurrent writers.
const maxReserveTries = 64

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// submit sends spec exactly once under idempotency key: it reserves the
// address's next nonce, signs, persists the reservation with the signed
// transaction in one batch, and only then broadcasts. A retry of key
// returns the recorded result.
func (c *Connector) submit(ctx context.Context, key string, spec txSpec) (chains.TxResult, error) {
	if r, ok, err := c.lookup(ctx, key, spec.fingerprint); ok || err != nil {
		return r, err
	}
	ikey := c.intentKey(key)
	nkey := c.addrKey(spec.from)
	for try := 0; ; try++ {
		if try == maxReserveTries {
			return chains.TxResult{}, fmt.Errorf("%w: %s: could not reserve a nonce for %s (contention)", chains.ErrUnavailable, c.cfg.Chain, spec.from.Hex())
		}
		next, ver, err := c.ledgerNonce(ctx, spec.from)
		if err != nil {
			return chains.TxResult{}, err
		}
		tip, feeCap, err := c.feeCaps(ctx)
		if err != nil {
			return chains.TxResult{}, err
		}
		value := spec.value
		if spec.price != nil {
			tip, feeCap = new(big.Int).Set(spec.price), new(big.Int).Set(spec.price)
		}
		if spec.sweep {
			tip = feeCap
			if value, err = sweepValue(spec.sweepBalance, spec.gas, feeCap); err != nil {
				return chains.TxResult{}, err
			}
		}
		if value == nil {
			value = new(big.Int)
		}
		it := &intent{
			Op: spec.op, Fingerprint: spec.fingerprint, From: spec.from, KeyRef: spec.ref, Nonce: next,
			To: spec.to, Data: spec.data, Gas: spec.gas, Sweep: spec.sweep, State: statePending,
			Created: c.opts.Now().UTC(), Extra: spec.extra, Spend: spec.spend,
		}
		at, err := c.buildAttempt(ctx, it, value, tip, feeCap)
		if err != nil {
			return chains.TxResult{}, err
		}
		if err := c.opts.Failpoint.Hit(FailAfterSign); err != nil {
			return chains.TxResult{}, err
		}
		it.Attempts = []attempt{at}
		it.TxHash = at.Hash
		val, err := json.Marshal(it)
		if err != nil {
			return chains.TxResult{}, err
		}
		pkey := c.pendingKey(spec.from, next)
		if err := c.opts.Failpoint.Hit(FailBeforePersist); err != nil {
			return chains.TxResult{}, err
		}
		_, err = c.opts.Store.Apply(ctx,
			persistence.Put(TableIntents, ikey, val, persistence.Absent()),
			persistence.Put(TableNonces, nkey, []byte(strconv.FormatUint(next+1, 10)), expectVersion(ver)),
			persistence.Put(TablePending, pkey, []byte(ikey), persistence.Absent()),
		)
		var ce *persistence.ConflictError
		if errors.As(err, &ce) {
			if ce.Table == TableIntents {
				// The same key was submitted concurrently; its record wins.
				if r, ok, err := c.lookup(ctx, key, spec.fingerprint); ok || err != nil {
					return r, err
				}
			}
			// The ledger moved (another writer of this address, which the
			// chain actor's lanes prevent within a process): back off
			// with jitter and reserve again.
			if err := sleepCtx(ctx, time.Duration(mathrand.Int64N(int64(try+1)*int64(time.Millisecond)))); err != nil {
				return chains.TxResult{}, err
			}
			continue
		}
		if err != nil {
			// The commit's answer may be lost with the commit done (a
			// cancelled context, a dropped database connection): the
			// record says which.
			if recorded, rerr := c.isRecorded(ctx, ikey, at.Hash); rerr != nil {
				return c.Result(at.Hash.Hex()), c.OutcomeUnknown(key, at.Hash.Hex(), "record", errors.Join(err, rerr))
			} else if !recorded {
				return chains.TxResult{}, err
			}
		}
		// Recorded: from here on, every answer but a refusal that removes
		// the record leaves the payment pending (chains.ErrOutcomeUnknown).
		if err := c.opts.Failpoint.Hit(FailBeforeBroadcast); err != nil {
			return c.Result(at.Hash.Hex()), c.OutcomeUnknown(key, at.Hash.Hex(), "before broadcast", err)
		}
		// Persisted: broadcast even if the caller gives up now, so that a
		// recorded transaction does not wait for a fee bump to reach the node.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		berr := c.sendRaw(bctx, at.Raw)
		cancel()
		if err := c.opts.Failpoint.Hit(FailAfterBroadcast); err != nil {
			return c.Result(at.Hash.Hex()), c.OutcomeUnknown(key, at.Hash.Hex(), "after broadcast", err)
		}
		switch classify(berr) {
		case sentOK:
			return c.Result(at.Hash.Hex()), nil
		case sentUnknown:
			// The node's answer was lost, or it is too busy to say: the
			// transaction may be in its pool. Maintenance sends it again
			// (the next pass) and reports its settlement.
			c.unsure.Set(ikey, c.opts.Now())
			return c.Result(at.Hash.Hex()), c.OutcomeUnknown(key, at.Hash.Hex(), "broadcast", berr)
		case sentNonceUsed:
			r, rerr := c.eth.TransactionReceipt(ctx, at.Hash)
			if rerr == nil && r != nil {
				return c.Result(at.Hash.Hex()), nil
			}
			// No receipt is no proof that another transaction took the
			// nonce: ours may be the one mined, broadcast first by another
			// process (a cluster member's restart pass rebroadcasts every
			// pending intent of the shared store) and not yet indexed by
			// the node. Sending the payment again under a new nonce paid
			// twice. It stays recorded; Maintain drops it only after
			// seeing the nonce mined without a receipt of ours for
			// DropAfter (a transaction sent from the same key outside Veil).
			if rerr == nil || errors.Is(rerr, ethereum.NotFound) {
				rerr = errors.New("no receipt yet")
			}
			c.opts.Log.Warn("nonce taken, receipt unknown; the payment stays recorded", "address", spec.from.Hex(), "nonce", next, "tx", at.Hash.Hex(), "err", berr)
			if err := c.skipTakenNonces(ctx, spec.from); err != nil {
				c.opts.Log.Warn("move the nonce ledger past the chain's", "address", spec.from.Hex(), "err", err)
			}
			return c.Result(at.Hash.Hex()), c.OutcomeUnknown(key, at.Hash.Hex(), "", fmt.Errorf("nonce %d is taken and the receipt of %s is unknown: %w", next, at.Hash.Hex(), rerr))
		case sentRejected:
			// Not fenced: the rollback only removes (or voids) this
			// process's own reservation, conditionally, and moves no
			// money. A stale owner's fenced rollback left the rejected
			// transaction recorded as pending, and maintenance sent it
			// after the caller had been told it failed (issue 25).
			if err := c.rollback(persistence.WithoutFence(ctx), ikey, pkey, it, next); err != nil {
				if errors.Is(err, persistence.ErrConflict) {
					// Another process took the recorded transaction up
					// meanwhile (its restart pass sent it again, or it
					// answered the key's retry with it: claim): it may
					// still be mined, so this caller is not told it failed.
					return c.Result(at.Hash.Hex()), c.OutcomeUnknown(key, at.Hash.Hex(), "", fmt.Errorf("the node refused it (%v), but another member has taken the recorded payment up and may still send it", berr))
				}
				c.opts.Log.Error("rollback after rejection", "address", spec.from.Hex(), "nonce", next, "err", err)
			}
			return chains.TxResult{}, c.rejection(berr)
		}
	}
}

// isRecorded reads whether the intent at ikey holds the attempt hash,
// with a context of its own: the caller's may be what failed the write.
func (c *Connector) isRecorded(ctx context.Context, ikey string, hash common.Hash) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	rec, err := c.opts.Store.Get(ctx, TableIntents, ikey)
	if errors.Is(err, persistence.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var it intent
	if err := json.Unmarshal(rec.Value, &it); err != nil {
		return false, err
	}
	for _, a := range it.Attempts {
		if a.Hash == hash {
			return true, nil
		}
	}
	return false, nil
}

// skipTakenNonces moves a's ledger to at least the chain's pending nonce,
// so that the next payment does not collide with nonces taken outside the
// ledger; the intents already recorded keep theirs.
func (c *Connector) skipTakenNonces(ctx context.Context, a common.Address) error {
	chainNext, err := c.eth.PendingNonceAt(ctx, a)
	if err != nil {
		return c.Unavailable("nonce", err)
	}
	for range 8 {
		next, ver, err := c.ledgerNonce(ctx, a)
		if err != nil || next >= chainNext {
			return err
		}
		_, err = c.opts.Store.Apply(ctx, persistence.Put(TableNonces, c.addrKey(a), []byte(strconv.FormatUint(chainNext, 10)), expectVersion(ver)))
		if !errors.Is(err, persistence.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w: %s: ledger contention on %s", chains.ErrUnavailable, c.cfg.Chain, a.Hex())
}

// rollback undoes a reservation the node rejected: the intent goes and the
// ledger returns to nonce, unless another reservation followed meanwhile;
// then the intent stays as void and Maintain fills its nonce with a no-op.
func (c *Connector) rollback(ctx context.Context, ikey, pkey string, it *intent, nonce uint64) error {
	rec, err := c.opts.Store.Get(ctx, TableNonces, c.addrKey(it.From))
	if err != nil {
		return err
	}
	if string(rec.Value) == strconv.FormatUint(nonce+1, 10) {
		_, err = c.opts.Store.Apply(ctx,
			persistence.Delete(TableIntents, ikey, persistence.AtVersion(1)),
			persistence.Delete(TablePending, pkey, persistence.Any()),
			persistence.Put(TableNonces, c.addrKey(it.From), []byte(strconv.FormatUint(nonce, 10)), persistence.AtVersion(rec.Version)),
		)
		if !errors.Is(err, persistence.ErrConflict) {
			return err
		}
	}
	it.State = stateVoid
	val, err := json.Marshal(it)
	if err != nil {
		return err
	}
	_, err = c.opts.Store.Apply(ctx, persistence.Put(TableIntents, ikey, val, persistence.AtVersion(1)))
	return err
}

// estimateGas runs eth_estimateGas and adds a 25% margin; a revert comes
// back decoded where the contracts' errors are known.
func (c *Connector) estimateGas(ctx context.Context, from, to common.Address, value *big.Int, data []byte) (uint64, error) {
	g, err := c.eth.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &to, Value: value, Data: data})
	if err != nil {
		return 0, c.callError("estimate gas", err)
	}
	return g + g/4, nil
}

// callError maps a failed eth_call/eth_estimateGas to Veil's errors.
func (c *Connector) callError(what string, err error) error {
	if readNodeError(err) == nodeErrInsufficientFunds || strings.Contains(strings.ToLower(err.Error()), "insufficientbalance") {
		return fmt.Errorf("%w: %s: %s: the account cannot pay the amount plus the network fee (%v)", chains.ErrInsufficientFunds, c.cfg.Chain, what, err)
	}
	var de rpc.DataError
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			if raw, derr := hexutil.Decode(s); derr == nil {
				if reason := c.decodeRevert(raw); reason != nil {
					return reason
				}
			}
		}
	}
	var re rpc.Error
	if errors.As(err, &re) {
		return fmt.Errorf("evm: %s: %s: %w", c.cfg.Chain, what, err)
	}
	return c.Unavailable(what, err)
}

// decodeRevert turns a custom error of our contracts into Veil's errors.
func (c *Connector) decodeRevert(raw []byte) error {
	if len(raw) < 4 {
		return nil
	}
	if e, err := c.names.UnpackError(raw); err == nil {
		switch e.(type) {
		case *bindings.VeilNamesNameTaken, *bindings.VeilNamesOwnerHasName:
			return fmt.Errorf("%w (%T)", chains.ErrNameTaken, e)
		case *bindings.VeilNamesInvalidName:
			return fmt.Errorf("%w (rejected by the registry)", chains.ErrInvalidName)
		}
		return fmt.Errorf("evm: %s: registry reverted: %T", c.cfg.Chain, e)
	}
	if e, err := c.token.UnpackError(raw); err == nil {
		switch e.(type) {
		case *bindings.TestTokenInsufficientBalance, *bindings.TestTokenInsufficientAllowance:
			return fmt.Errorf("%w: token reverted with %T", chains.ErrInsufficientFunds, e)
		}
		if why, ok := authorizationRevert(e); ok {
			return c.refused("%s", why)
		}
		return fmt.Errorf("evm: %s: token reverted: %T", c.cfg.Chain, e)
	}
	if e, err := c.sender.UnpackError(raw); err == nil {
		if _, ok := e.(*bindings.StealthSenderTokenTransferFailed); ok {
			return fmt.Errorf("%w: token transfer failed", chains.ErrInsufficientFunds)
		}
		return fmt.Errorf("evm: %s: stealth sender reverted: %T", c.cfg.Chain, e)
	}
	return nil
}
