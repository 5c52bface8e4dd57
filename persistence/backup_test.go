package persistence_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

func TestBoltBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "veil.db")
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Apply(ctx, persistence.Put("t", "k", []byte("v"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
	// Online: a copy while the store is open, which checks out and holds
	// the record.
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	copyPath := writeChecked(t, filepath.Join(dir, "copy.db"), buf.Bytes())
	// The open store's file is locked for a second process.
	if _, err := persistence.CopyBoltFile(path, &bytes.Buffer{}, 100*time.Millisecond); !errors.Is(err, persistence.ErrLocked) {
		t.Fatalf("copy of a held file: %v", err)
	}
	_ = s.Close()
	// Offline: the file itself.
	buf.Reset()
	if _, err := persistence.CopyBoltFile(path, &buf, time.Second); err != nil || buf.Len() == 0 {
		t.Fatalf("offline copy: %d %v", buf.Len(), err)
	}
	c, err := persistence.OpenBolt(copyPath, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rec, err := c.Get(ctx, "t", "k"); err != nil || string(rec.Value) != "v" {
		t.Fatalf("record in the copy: %+v %v", rec, err)
	}
	// Junk is not a database.
	junk := filepath.Join(dir, "junk.db")
	_ = os.WriteFile(junk, bytes.Repeat([]byte("junk"), 4096), 0o600)
	if err := persistence.CheckBoltFile(junk, time.Second); !errors.Is(err, persistence.ErrCorrupt) {
		t.Fatalf("junk: %v", err)
	}
}

// writeChecked writes a copy of a data file to path and checks every page
// of it (CheckBoltFile), as veild backup does; it returns path.
func writeChecked(t *testing.T, path string, raw []byte) string {
	t.Helper()
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := persistence.CheckBoltFile(path, time.Second); err != nil {
		t.Fatal(err)
	}
	return path
}
