// Package deadline turns a context's deadline into the timeout that a
// protoactor future takes (runtime/host, actors/chain, actors/enclave), so
// that a request to an actor waits exactly as long as its caller does.
package deadline

import (
	"context"
	"time"
)

// Timeout is the time left before ctx's deadline, or def when ctx has
// none. A deadline already passed is context.DeadlineExceeded: nothing
// should be sent that nobody will wait for.
func Timeout(ctx context.Context, def time.Duration) (time.Duration, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return def, nil
	}
	if left := time.Until(dl); left > 0 {
		return left, nil
	}
	return 0, context.DeadlineExceeded
}
