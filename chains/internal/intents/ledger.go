package intents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/connopts"
	"github.com/veilhq/veil/chains/internal/keylock"
	"github.com/veilhq/veil/persistence"
)

// Outcome is a connector's verdict on one sent attempt.
type Outcome int

const (
	// Landed: the attempt is on chain and succeeded; the intent is done.
	Landed Outcome = iota
	// Stale: the attempt can never land (its blockhash expired, its
	// sequence number is used): a new one is built and signed, and the
	// payment still happens once.
	Stale
	// Unknown: no verdict (the network did not answer, the attempt is not
	// confirmed yet); it may land. The intent stays pending and a retry
	// with the same key resumes it.
	Unknown
	// Rejected: refused for good, or failed on chain (fee spent, nothing
	// moved). The record goes so that the key can be used again once the
	// cause is fixed.
	Rejected
)

// maxRebuilds bounds how often one call builds a new attempt after the
// previous one went stale.
const maxRebuilds = 5

// Ledger runs a connector's writes as intents in the store (table Table):
// each is persisted with its signed attempt before the attempt leaves the
// process, one at a time per source account, and settled by the
// connector's verdicts. The connector supplies what is chain specific in
// the func fields; the Stellar and Solana connectors use it.
type Ledger[A any] struct {
	// Options are the connector's (it uses Store, Log, Now and Failpoint);
	// Base names the chain in errors and makes the result of a
	// transaction hash (with its explorer link).
	connopts.Options
	connopts.Base
	Table string
	// Options.Failpoint is hit at AfterSign (an attempt is signed, nothing is
	// persisted), BeforeSend (persisted, not yet sent) and AfterSend (the
	// network answered; the caller has no answer yet).
	AfterSign, BeforeSend, AfterSend string
	// Hash is an attempt's transaction hash (or signature).
	Hash func(at A) string
	// Resume settles a pending intent found in the store under its
	// source's lock: an attempt found on chain completes it (done); one
	// that may still land is sent again (Resend); when every attempt is
	// dead it answers done = false and the caller builds a new one.
	Resume func(ctx context.Context, key string, it *Intent[A], ver uint64) (done bool, err error)
	// Send hands an attempt to the network; its error is the answer.
	Send func(ctx context.Context, at A) error
	// Verdict reads Send's answer, waiting for the attempt to land where
	// the chain needs that. The error of Stale is the reason (logged); of
	// Unknown and Rejected, what the caller gets.
	Verdict func(ctx context.Context, it *Intent[A], at A, sent error) (Outcome, error)
	// Exhausted says why an intent of source went stale too often.
	Exhausted func(source string) string

	locks keylock.Locks
	// dead marks the intents a periodic pass found with every attempt
	// dead, and since when (DeadAfter).
	dead Marks
}

// Load reads the intent at key: (nil, 0, nil) when there is none.
func (l *Ledger[A]) Load(ctx context.Context, key string) (*Intent[A], uint64, error) {
	return Load[A](ctx, l.Store, l.Table, key)
}

// PendingTable is the index of the intents still pending (key → ""), which
// the periodic pass walks instead of every intent ever recorded.
func (l *Ledger[A]) PendingTable() string { return l.Table + "_pending" }

// save writes it at key if the record is still at version ver (0: absent),
// keeps the pending index in step, and commits the settlements s with it.
func (l *Ledger[A]) save(ctx context.Context, key string, it *Intent[A], ver uint64, s ...chains.Settlement) (uint64, error) {
	val, err := json.Marshal(it)
	if err != nil {
		return 0, err
	}
	exp := persistence.Absent()
	if ver > 0 {
		exp = persistence.AtVersion(ver)
	}
	ops := []persistence.Op{persistence.Put(l.Table, key, val, exp)}
	if it.State == Pending {
		ops = append(ops, persistence.Put(l.PendingTable(), key, nil, persistence.Any()))
	} else {
		ops = append(ops, persistence.Delete(l.PendingTable(), key, persistence.Any()))
	}
	for _, x := range s {
		ops = append(ops, l.SettleOps(x)...)
	}
	vs, err := l.Store.Apply(ctx, ops...)
	if err != nil {
		return 0, err
	}
	return vs[0], nil
}

