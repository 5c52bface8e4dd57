package persistence_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

// walHeaderLen is a log segment's header (magic and log id): the size
// of a segment that holds no record.
const walHeaderLen = 8 + 16

var (
	walTables = []string{"t1", "t2", "t3"}
	walKeys   = []string{"a1", "a2", "a3", "ab", "b1", "k", "new", "x"}
)

// walScenario writes records into bbolt at path (a store closed
// cleanly), then opens it with the applier held and writes over them
// through the log only: overwrites, deletes and prefix deletions of
// records bbolt holds, a key re-created, batches that conflict. It
// returns the store, still held, and what it must hold.
func walScenario(t *testing.T, path string) (*persistence.Bolt, model) {
	t.Helper()
	m := model{}
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	P, D, any := persistence.Put, persistence.Delete, persistence.Any()
	applyBoth(t, s, m, P("t1", "a1", []byte("1"), any), P("t1", "a2", []byte("2"), any), P("t1", "b1", []byte("3"), any))
	applyBoth(t, s, m, P("t1", "a1", []byte("1b"), any), P("t1", "a1", []byte("1c"), any))
	applyBoth(t, s, m, P("t2", "a1", []byte("x"), any), P("t2", "x", []byte("y"), any), P("t2", "ab", []byte("z"), any))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(persistence.LogDir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cleanly closed store left its log: %v", err)
	}

	s, _, err = persistence.OpenBoltHeld(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	steps := [][]persistence.Op{
		{P("t1", "a1", []byte("1d"), persistence.AtVersion(3))},
		{D("t1", "b1", persistence.AtVersion(1))},
		{persistence.DeletePrefix("t1", "a")},
		{P("t1", "a3", []byte("after the prefix"), persistence.Absent())},
		{P("t2", "x", []byte("y2"), any)},
		{D("t2", "x", any)},
		{P("t2", "x", []byte("again"), persistence.Absent())},
		{P("t2", "a1", nil, persistence.Absent())}, // conflict
		{P("t1", "new", []byte("no"), persistence.Absent()), persistence.Check("t1", "a2", persistence.AtVersion(1))}, // conflict: a2 is gone
		{P("t3", "k", []byte{}, persistence.Absent())},
		{persistence.DeletePrefix("t2", "a"), P("t2", "ab", []byte("back"), persistence.Absent())},
		{P("t3", "k", []byte("v2"), persistence.AtVersion(1)), persistence.Check("t2", "ab", persistence.AtVersion(1))},
	}
	for _, ops := range steps {
		_ = applyBoth(t, s, m, ops...)
	}
	if s.PendingGroups() == 0 {
		t.Fatal("the held store applied its writes")
	}
	checkAll(t, s, m, walTables, walKeys)
	return s, m
}

// walSegments lists the log's files and their sizes.
func walSegments(t *testing.T, path string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(persistence.LogDir(path))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = fi.Size()
	}
	return out
}

