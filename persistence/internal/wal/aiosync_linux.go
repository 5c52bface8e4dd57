package wal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// A log's fdatasync without holding a P. A goroutine in a plain
// fdatasync keeps its P until the runtime's sysmon takes it back (one
// tick of at least 20 µs, longer on a busy machine), so while the
// committer syncs, one P runs nothing: on one core, no handler runs and
// the next group stays small (docs/BENCHMARKS.md, "One P more than the
// CPUs"). Linux AIO's IOCB_CMD_FDSYNC (kernel 4.18 and later) runs the
// same vfs_fsync(file, datasync) in a kernel worker and signals an
// eventfd when done; the committer waits on that eventfd in the
// runtime's network poller, parked, its P free for handlers.

const (
	iocbCmdFdsync = 3      // IOCB_CMD_FDSYNC
	iocbFlagResfd = 1 << 0 // IOCB_FLAG_RESFD: signal aio_resfd on completion
	efdNonblock   = syscall.O_NONBLOCK
	efdCloexec    = syscall.O_CLOEXEC
)

// iocb is struct iocb of linux/aio_abi.h (64 bytes). A sync sets only
// the opcode, the file, the flags and the eventfd; the rest stays 0
// (aio_key and aio_rw_flags, which swap places on big-endian machines,
// among them).
type iocb struct {
	_      uint64 // aio_data
	_      uint32 // aio_key
	_      int32  // aio_rw_flags
	opcode uint16
	_      int16 // aio_reqprio
	fildes uint32
	_      [4]uint64 // aio_buf, aio_nbytes, aio_offset, aio_reserved2
	flags  uint32
	resfd  uint32
}

// ioEvent is struct io_event (32 bytes): res is the sync's result.
type ioEvent struct {
	_   [2]uint64 // data, obj
	res int64
	_   int64 // res2
}

// A size other than the kernel's fails the build.
var (
	_ [64]byte = [unsafe.Sizeof(iocb{})]byte{}
	_ [32]byte = [unsafe.Sizeof(ioEvent{})]byte{}
)

// aioSyncer syncs through one AIO context and one eventfd.
type aioSyncer struct {
	ctx uintptr  // aio_context_t
	efd *os.File // the eventfd, non-blocking: reads park in the poller
	// resfd is efd's descriptor, kept apart: File.Fd may make a
	// descriptor blocking, and a blocking read would hold the P again.
	resfd uint32
	cb    iocb
	ev    ioEvent
	buf   [8]byte
}

// newAIOSyncer sets up an AIO context and its eventfd, or answers why it
// cannot (an old kernel, a seccomp filter).
func newAIOSyncer() (*aioSyncer, error) {
	var ctx uintptr
	if _, _, e := syscall.Syscall(syscall.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); e != 0 {
		return nil, fmt.Errorf("io_setup: %w", e)
	}
	fd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, efdNonblock|efdCloexec, 0)
	if e != 0 {
		syscall.Syscall(syscall.SYS_IO_DESTROY, ctx, 0, 0)
		return nil, fmt.Errorf("eventfd2: %w", e)
	}
	return &aioSyncer{ctx: ctx, efd: os.NewFile(fd, "wal-aio-eventfd"), resfd: uint32(fd)}, nil
}

// errNoAIOSync is a file system or kernel that refuses IOCB_CMD_FDSYNC.
var errNoAIOSync = errors.New("AIO fdatasync refused")

// errAIOBusy is a submit the kernel could not take this time (EAGAIN:
// no room; EINTR): nothing was submitted, and the caller syncs this one
// with fdatasync rather than fail the log over it.
var errAIOBusy = errors.New("AIO fdatasync not taken this time")

// datasync makes f's data durable: one IOCB_CMD_FDSYNC, waited for on the
// eventfd. errNoAIOSync and errAIOBusy mean nothing was submitted: sync
// with fdatasync (from now on, and this once).
func (s *aioSyncer) datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var submitErr syscall.Errno
	err = rc.Control(func(fd uintptr) {
		s.cb = iocb{opcode: iocbCmdFdsync, fildes: uint32(fd), flags: iocbFlagResfd, resfd: s.resfd}
		submitErr = ioSubmit(s.ctx, &s.cb)
	})
	if err != nil {
		return err
	}
	switch submitErr {
	case 0:
	case syscall.EINVAL, syscall.ENOSYS, syscall.EPERM, syscall.EOPNOTSUPP:
		return fmt.Errorf("%w: io_submit: %w", errNoAIOSync, submitErr)
	case syscall.EAGAIN, syscall.EINTR:
		return fmt.Errorf("%w: io_submit: %w", errAIOBusy, submitErr)
	default:
		return fmt.Errorf("io_submit: %w", submitErr)
	}
	// The eventfd counts completions; the one sync in flight is ours.
	if _, err := s.efd.Read(s.buf[:]); err != nil {
		return fmt.Errorf("wait for AIO fdatasync: %w", err)
	}
	// The kernel puts the event in the ring before it signals the
	// eventfd, so this returns at once; a signal may still interrupt it.
	var n uintptr
	e := syscall.EINTR
	for e == syscall.EINTR {
		n, _, e = syscall.Syscall6(syscall.SYS_IO_GETEVENTS, s.ctx, 1, 1, uintptr(unsafe.Pointer(&s.ev)), 0, 0)
	}
	if e != 0 {
		return fmt.Errorf("io_getevents: %w", e)
	}
	if n != 1 {
		return fmt.Errorf("io_getevents: %d events", n)
	}
	if s.ev.res < 0 {
		return syscall.Errno(-s.ev.res)
	}
	return nil
}

// ioSubmit submits one iocb. A variable, so that a test can play a
// kernel that answers otherwise.
var ioSubmit = func(ctx uintptr, cb *iocb) syscall.Errno {
	_, _, e := syscall.Syscall(syscall.SYS_IO_SUBMIT, ctx, 1, uintptr(unsafe.Pointer(&cb)))
	return e
}

func (s *aioSyncer) close() {
	syscall.Syscall(syscall.SYS_IO_DESTROY, s.ctx, 0, 0)
	s.efd.Close()
}
