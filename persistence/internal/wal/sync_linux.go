package wal

import (
	"os"
	"syscall"
)

// fdatasync makes the file's data durable without its timestamps.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