// A crash (Abandon: the applier stops, nothing more reaches bbolt) keeps
// every acknowledged write: the next open replays the log, leaves a
// fresh empty segment, and replaying again changes nothing.
func TestAbandonedLogIsReplayed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "veil.db")
	s, m := walScenario(t, path)
	if err := s.Abandon(); err != nil {
		t.Fatal(err)
	}
	var logged int64
	for _, size := range walSegments(t, path) {
		logged += size - walHeaderLen
	}
	if logged == 0 {
		t.Fatal("the abandoned store left no logged record")
	}
	for round := range 3 {
		s, err := persistence.OpenBoltControlled(path, persistence.BoltOptions{})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		checkAll(t, s, m, walTables, walKeys)
		segs := walSegments(t, path)
		if len(segs) != 1 {
			t.Fatalf("round %d: log holds %v after the replay, want one fresh segment", round, segs)
		}
		for name, size := range segs {
			if size != walHeaderLen {
				t.Fatalf("round %d: fresh segment %s of %d bytes, want %d", round, name, size, walHeaderLen)
			}
		}
		if round == 1 {
			// Versions go on from the replayed ones.
			applyBoth(t, s, m, persistence.Put("t1", "a3", []byte("v2"), persistence.AtVersion(1)))
			applyBoth(t, s, m, persistence.Put("t2", "x", []byte("v2"), persistence.AtVersion(1)), persistence.Delete("t3", "k", persistence.AtVersion(2)))
		}
		if err := s.Abandon(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, s, m, walTables, walKeys)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(persistence.LogDir(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Close left the log: %v", err)
	}
}

// A store opened without the log (NoLog, veild --store-log=false) after
// a crash replays the log left behind and removes it: its writes are
// there, and a later open with the log has nothing to replay over them.
func TestNoLogOpenReplaysALeftoverLog(t *testing.T) {
	for _, opts := range []persistence.BoltOptions{{NoLog: true}, {NoGroupCommit: true}} {
		path := filepath.Join(t.TempDir(), "veil.db")
		s, m := walScenario(t, path)
		if err := s.Abandon(); err != nil {
			t.Fatal(err)
		}
		n, err := persistence.OpenBolt(path, opts)
		if err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		if _, err := os.Stat(persistence.LogDir(path)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%+v: the replayed log is still there: %v", opts, err)
		}
		checkAll(t, n, m, walTables, walKeys)
		// Written without the log, then opened with it: nothing older
		// comes back over it.
		applyBoth(t, n, m, persistence.Delete("t3", "k", persistence.Any()))
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		l, err := persistence.OpenBolt(path, persistence.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkAll(t, l, m, walTables, walKeys)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// CopyBoltFile of a data file a crash left with a log copies every
// acknowledged write, the logged ones included.
func TestCopyBoltFileReplaysLeftoverLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "veil.db")
	s, m := walScenario(t, path)
	if err := s.Abandon(); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := persistence.CopyBoltFile(path, &buf, time.Second); err != nil {
		t.Fatal(err)
	}
	copyPath := writeChecked(t, filepath.Join(dir, "copy.db"), buf.Bytes())
	c, err := persistence.OpenBolt(copyPath, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	checkAll(t, c, m, walTables, walKeys)
	// The original holds them too.
	s, err = persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkAll(t, s, m, walTables, walKeys)
}

// An applier that fails (here on every transaction) does not fail the
// writes, which are durable in the log, until the backpressure limit;
// then the writes fail with its error, Close reports it naming the log,
// and the next open applies every acknowledged write.
func TestApplierFailureSurfaces(t *testing.T) {
	const limit = 16
	defer persistence.SetApplyLimits(0, limit)()
	path := filepath.Join(t.TempDir(), "veil.db")
	injected := errors.New("the disk is gone")
	var hits atomic.Int64
	s, err := persistence.OpenBolt(path, persistence.BoltOptions{Failpoint: func(name string) error {
		if name == persistence.FailApplyBeforeCommit {
			hits.Add(1)
			return injected
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := model{}
	var keys []string
	for i := range limit {
		key := fmt.Sprintf("k%02d", i)
		keys = append(keys, key)
		applyBoth(t, s, m, persistence.Put("t", key, []byte(key), persistence.Absent()))
	}
	keys = append(keys, "k16")
	checkAll(t, s, m, []string{"t"}, keys)
	for range 2 {
		_, err := s.Apply(ctx, persistence.Put("t", "k16", []byte("k16"), persistence.Absent()))
		if !errors.Is(err, injected) {
			t.Fatalf("write past the backpressure limit = %v, want the applier's error", err)
		}
	}
	if hits.Load() == 0 {
		t.Fatal("the applier never reached its failpoint")
	}
	checkAll(t, s, m, []string{"t"}, keys)
	err = s.Close()
	if !errors.Is(err, injected) || !strings.Contains(err.Error(), persistence.LogDir(path)) {
		t.Fatalf("Close = %v, want the applier's error naming %s", err, persistence.LogDir(path))
	}
	s, err = persistence.OpenBolt(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkAll(t, s, m, []string{"t"}, keys)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A List whose bbolt transaction began before the applier wrote and
// dropped a group still sees the group: the read begins again rather than
// miss it in both places (beginView).
func TestListAcrossAnApplierPass(t *testing.T) {
	s, st, err := persistence.OpenBoltStepped(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		st.Free()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	// Free pages first, so that the pass below needs no larger mmap: bbolt
	// would wait for the List's open transaction to remap. Pages a
	// transaction frees are reused once a later one has committed.
	for i := range 64 {
		if _, err := s.Apply(ctx, persistence.Put("t", fmt.Sprintf("fill%02d", i), make([]byte, 8<<10), persistence.Absent())); err != nil {
			t.Fatal(err)
		}
	}
	for st.Step() > 0 {
	}
	for _, op := range []persistence.Op{persistence.DeletePrefix("t", "fill"), persistence.Put("t", "x", nil, persistence.Absent())} {
		if _, err := s.Apply(ctx, op); err != nil {
			t.Fatal(err)
		}
		for st.Step() > 0 {
		}
	}
	if _, err := s.Apply(ctx, persistence.Put("t", "k", []byte("v"), persistence.Absent())); err != nil {
		t.Fatal(err)
	}
	applied := 0
	st.BetweenViewBeginAndLock(func() { applied = st.Step() })
	recs, err := s.List(ctx, "t", persistence.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if applied != 1 {
		t.Fatalf("the applier applied %d groups between the List's transaction and its lock, want 1", applied)
	}
	if len(recs) != 2 || recs[0].Key != "k" || string(recs[0].Value) != "v" {
		t.Fatalf("List = %+v, want k=v and x", recs)
	}
}

// A damaged record that is not the torn tail (records follow it) keeps
// the store from opening, with an error that says what to do, rather than
// opening without the acknowledged writes from it on.
func TestDamagedLogRefusesToOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "veil.db")
	s, _, err := persistence.OpenBoltHeld(path, persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Apply(t.Context(), persistence.Put("t", fmt.Sprintf("k%d", i), []byte("value"), persistence.Absent())); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Abandon(); err != nil {
		t.Fatal(err)
	}
	segs := walSegments(t, path)
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	for name := range segs {
		seg := filepath.Join(persistence.LogDir(path), name)
		data, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		data[walHeaderLen+20] ^= 0x40 // in the first record's payload
		if err := os.WriteFile(seg, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, err = persistence.OpenBolt(path, persistence.BoltOptions{})
	if err == nil || !strings.Contains(err.Error(), "write-ahead log is damaged") || !strings.Contains(err.Error(), "restore the latest backup") {
		t.Fatalf("open over a damaged log: %v", err)
	}
}
