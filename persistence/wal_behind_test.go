package persistence_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/veilhq/veil/persistence"
)

// After a crash leaves the log, a program that knows no log (a build
// from before it, a tool) may open the data file and write. The log's
// records are then behind those writes: replaying them would take
// records back to what the log says, undoing acknowledged writes. The
// open refuses with ErrLogBehind, changes nothing and says what to do;
// with the log moved aside, the file opens as that program left it.
// What does not write (a read-only look), or a build with the log from
// before logTxKey, leaves the replay as it was.
func TestLogBehindAnotherWriterIsNotReplayed(t *testing.T) {
	// rawUpdate opens the data file as a program without the log would.
	rawUpdate := func(t *testing.T, path string, f func(*bolt.Tx) error) {
		t.Helper()
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(f); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("written without the log", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "veil.db")
		s, _ := walScenario(t, path)
		if err := s.Abandon(); err != nil {
			t.Fatal(err)
		}
		// bbolt holds t2/x (version 1, "y"); the log puts, deletes and
		// puts it again. The earlier build deletes it.
		rawUpdate(t, path, func(tx *bolt.Tx) error { return tx.Bucket([]byte("t2")).Delete([]byte("x")) })
		segsBefore := walSegments(t, path)

		for range 2 { // a refusal changes nothing, so it refuses again
			_, err := persistence.OpenBolt(path, persistence.BoltOptions{})
			if !errors.Is(err, persistence.ErrLogBehind) || !strings.Contains(err.Error(), "move the directory "+persistence.LogDir(path)+" aside") {
				t.Fatalf("open of a file written behind its log: %v; want ErrLogBehind saying to move the log aside", err)
			}
		}
		// Nor does a store opened without the log replay it, nor the
		// offline backup's copy.
		if _, err := persistence.OpenBolt(path, persistence.BoltOptions{NoLog: true}); !errors.Is(err, persistence.ErrLogBehind) {
			t.Fatalf("NoLog open of a file written behind its log: %v; want ErrLogBehind", err)
		}
		if segs := walSegments(t, path); len(segs) != len(segsBefore) {
			t.Fatalf("the refused opens changed the log: %v, before %v", segs, segsBefore)
		}

		aside := persistence.LogDir(path) + ".aside"
		if err := os.Rename(persistence.LogDir(path), aside); err != nil {
			t.Fatal(err)
		}
		s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if r, err := s.Get(t.Context(), "t2", "x"); !errors.Is(err, persistence.ErrNotFound) {
			t.Fatalf("t2/x = %+v, %v; want the earlier build's delete to stand", r, err)
		}
		// The log's prefix deletion never reached the file.
		if r, err := s.Get(t.Context(), "t1", "a2"); err != nil || string(r.Value) != "2" {
			t.Fatalf("t1/a2 = %+v, %v; want the file's record, as the log left it unapplied", r, err)
		}
	})

	t.Run("only read", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "veil.db")
		s, m := walScenario(t, path)
		if err := s.Abandon(); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.View(func(tx *bolt.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s, err = persistence.OpenBolt(path, persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkAll(t, s, m, walTables, walKeys)
	})

	t.Run("a build with the log from before the check", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "veil.db")
		s, m := walScenario(t, path)
		if err := s.Abandon(); err != nil {
			t.Fatal(err)
		}
		// Such a build keeps no transaction record: its files replay as
		// before.
		rawUpdate(t, path, func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(persistence.LogMetaBucket)).Delete(persistence.LogTxKey)
		})
		s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkAll(t, s, m, walTables, walKeys)
	})
}
