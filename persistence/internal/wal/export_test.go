package wal

import "os"

// BreakWrites swaps the log's current segment for a read-only handle on
// the same file, so that the next write(2) fails as a full or failing
// disk would. restore puts the writable handle back: a log that forgot
// its failure would then write again.
func BreakWrites(l *Log) (restore func(), err error) {
	good := l.f
	bad, err := os.Open(l.cur.path)
	if err != nil {
		return nil, err
	}
	l.f = bad
	return func() {
		bad.Close()
		l.f = good
	}, nil
}

// WaitSpare returns once the spare segment being zero-filled, if any, is
// ready, so that the next rotation takes it.
func WaitSpare(l *Log) {
	if !l.preparing {
		return
	}
	sp := <-l.spare
	l.spare <- sp
}
