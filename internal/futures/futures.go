// Package futures reads protoactor futures without racing a late answer.
//
// protoactor-go's Future.Result reads the future's result field after the
// future has resolved, and an answer that arrives after a time-out writes
// that field without the future's lock (futureProcess.SendUserMessage), so
// reading Result after a time-out races with a late answer: the race
// detector reports it, and the value read is torn in principle. Result
// here reads the field only when the future resolved with an answer, which
// happened before its resolution under the lock.
package futures

import "github.com/asynkron/protoactor-go/actor"

// Result waits for f and answers what Future.Result would, without reading
// the answer of a future that failed (timed out, dead letter).
func Result(f *actor.Future) (any, error) {
	if err := f.Wait(); err != nil {
		return nil, err
	}
	return f.Result()
}
