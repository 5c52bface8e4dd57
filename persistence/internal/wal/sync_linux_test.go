package wal

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// On Linux the log syncs its records through AIO unless told not to, and
// every record it answered is there to replay.
func TestLogSyncsByAIO(t *testing.T) {
	var id ID
	id[0] = 7
	for _, plain := range []bool{false, true} {
		dir := t.TempDir()
		l, err := Create(dir, id, 1, Options{SegmentSize: 64 << 10, PlainSync: plain})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.SyncsByAIO(); got == plain {
			t.Fatalf("PlainSync %v: SyncsByAIO() = %v (is AIO refused here? newAIOSyncer says %v)", plain, got, aioProbe())
		}
		const n = 3000 // several segments, so rotations sync through it too
		for i := range n {
			if _, err := l.Write(make([]byte, 100+i%50)); err != nil {
				t.Fatal(err)
			}
		}
		if got := l.SyncsByAIO(); got == plain {
			t.Fatalf("PlainSync %v: after %d writes SyncsByAIO() = %v", plain, n, got)
		}
		if l.Segments() < 2 {
			t.Fatalf("%d segments: the test meant to rotate", l.Segments())
		}
		if err := l.Close(false); err != nil {
			t.Fatal(err)
		}
		count := 0
		last, err := Replay(dir, id, 0, func(uint64, []byte) error { count++; return nil })
		if err != nil || last != n || count != n {
			t.Fatalf("PlainSync %v: replayed %d records, last %d, err %v; want %d", plain, count, last, err, n)
		}
	}
}

func aioProbe() error {
	s, err := newAIOSyncer()
	if err == nil {
		s.close()
	}
	return err
}

// aioSyncerForTest is a syncer on AIO, closed when the test ends; the
// test fails where the kernel refuses AIO, as it has nothing to check.
func aioSyncerForTest(t *testing.T) *syncer {
	t.Helper()
	s := new(syncer)
	s.init(false)
	t.Cleanup(s.close)
	if !s.byAIO() {
		t.Fatalf("no AIO here: %v", aioProbe())
	}
	return s
}

// tempFile is a new empty file, closed when the test ends.
func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// A file the kernel cannot sync by AIO (a pipe has no fsync) makes the
// syncer fall back to fdatasync, for good, and answer fdatasync's error;
// a file it can sync then syncs without AIO.
func TestSyncerFallsBackWhereAIOIsRefused(t *testing.T) {
	s := aioSyncerForTest(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	err = s.datasync(w)
	if !errors.Is(err, syscall.EINVAL) || errors.Is(err, errNoAIOSync) {
		t.Fatalf("sync of a pipe: %v, want fdatasync's EINVAL", err)
	}
	if s.byAIO() {
		t.Fatal("still syncing by AIO after the kernel refused it")
	}
	f := tempFile(t)
	if _, err := f.WriteString("x"); err != nil {
		t.Fatal(err)
	}
	if err := s.datasync(f); err != nil {
		t.Fatalf("fdatasync after the fallback: %v", err)
	}
}

// An AIO sync's own failure is the caller's error, not a reason to fall
// back: a closed file is refused before anything is submitted.
func TestAIOSyncOfAClosedFileFails(t *testing.T) {
	s := aioSyncerForTest(t)
	f := tempFile(t)
	f.Close()
	if err := s.datasync(f); err == nil || errors.Is(err, errNoAIOSync) {
		t.Fatalf("sync of a closed file: %v, want the closed file's error", err)
	}
	if !s.byAIO() {
		t.Fatal("fell back from AIO on the caller's error")
	}
}

// A submit the kernel does not take this time (EAGAIN, EINTR) is synced
// with fdatasync once, and the next goes through AIO again.
func TestAIOSubmitNotTakenSyncsOnceWithFdatasync(t *testing.T) {
	s := aioSyncerForTest(t)
	f := tempFile(t)
	real := ioSubmit
	defer func() { ioSubmit = real }()
	for _, refusal := range []syscall.Errno{syscall.EAGAIN, syscall.EINTR} {
		submits := 0
		ioSubmit = func(ctx uintptr, cb *iocb) syscall.Errno {
			submits++
			if submits == 1 {
				return refusal
			}
			return real(ctx, cb)
		}
		for i := range 2 {
			if err := s.datasync(f); err != nil {
				t.Fatalf("%v, sync %d: %v", refusal, i+1, err)
			}
			if !s.byAIO() {
				t.Fatalf("%v, sync %d: AIO given up for a submit not taken once", refusal, i+1)
			}
		}
		if submits != 2 {
			t.Fatalf("%v: %d submits, want 2 (the refused one, then AIO again)", refusal, submits)
		}
	}
}
