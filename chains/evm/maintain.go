package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// MaintainReport counts what one maintenance pass did.
type MaintainReport struct {
	Pending     int // transactions still unconfirmed after the pass
	Confirmed   int // receipts recorded
	Rebroadcast int // persisted transactions sent again as signed (restart, unknown outcome, or gone from the node)
	Bumped      int // stuck transactions resubmitted with a higher fee
	Filled      int // void nonces given a no-op transaction
	Dropped     int // intents whose nonce another transaction took
	// Authorizations: signed EIP-3009 authorizations past their
	// validBefore whose fate (used, or never to be) was reported.
	Authorizations int
}

// maxAttempts bounds the fee bumps of one transaction.
const maxAttempts = 16

// DropAfter is how long Maintain must keep seeing an intent's nonce mined
// with no receipt for any of its attempts before it concludes that another
// transaction took the nonce and drops the intent. One sighting is not
// proof: a node answers no receipt for a transaction it mined while it is
// still indexing (geth after a restart, a lagging node behind a load
// balancer), and dropping a payment that was in fact mined frees its
// idempotency key, so that the caller's retry pays a second time (the
// robustness test of cmd/veild found exactly that). A real replacement
// only waits DropAfter longer to be reported.
const DropAfter = 2 * time.Minute

// Maintain runs one maintenance pass (see MaintainOnce). The chain actor
// calls it at start with restart=true and then every PollInterval.
func (c *Connector) Maintain(ctx context.Context, restart bool) error {
	_, err := c.MaintainOnce(ctx, restart)
	return err
}

