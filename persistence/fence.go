package persistence

import (
	"context"
	"errors"
	"fmt"
)

// ErrFenced reports a batch refused because the fence its context carries
// has moved: the authority the caller acted on (an agent activation's
// ownership epoch) has passed to someone else. Nothing of the batch was
// applied. It is not ErrConflict: callers that retry conflicts (contention
// on a nonce, a budget total) must stop, not retry. The concrete error is a
// *FenceError.
var ErrFenced = errors.New("persistence: fenced")

// Fence is one record a caller's authority rests on, at the version the
// caller holds: an agent activation's ownership epoch (runtime/cluster).
type Fence struct {
	Table   string
	Key     string
	Version uint64
}

// FenceError says which fence moved. It matches ErrFenced.
type FenceError struct {
	Fence
	// Actual is the record's current version; 0 when it is absent.
	Actual uint64
}

func (e *FenceError) Error() string {
	return fmt.Sprintf("persistence: fenced: %s/%q is at version %d, this write was made under version %d (another owner took over)", e.Table, e.Key, e.Actual, e.Version)
}

// Is makes errors.Is(err, ErrFenced) true.
func (e *FenceError) Is(target error) bool { return target == ErrFenced }

type fenceKey struct{}

// WithFence returns ctx carrying f: every batch applied with it through a
// Fencing store also checks, in the same transaction, that f's record is
// still at f's version. A fence replaces the one ctx carried (an agent's
// request that asks another agent is fenced by the other's epoch there).
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// WithoutFence returns ctx carrying no fence: for a write that only
// undoes the caller's own earlier write (conditional on its version), which
// must land even after the authority passed on, or what it undoes stays.
func WithoutFence(ctx context.Context) context.Context {
	return context.WithValue(ctx, fenceKey{}, Fence{})
}

// FenceOf returns the fence ctx carries, if any.
func FenceOf(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok && f.Table != ""
}

// Fencing returns s with the context's fence (WithFence) checked in every
// batch: a batch whose context carries a fence runs only while the fence's
// record is at its version, atomically with the batch's own ops, and fails
// with a *FenceError otherwise. A context without a fence changes nothing.
//
// It is what makes a stale owner's money writes fail before anything
// leaves the process: the chain connectors write a payment's intent (the
// signed transaction) before they broadcast it, and the spending policy
// counts a payment before the enclave signs it; given a Fencing store and
// the agent's request context, both refuse a stale activation's payment in
// the same transaction as the write. docs/cluster.md.
func Fencing(s Store) Store { return fencing{s} }

type fencing struct{ Store }

func (s fencing) Apply(ctx context.Context, ops ...Op) ([]uint64, error) {
	f, ok := FenceOf(ctx)
	if !ok || len(ops) == 0 {
		return s.Store.Apply(ctx, ops...)
	}
	vs, err := s.Store.Apply(ctx, append([]Op{Check(f.Table, f.Key, AtVersion(f.Version))}, ops...)...)
	var ce *ConflictError
	if errors.As(err, &ce) && ce.Table == f.Table && ce.Key == f.Key && ce.Expected == AtVersion(f.Version) {
		return nil, &FenceError{Fence: f, Actual: ce.Actual}
	}
	if err != nil {
		return nil, err
	}
	return vs[1:], nil
}
