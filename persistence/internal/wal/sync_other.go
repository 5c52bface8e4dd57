//go:build !linux

package wal

import "os"

// fdatasync falls back to fsync where the system has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

// syncer makes a segment's records durable: fsync, there being no Linux
// AIO here.
type syncer struct{}

func (*syncer) init(plain bool) {}

func (*syncer) byAIO() bool { return false }

func (*syncer) datasync(f *os.File) error { return fdatasync(f) }

func (*syncer) close() {}
