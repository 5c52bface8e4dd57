package wal

import (
	"errors"
	"os"
	"syscall"
)

// fdatasync makes the file's data durable without its timestamps.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// syncer makes a segment's records durable: through Linux AIO
// (aiosync_linux.go) unless plain was asked for or the kernel refuses
// it, else by fdatasync. Only the log's writer uses it.
type syncer struct{ aio *aioSyncer }

// newSyncer answers a syncer that uses AIO where the kernel sets it up
// (an old kernel or a seccomp filter may refuse; fdatasync then).
func newSyncer(plain bool) syncer {
	if plain {
		return syncer{}
	}
	aio, err := newAIOSyncer()
	if err != nil {
		return syncer{}
	}
	return syncer{aio: aio}
}

func (s *syncer) byAIO() bool { return s.aio != nil }

// datasync makes f's data durable. A kernel or file system that refuses
// an AIO sync (errNoAIOSync: nothing was submitted) gets fdatasync, then
// and from then on; a submit not taken this time (errAIOBusy), this once.
func (s *syncer) datasync(f *os.File) error {
	if s.aio != nil {
		err := s.aio.datasync(f)
		switch {
		case errors.Is(err, errAIOBusy):
		case errors.Is(err, errNoAIOSync):
			s.close()
		default:
			return err
		}
	}
	return fdatasync(f)
}

func (s *syncer) close() {
	if s.aio != nil {
		s.aio.close()
		s.aio = nil
	}
}