// settlement is the settlement of it (at key) by the transaction hash.
func (l *Ledger[A]) settlement(key string, it *Intent[A], hash string, status chains.SettlementStatus, reason string) chains.Settlement {
	conf := uint64(0)
	if status == chains.SettlementConfirmed {
		conf = 1
	}
	return l.NewSettlement(l.Chain(), key, it.KeyRef.AgentID, it.Op, hash, status, conf, reason)
}

// done records that the attempt with hash is on chain and succeeded, and
// reports it.
func (l *Ledger[A]) done(ctx context.Context, key string, it *Intent[A], ver uint64, hash string) error {
	it.State, it.TxHash = Done, hash
	s := l.settlement(key, it, hash, chains.SettlementConfirmed, "")
	if _, err := l.save(ctx, key, it, ver, s); err != nil {
		return err
	}
	l.Deliver(ctx, s)
	return nil
}

// unknown is the error of the recorded intent it at key whose outcome err
// left unknown, unless the intent is gone (dropped: err is then its
// refusal) or done meanwhile.
func (l *Ledger[A]) unknown(ctx context.Context, key string, it *Intent[A], err error) error {
	cur, _, lerr := l.Load(context.WithoutCancel(ctx), key)
	switch {
	case lerr == nil && cur == nil:
		return err
	case lerr == nil && cur.State == Done:
		return nil
	}
	return l.OutcomeUnknown(key, it.TxHash, "", err)
}

