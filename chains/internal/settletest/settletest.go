// Package settletest records the settlements a connector reports, for the
// connectors' tests (chains/evm, chains/stellar, chains/solana): one
// recorder instead of a copy in each connector's fault tests.
package settletest

import (
	"context"
	"sync"

	"github.com/veilhq/veil/chains"
)

// Recorder records what a connector reports to its OnSettled hook. The
// zero value is ready; it is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	got []chains.Settlement
}

// On is the OnSettled hook: it records x and accepts it.
func (r *Recorder) On(_ context.Context, x chains.Settlement) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
	return nil
}

// Of answers the settlements reported for the idempotency key, in the
// order they came.
func (r *Recorder) Of(key string) []chains.Settlement {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []chains.Settlement
	for _, x := range r.got {
		if x.IdempotencyKey == key {
			out = append(out, x)
		}
	}
	return out
}

// All answers every settlement reported, in the order they came.
func (r *Recorder) All() []chains.Settlement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]chains.Settlement(nil), r.got...)
}
