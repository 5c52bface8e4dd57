package intents

import (
	"context"
	"errors"
	"fmt"

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
}

// Load reads the intent at key: (nil, 0, nil) when there is none.
func (l *Ledger[A]) Load(ctx context.Context, key string) (*Intent[A], uint64, error) {
	return Load[A](ctx, l.Store, l.Table, key)
}

func (l *Ledger[A]) save(ctx context.Context, key string, it *Intent[A], ver uint64) (uint64, error) {
	return Save(ctx, l.Store, l.Table, key, it, ver)
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
func (l *Ledger[A]) drop(ctx context.Context, key string, ver uint64) {
	if ver == 0 {
		return
	}
	ctx = persistence.WithoutFence(context.WithoutCancel(ctx))
	if _, err := l.Store.Apply(ctx, persistence.Delete(l.Table, key, persistence.AtVersion(ver))); err != nil {
		l.Log.Error("drop intent", "key", key, "err", err)
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
		if err != nil || done {
			return l.Result(it.TxHash), err
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
			return chains.TxResult{}, err
		}
		ver = nv
		if err := l.Failpoint.Hit(l.BeforeSend); err != nil {
			return chains.TxResult{}, err
		}
		sent := l.Send(ctx, at)
		if err := l.Failpoint.Hit(l.AfterSend); err != nil {
			return chains.TxResult{}, err
		}
		switch out, err := l.Verdict(ctx, it, at, sent); out {
		case Landed:
			it.State = Done
			if _, err := l.save(context.WithoutCancel(ctx), key, it, ver); err != nil {
				l.Log.Error("record confirmed intent", "key", key, "err", err)
			}
			return l.Result(l.Hash(at)), nil
		case Stale:
			l.Log.Info("rebuilding transaction", "source", it.Source, "reason", err, "key", key)
		case Unknown:
			return l.Result(l.Hash(at)), err
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
		it.State = Done
		_, err := l.save(ctx, key, it, ver)
		return true, err
	case Stale:
		return false, nil
	case Unknown:
		return true, err
	}
	l.drop(ctx, key, ver)
	return true, err
}

// Complete records that the attempt with hash is on chain and succeeded.
func (l *Ledger[A]) Complete(ctx context.Context, key string, it *Intent[A], ver uint64, hash string) error {
	it.State, it.TxHash = Done, hash
	_, err := l.save(ctx, key, it, ver)
	return err
}

// Fail drops the intent whose attempt failed on chain (nothing moved) and
// answers err.
func (l *Ledger[A]) Fail(ctx context.Context, key string, ver uint64, err error) error {
	l.drop(ctx, key, ver)
	return err
}

// Settle is the connector's Maintain after a restart (see the function
// Settle), with Resume.
func (l *Ledger[A]) Settle(ctx context.Context) error {
	return Settle(ctx, l.Store, l.Table, l.Log, l.locks.Lock, l.Resume)
}
