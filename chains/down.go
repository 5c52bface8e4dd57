package chains

import (
	"fmt"
	"time"
)

// DownKind says why a chain serves nothing on this node.
type DownKind string

const (
	// DownDegraded: its node did not answer when veild started (or its
	// embedded devnet could not start); veild keeps trying to connect,
	// and the chain serves as soon as it does.
	DownDegraded DownKind = "degraded"
	// DownReset: its node now serves another chain than the one veild
	// recorded (the genesis changed: a development node restarted with
	// the same chain id, a network reset). Nothing is signed or read on it
	// until an operator acts (docs/operations.md); it does not heal alone
	// unless the node comes back with the recorded chain.
	DownReset DownKind = "reset"
)

// DownError is the answer of every operation of a chain that serves
// nothing on this node (see DownKind). It matches ErrUnavailable: nothing
// was done, and the operation may be retried later. Its text is safe to
// show to API clients (no node URL, which may carry a provider's key).
type DownError struct {
	Chain ID
	Kind  DownKind
	// Reason says what is wrong, for clients and operators.
	Reason string
	// RetryAfter is when a retry may succeed (the next connection attempt
	// of a degraded chain); 0 when unknown.
	RetryAfter time.Duration
}

func (e *DownError) Error() string {
	return fmt.Sprintf("chain %s is unavailable on this server (%s): %s", e.Chain, e.Kind, e.Reason)
}

// Is makes a DownError match ErrUnavailable.
func (e *DownError) Is(target error) bool { return target == ErrUnavailable }