// Prior reads the intent a retry of key resumes: nil for a new key, and
// chains.ErrIdempotencyConflict when the stored intent was made for
// another request (fingerprint fp).
func (l *Ledger[A]) Prior(ctx context.Context, key, fp string) (*Intent[A], uint64, error) {
	it, ver, err := l.Load(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if it != nil && it.Fingerprint != fp {
		return nil, 0, fmt.Errorf("%w (key %q)", chains.ErrIdempotencyConflict, key)
	}
	return it, ver, nil
}

// drop deletes the intent at version ver (0: never written), so that its
// key can be used again; its attempts are dead or refused. The delete is
// not fenced: it only undoes the caller's own write, conditionally on its
// version, and moves no money. A stale owner's fenced delete failed and
// left the refused attempt pending, for the new owner's restart pass to
// send again after the caller had been told it failed (as chains/evm's
// rollback).
func (l *Ledger[A]) drop(ctx context.Context, key string, ver uint64, s ...chains.Settlement) {
	if ver == 0 {
		return
	}
	ctx = persistence.WithoutFence(context.WithoutCancel(ctx))
	ops := []persistence.Op{persistence.Delete(l.Table, key, persistence.AtVersion(ver)), persistence.Delete(l.PendingTable(), key, persistence.Any())}
	for _, x := range s {
		ops = append(ops, l.SettleOps(x)...)
	}
	if _, err := l.Store.Apply(ctx, ops...); err != nil {
		l.Log.Error("drop intent", "key", key, "err", err)
		return
	}
	for _, x := range s {
		l.Deliver(ctx, x)
	}
}

// Run sends the intent under key exactly once: a recorded key returns its
// result (or resumes it); a new attempt is built (build signs it with
// fresh chain state), persisted and only then sent. A stale attempt can
// never land, so a new one is built and signed: the payment still
// happens once.
func (l *Ledger[A]) Run(ctx context.Context, key string, it *Intent[A], build func(ctx context.Context, it *Intent[A]) (A, error)) (chains.TxResult, error) {
	unlock := l.locks.Lock(it.Source)
	defer unlock()
	cur, ver, err := l.Prior(ctx, key, it.Fingerprint)
	if err != nil {
		return chains.TxResult{}, err
	}
	if cur != nil {
		if cur.State == Done {
			return l.Result(cur.TxHash), nil
		}
		it = cur
		done, err := l.Resume(ctx, key, it, ver)
		if err != nil {
			// Still recorded and pending: the outcome is unknown.
			return l.Result(it.TxHash), l.unknown(ctx, key, it, err)
		}
		if done {
			return l.Result(it.TxHash), nil
		}
		if it, ver, err = l.Load(ctx, key); err != nil {
			return chains.TxResult{}, err
		}
	}
	for try := 0; ; try++ {
		if try > maxRebuilds {
			return chains.TxResult{}, fmt.Errorf("%w: %s: %s; retry with the same idempotency key", chains.ErrUnavailable, l.Chain(), l.Exhausted(it.Source))
		}
		at, err := build(ctx, it)
		if err != nil {
			if len(it.Attempts) > 0 {
				l.drop(ctx, key, ver) // earlier attempts are dead (see Resume)
			}
			return chains.TxResult{}, err
		}
		if err := l.Failpoint.Hit(l.AfterSign); err != nil {
			return chains.TxResult{}, err
		}
		it.Attempts = append(it.Attempts, at)
		it.TxHash, it.State = l.Hash(at), Pending
		if it.Created.IsZero() {
			it.Created = l.Now().UTC()
		}
		nv, err := l.save(ctx, key, it, ver)
		if errors.Is(err, persistence.ErrConflict) {
			return chains.TxResult{}, fmt.Errorf("%w: %s: idempotency key %q is being used concurrently; retry", chains.ErrUnavailable, l.Chain(), key)
		}
		if err != nil {
			// The commit's answer may be lost with the commit done: the
			// record says which.
			cur, cv, lerr := l.Load(context.WithoutCancel(ctx), key)
			switch {
			case lerr != nil:
				return l.Result(l.Hash(at)), l.OutcomeUnknown(key, l.Hash(at), "record", errors.Join(err, lerr))
			case cur == nil || cur.TxHash != l.Hash(at):
				return chains.TxResult{}, err
			}
			nv = cv
		}
		ver = nv
		// Recorded: from here on, every answer but a refusal that drops
		// the record leaves the payment pending (chains.ErrOutcomeUnknown).
		hash := l.Hash(at)
		if err := l.Failpoint.Hit(l.BeforeSend); err != nil {
			return l.Result(hash), l.OutcomeUnknown(key, hash, "before send", err)
		}
		sent := l.Send(ctx, at)
		if err := l.Failpoint.Hit(l.AfterSend); err != nil {
			return l.Result(hash), l.OutcomeUnknown(key, hash, "after send", err)
		}
		switch out, err := l.Verdict(ctx, it, at, sent); out {
		case Landed:
			if err := l.done(context.WithoutCancel(ctx), key, it, ver, hash); err != nil {
				l.Log.Error("record confirmed intent", "key", key, "err", err)
			}
			return l.Result(hash), nil
		case Stale:
			l.Log.Info("rebuilding transaction", "source", it.Source, "reason", err, "key", key)
		case Unknown:
			return l.Result(hash), l.OutcomeUnknown(key, hash, "", err)
		default:
			l.drop(ctx, key, ver)
			return chains.TxResult{}, err
		}
	}
}

// Resend is the end of a Resume: it sends at, an attempt of the stored
// pending intent it (version ver) that may still land, again and settles
// the intent by the verdict. done is false when at proved stale: the
// caller builds a new attempt.
func (l *Ledger[A]) Resend(ctx context.Context, key string, it *Intent[A], ver uint64, at A) (done bool, err error) {
	out, err := l.Verdict(ctx, it, at, l.Send(ctx, at))
	switch out {
	case Landed:
		return true, l.done(ctx, key, it, ver, l.Hash(at))
	case Stale:
		return false, nil
	case Unknown:
		return true, l.OutcomeUnknown(key, l.Hash(at), "", err)
	}
	// Refused now, after an earlier call recorded it: whoever is waiting
	// on that call's unknown outcome learns it from the settlement.
	l.drop(ctx, key, ver, l.settlement(key, it, l.Hash(at), chains.SettlementFailed, errText(err)))
	return true, err
}

// Complete records that the attempt with hash is on chain and succeeded,
// and reports it.
func (l *Ledger[A]) Complete(ctx context.Context, key string, it *Intent[A], ver uint64, hash string) error {
	return l.done(ctx, key, it, ver, hash)
}

// Fail drops the intent whose attempt hash failed on chain (nothing moved),
// reports it, and answers err.
func (l *Ledger[A]) Fail(ctx context.Context, key string, it *Intent[A], ver uint64, hash string, err error) error {
	l.drop(ctx, key, ver, l.settlement(key, it, hash, chains.SettlementFailed, errText(err)))
	return err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// DeadAfter is how long the periodic pass must keep finding every attempt
// of a pending intent dead (its sequence number used or its blockhash
// expired, and none of them on chain) before it reports the payment
// failed and frees its key. One sighting is not proof: a node that is
// still ingesting the ledger that holds the attempt answers "not found"
// and "sequence used" at once. A retry under the key before then builds a
// new attempt, as always.
const DeadAfter = time.Minute

// deadReason is the failure reported for an intent whose attempts are dead.
const deadReason = "none of its transactions is on chain and none can be any more (sequence number used or validity expired): nothing was transferred"

// Settle is the connector's Maintain: it delivers the settlements still
// kept (connopts.Options.Redeliver) and settles the pending intents —
// after a restart (restart) every intent of the table (see the function
// Settle), on a periodic pass those of the pending index, which a lost
// answer left pending: an attempt found on chain completes the intent, one
// that may still land is sent again (the same signed bytes), and one whose
// attempts stay dead for DeadAfter is reported failed and dropped.
func (l *Ledger[A]) Settle(ctx context.Context, restart bool) error {
	if err := l.Redeliver(ctx, l.Chain()); err != nil {
		l.Log.Warn("redeliver settlements", "err", err)
	}
	resume := func(ctx context.Context, key string, it *Intent[A], ver uint64) (bool, error) {
		done, err := l.Resume(ctx, key, it, ver)
		if err != nil || done {
			l.dead.Forget(key)
			return done, err
		}
		now := l.Now()
		first, seen := l.dead.Get(key)
		if !seen {
			l.dead.Set(key, now)
		}
		if !seen || now.Sub(first) < DeadAfter {
			return false, nil
		}
		l.dead.Forget(key)
		l.Log.Warn("pending payment's transactions are all dead; reported failed", "key", key, "tx", it.TxHash)
		l.drop(ctx, key, ver, l.settlement(key, it, it.TxHash, chains.SettlementFailed, deadReason))
		return true, nil
	}
	if restart {
		return Settle(ctx, l.Store, l.Table, l.Log, l.locks.Lock, func(ctx context.Context, key string, it *Intent[A], ver uint64) (bool, error) {
			// Index what an older version left pending without an entry.
			if _, err := l.Store.Apply(ctx, persistence.Put(l.PendingTable(), key, nil, persistence.Any())); err != nil {
				return false, err
			}
			return resume(ctx, key, it, ver)
		})
	}
	recs, err := l.Store.List(ctx, l.PendingTable(), persistence.Query{})
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range recs {
		cur, _, err := l.Load(ctx, r.Key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cur == nil || cur.State != Pending || len(cur.Attempts) == 0 {
			_, _ = l.Store.Apply(ctx, persistence.Delete(l.PendingTable(), r.Key, persistence.AtVersion(r.Version)))
			continue
		}
		unlock := l.locks.Lock(cur.Source)
		// Re-read under the lock: a caller's retry may have settled it.
		var ver uint64
		if cur, ver, err = l.Load(ctx, r.Key); err == nil && cur != nil && cur.State == Pending && len(cur.Attempts) > 0 {
			_, err = resume(ctx, r.Key, cur, ver)
		}
		unlock()
		if err != nil && (errors.Is(err, chains.ErrUnavailable) || errors.Is(err, chains.ErrOutcomeUnknown) || ctx.Err() != nil) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Marks are times this process noted about intents, by key (the EVM
// connector keeps its own with the same type). They live in memory only:
// each is a reason to wait longer, never to send. The zero value is ready.
type Marks struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// Get is the time noted for key, if any.
func (k *Marks) Get(key string) (time.Time, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.m[key]
	return t, ok
}

// Set notes t for key.
func (k *Marks) Set(key string, t time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]time.Time{}
	}
	k.m[key] = t
}

// Forget drops key's time.
func (k *Marks) Forget(key string) {
	k.mu.Lock()
	delete(k.m, key)
	k.mu.Unlock()
}
