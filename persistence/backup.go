package persistence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// WriteTo writes a consistent copy of the whole database to w while the
// store keeps serving: one read transaction (bbolt's Tx.WriteTo) sees the
// state of the last commit before it began, and writers go on meanwhile.
// It implements io.WriterTo.
func (s *Bolt) WriteTo(w io.Writer) (int64, error) {
	if err := s.c.Enter(context.Background()); err != nil {
		return 0, err
	}
	defer s.c.Leave()
	// The copy is of bbolt: first let it hold every write acknowledged
	// so far (the write-ahead log is not copied).
	if err := s.WaitApplied(); err != nil {
		return 0, err
	}
	var n int64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// CopyBoltFile writes a consistent copy of the bbolt file at path to w.
// Use it when no server runs: it takes the file's lock, so it fails with
// ErrLocked after lockTimeout while a veild holds it. A write-ahead log
// left by a process that did not close the file (a crash) is replayed into
// it first, as the next start would.
func CopyBoltFile(path string, w io.Writer, lockTimeout time.Duration) (int64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, err
	}
	if _, err := os.Stat(LogDir(path)); err == nil {
		s, err := OpenBolt(path, BoltOptions{LockTimeout: lockTimeout})
		if err != nil {
			return 0, err
		}
		if err := s.Close(); err != nil {
			return 0, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return 0, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	var n int64
	err = db.View(func(tx *bolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// CheckBoltFile opens the bbolt file at path read-only and checks every
// page (bbolt's Tx.Check): what a backup or a file to restore must pass.
func CheckBoltFile(path string, lockTimeout time.Duration) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return fmt.Errorf("%s: %w: %v", path, ErrCorrupt, err)
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		var errs []error
		for err := range tx.Check() { // drained: the checker's goroutine ends
			if len(errs) < 10 {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%s: %w: %w", path, ErrCorrupt, errors.Join(errs...))
		}
		return nil
	})
}
