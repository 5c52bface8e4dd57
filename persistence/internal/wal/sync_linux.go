package wal

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
)

// fdatasync makes the file's data durable without its timestamps.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// syncer makes a segment's records durable: through Linux AIO
// (aiosync_linux.go) unless plain was asked for or the kernel refuses
// it, else by fdatasync. Only the log's writer syncs and closes; byAIO
// may be asked from any goroutine, hence the atomic pointer.
type syncer struct{ aio atomic.Pointer[aioSyncer] }

// init makes s use AIO where the kernel sets it up (an old kernel or a
// seccomp filter may refuse; fdatasync then).
func (s *syncer) init(plain bool) {
	if plain {
		return
	}
	if aio, err := newAIOSyncer(); err == nil {
		s.aio.Store(aio)
	}
}

func (s *syncer) byAIO() bool { return s.aio.Load() != nil }

// datasync makes f's data durable. A kernel or file system that refuses
// an AIO sync (errNoAIOSync: nothing was submitted) gets fdatasync, then
// and from then on; a submit not taken this time (errAIOBusy), this once.
func (s *syncer) datasync(f *os.File) error {
	if aio := s.aio.Load(); aio != nil {
		err := aio.datasync(f)
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
	if aio := s.aio.Swap(nil); aio != nil {
		aio.close()
	}
}