// MaintainOnce walks every unconfirmed transaction of this chain in nonce
// order: it records receipts (mined or reverted), rebroadcasts persisted
// transactions when restart is set (a crash may have come between persist
// and broadcast), resubmits a transaction unconfirmed for StuckAfter with a
// fee 12.5% higher (at least the current suggestion) at the same nonce,
// gives a void reservation a zero-value self-transfer so that no nonce gap
// blocks later transactions, and drops intents whose nonce another
// transaction took.
func (c *Connector) MaintainOnce(ctx context.Context, restart bool) (MaintainReport, error) {
	var rep MaintainReport
	// Settlements a receiver refused, or a crash kept, go first.
	if err := c.opts.Redeliver(ctx, c.cfg.Chain); err != nil {
		c.opts.Log.Warn("redeliver settlements", "err", err)
	}
	recs, err := c.opts.Store.List(ctx, TablePending, persistence.Query{Prefix: string(c.cfg.Chain) + "/"})
	if err != nil {
		return rep, err
	}
	// Group by address, keys are in nonce order within an address.
	var errs []error
	for i := 0; i < len(recs); {
		addrPrefix := recs[i].Key[:strings.LastIndexByte(recs[i].Key, '/')+1]
		j := i
		for j < len(recs) && strings.HasPrefix(recs[j].Key, addrPrefix) {
			j++
		}
		if err := c.maintainAddress(ctx, recs[i:j], restart, &rep); err != nil {
			errs = append(errs, err)
		}
		i = j
	}
	if err := c.settleAuthorizations(ctx, &rep); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

func (c *Connector) maintainAddress(ctx context.Context, pend []persistence.Record, restart bool, rep *MaintainReport) error {
	type item struct {
		pkey string
		ikey string
		rec  persistence.Record
		it   intent
	}
	var items []item
	for _, p := range pend {
		ikey := string(p.Value)
		rec, err := c.opts.Store.Get(ctx, TableIntents, ikey)
		if errors.Is(err, persistence.ErrNotFound) {
			_, _ = c.opts.Store.Apply(ctx, persistence.Delete(TablePending, p.Key, persistence.AtVersion(p.Version)))
			continue
		}
		if err != nil {
			return err
		}
		var it intent
		if err := json.Unmarshal(rec.Value, &it); err != nil {
			return fmt.Errorf("evm: decode intent %s: %w", ikey, err)
		}
		items = append(items, item{pkey: p.Key, ikey: ikey, rec: rec, it: it})
	}
	if len(items) == 0 {
		return nil
	}
	from := items[0].it.From
	// One round trip: the address's mined nonce and every attempt's receipt.
	var nonceHex string
	batch := []rpc.BatchElem{{Method: "eth_getTransactionCount", Args: []any{from, "latest"}, Result: &nonceHex}}
	type ref struct{ item, attempt int }
	var refs []ref
	n := 0
	for _, x := range items {
		n += len(x.it.Attempts)
	}
	// Allocated once: the batch keeps pointers into it, which an append
	// that grows it would leave pointing at the old array (every receipt
	// but the last few then read as missing, and their mined payments as
	// replaced: the robustness test of cmd/veild caught them paid twice).
	receipts := make([]*types.Receipt, n)
	for i, x := range items {
		for j, a := range x.it.Attempts {
			refs = append(refs, ref{i, j})
			batch = append(batch, rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{a.Hash}, Result: &receipts[len(refs)-1]})
		}
	}
	// And whether the node still holds each last attempt: a node that
	// restarted (an in-memory pool: geth --dev, Hardhat, Anvil, a devnet)
	// has forgotten every transaction it had not mined.
	held := make([]*json.RawMessage, len(items))
	heldAt := len(batch)
	for i, x := range items {
		last := x.it.Attempts[len(x.it.Attempts)-1]
		batch = append(batch, rpc.BatchElem{Method: "eth_getTransactionByHash", Args: []any{last.Hash}, Result: &held[i]})
	}
	if err := c.rpc.BatchCallContext(ctx, batch); err != nil {
		return c.Unavailable("maintenance", err)
	}
	if batch[0].Error != nil {
		return c.Unavailable("nonce", batch[0].Error)
	}
	mined, err := strconv.ParseUint(strings.TrimPrefix(nonceHex, "0x"), 16, 64)
	if err != nil {
		return fmt.Errorf("evm: nonce %q: %w", nonceHex, err)
	}
	found := make([]*types.Receipt, len(items))
	unknown := make([]bool, len(items)) // the node could not say
	for k, r := range refs {
		switch {
		case batch[k+1].Error != nil:
			// geth answers "transaction indexing is in progress": that is
			// not a no.
			unknown[r.item] = true
		case receipts[k] != nil:
			found[r.item] = receipts[k]
		}
	}
	// gone: the node answered that it does not know the last attempt
	// (null, not an error: an error says nothing).
	gone := make([]bool, len(items))
	for i := range items {
		gone[i] = batch[heldAt+i].Error == nil && (held[i] == nil || string(*held[i]) == "null")
	}
	var errs []error
	for i := range items {
		x := &items[i]
		var err error
		if found[i] != nil || x.it.Nonce >= mined {
			c.forgetNonceTaken(x.ikey)
		}
		switch {
		case found[i] != nil:
			err = c.confirm(ctx, x.pkey, x.ikey, x.rec.Version, &x.it, found[i])
			if err == nil {
				rep.Confirmed++
			}
		case x.it.Nonce < mined && (unknown[i] || !c.nonceTakenFor(x.ikey, DropAfter)):
			// Mined nonce, no receipt of ours yet: wait for the node to
			// find one, or for DropAfter to pass.
			rep.Pending++
		case x.it.Nonce < mined:
			c.forgetNonceTaken(x.ikey)
			// Mined nonce, but none of our attempts: another transaction took it.
			if x.it.State == stateVoid {
				err = c.deleteIntent(ctx, x.pkey, x.ikey, x.rec.Version, &x.it, voidReason)
				rep.Filled++
				break
			}
			c.opts.Log.Error("transaction replaced by one Veil did not send; the payment did not happen", "address", from.Hex(), "nonce", x.it.Nonce, "tx", x.it.TxHash.Hex(), "key", x.ikey)
			err = c.deleteIntent(ctx, x.pkey, x.ikey, x.rec.Version, &x.it,
				fmt.Sprintf("its nonce %d was taken by another transaction: it can never be mined, nothing was transferred", x.it.Nonce))
			rep.Dropped++
		default:
			rep.Pending++
			ver := x.rec.Version
			if restart {
				// Claimed before it is sent again (see claim).
				if ver, err = c.claim(ctx, x.rec); err != nil {
					break
				}
			}
			err = c.advance(ctx, x.ikey, ver, &x.it, restart, gone[i], rep)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// nonceTakenFor records the first pass that saw ikey's nonce mined without
// a receipt of its own, and reports whether that was at least d ago. The
// record lives in memory: a restart starts the wait again, which only
// delays a drop.
func (c *Connector) nonceTakenFor(ikey string, d time.Duration) bool {
	now := c.opts.Now()
	first, ok := c.taken.Get(ikey)
	if !ok {
		c.taken.Set(ikey, now)
		return false
	}
	return now.Sub(first) >= d
}

func (c *Connector) forgetNonceTaken(ikey string) { c.taken.Forget(ikey) }

// voidReason is the failure of a transaction the node refused after its
// nonce was reserved, once a no-op took the nonce.
const voidReason = "the node refused it; a no-op transaction took its nonce, nothing was transferred"

// confirm records the receipt r of one of it's attempts and reports the
// settlement, in the same commit (connopts.Options.SettleOps).
func (c *Connector) confirm(ctx context.Context, pkey, ikey string, version uint64, it *intent, r *types.Receipt) error {
	if err := c.opts.Failpoint.Hit(FailBeforeConfirm); err != nil {
		return err
	}
	if it.State == stateVoid {
		// The filler (or the original) took the nonce; the key is free again
		// unless the original itself was mined.
		if r.TxHash != it.Attempts[0].Hash || r.Status != types.ReceiptStatusSuccessful {
			return c.deleteIntent(ctx, pkey, ikey, version, it, voidReason)
		}
	}
	it.State = stateMined
	status, reason := chains.SettlementConfirmed, ""
	if r.Status != types.ReceiptStatusSuccessful {
		it.State = stateReverted
		status, reason = chains.SettlementFailed, "reverted on chain: nothing was transferred (the fee was spent)"
		c.opts.Log.Warn("transaction reverted", "tx", r.TxHash.Hex(), "op", it.Op, "key", ikey)
	}
	it.TxHash = r.TxHash
	it.Block = r.BlockNumber.Uint64()
	val, err := json.Marshal(it)
	if err != nil {
		return err
	}
	s := c.settlement(ikey, it, r.TxHash, status, 1, reason)
	ops := append([]persistence.Op{
		persistence.Put(TableIntents, ikey, val, persistence.AtVersion(version)),
		persistence.Delete(TablePending, pkey, persistence.Any())}, c.opts.SettleOps(s)...)
	_, err = c.opts.Store.Apply(ctx, ops...)
	if errors.Is(err, persistence.ErrConflict) {
		return nil // another pass got there first, and reported it
	}
	if err == nil {
		c.resent.Forget(ikey)
		c.unsure.Forget(ikey)
		c.opts.Deliver(ctx, s)
	}
	return err
}

// deleteIntent removes an intent whose transaction can never be mined,
// freeing its key, and reports its failure (why) in the same commit.
func (c *Connector) deleteIntent(ctx context.Context, pkey, ikey string, version uint64, it *intent, why string) error {
	s := c.settlement(ikey, it, it.TxHash, chains.SettlementFailed, 0, why)
	ops := append([]persistence.Op{
		persistence.Delete(TableIntents, ikey, persistence.AtVersion(version)),
		persistence.Delete(TablePending, pkey, persistence.Any())}, c.opts.SettleOps(s)...)
	_, err := c.opts.Store.Apply(ctx, ops...)
	if errors.Is(err, persistence.ErrConflict) {
		return nil
	}
	if err == nil {
		c.resent.Forget(ikey)
		c.unsure.Forget(ikey)
		c.opts.Deliver(ctx, s)
	}
	return err
}

// settlement is the settlement of intent it (at ikey) by transaction hash.
func (c *Connector) settlement(ikey string, it *intent, hash common.Hash, status chains.SettlementStatus, confirmations uint64, reason string) chains.Settlement {
	return c.opts.NewSettlement(c.cfg.Chain, c.callerKey(ikey), it.KeyRef.AgentID, it.Op, hash.Hex(), status, confirmations, reason)
}

// advance moves an unconfirmed transaction along: rebroadcast after a
// restart of ours, after a broadcast whose outcome was unknown, or when
// the node no longer holds it (gone: the node restarted and lost its
// pool); fill a void nonce, or bump a stuck one.
func (c *Connector) advance(ctx context.Context, ikey string, version uint64, it *intent, restart, gone bool, rep *MaintainReport) error {
	last := it.Attempts[len(it.Attempts)-1]
	fill := it.State == stateVoid && !c.isFiller(it, last)
	// A transaction is stuck when it has been unconfirmed for StuckAfter
	// since it was last sent: since its attempt was signed, or since this
	// process's restart pass sent it again, whichever is later.
	since := last.At
	if at, ok := c.resent.Get(ikey); ok && at.After(since) {
		since = at
	}
	stuck := c.opts.Now().Sub(since) >= c.cfg.StuckAfter && len(it.Attempts) < maxAttempts
	_, unsure := c.unsure.Get(ikey)
	if !fill && (restart || unsure || !stuck) {
		// The restart pass sends the last attempt again as it is, even if
		// it is older than StuckAfter: the node may have lost it with the
		// crash, which is no sign that its fee is too low. Bumping here
		// replaced, after every restart of a busy node, the transaction
		// whose hash the caller had already been given. So does the pass
		// after a broadcast whose answer was lost, and a pass that finds
		// the node no longer holds it (the node restarted: the same
		// signed bytes, same nonce, same hash, so the caller's hash stays
		// the payment's). A gone transaction does not restart the
		// StuckAfter wait: a pool that keeps evicting it for its fee
		// still gets the bump.
		if restart || unsure || gone {
			c.unsure.Forget(ikey)
			if err := c.sendRaw(ctx, last.Raw); classify(err) == sentRejected || classify(err) == sentUnknown {
				c.opts.Log.Warn("rebroadcast", "tx", last.Hash.Hex(), "err", err)
			}
			if restart || unsure {
				c.resent.Set(ikey, c.opts.Now())
			}
			rep.Rebroadcast++
		}
		return nil
	}
	base, tip, err := c.fees(ctx)
	if err != nil {
		return err
	}
	bump := func(x *big.Int) *big.Int {
		return new(big.Int).Add(x, new(big.Int).Add(new(big.Int).Rsh(x, 3), big.NewInt(1)))
	}
	newTip := maxBig(bump(last.TipCap.ToInt()), tip)
	newCap := maxBig(bump(last.FeeCap.ToInt()), new(big.Int).Add(new(big.Int).Lsh(base, 1), newTip))
	value := last.Value.ToInt()
	if fill || it.State == stateVoid {
		// A zero-value transfer to itself takes the nonce.
		it.To, it.Data, it.Gas, it.Sweep, value = it.From, nil, 21000, false, new(big.Int)
	}
	if it.Sweep {
		newTip = newCap
		bal, err := c.eth.BalanceAt(ctx, it.From, nil)
		if err != nil {
			return c.Unavailable("balance", err)
		}
		if value, err = sweepValue(bal, it.Gas, newCap); err != nil {
			return err
		}
	}
	at, err := c.buildAttempt(ctx, it, value, newTip, newCap)
	if err != nil {
		return err
	}
	it.Attempts = append(it.Attempts, at)
	val, err := json.Marshal(it)
	if err != nil {
		return err
	}
	if _, err := c.opts.Store.Apply(ctx, persistence.Put(TableIntents, ikey, val, persistence.AtVersion(version))); err != nil {
		if errors.Is(err, persistence.ErrConflict) {
			return nil
		}
		return err
	}
	berr := c.sendRaw(ctx, at.Raw)
	if fill {
		rep.Filled++
	} else {
		rep.Bumped++
	}
	c.opts.Log.Info("resubmitted", "op", it.Op, "nonce", it.Nonce, "tx", at.Hash.Hex(), "feeCap", newCap, "fill", fill, "err", berr)
	return nil
}

func (c *Connector) isFiller(it *intent, a attempt) bool {
	return len(it.Attempts) > 1 && a.Value != nil && a.Value.ToInt().Sign() == 0 && it.To == it.From
}

func maxBig(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// PendingCount is how many of this chain's transactions are unconfirmed.
func (c *Connector) PendingCount(ctx context.Context) (int, error) {
	recs, err := c.opts.Store.List(ctx, TablePending, persistence.Query{Prefix: string(c.cfg.Chain) + "/"})
	return len(recs), err
}

// NextNonce is the ledger's next nonce for address (tests, diagnostics).
func (c *Connector) NextNonce(ctx context.Context, address common.Address) (uint64, error) {
	n, _, err := c.ledgerNonce(ctx, address)
	return n, err
}
