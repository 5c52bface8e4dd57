package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/veilhq/veil/persistence/internal/groupcommit"
	keyprefix "github.com/veilhq/veil/persistence/internal/prefix"
	"github.com/veilhq/veil/persistence/internal/wal"
)

// Errors OpenBolt wraps so that veild can tell an operator what to do
// without importing bbolt.
var (
	// ErrLocked reports that another process holds the data file.
	ErrLocked = errors.New("locked by another process (is another veild running?)")
	// ErrCorrupt reports a data file that bbolt cannot read.
	ErrCorrupt = errors.New("corrupt or not a bbolt data file")
)

// BoltOptions tunes OpenBolt. The zero value is the production setting.
type BoltOptions struct {
	// NoGroupCommit gives every Apply its own transaction and fsync. It
	// exists to measure what group commit buys; do not use it in production.
	// It implies NoLog.
	NoGroupCommit bool
	// NoLog commits every group to bbolt itself, as before the write-ahead
	// log (bolt_log.go): the baseline the log is measured against.
	NoLog bool
	// PlainSync makes the log's records durable with fdatasync on the
	// committer's goroutine rather than with Linux AIO, which parks the
	// committer while the disk syncs and leaves its P to the handlers
	// (internal/wal, sync_linux.go; docs/BENCHMARKS.md, "The log's sync
	// without a P"). It is the baseline AIO is measured against, and a way
	// out on a system that mishandles AIO. Without Linux AIO the log uses
	// fdatasync anyway.
	PlainSync bool
	// ObserveApply, when set, is called after the applier writes logged
	// groups into bbolt, with how many and how long its transaction took.
	ObserveApply func(groups int, took time.Duration)
	// ApplyDelay is the least time between the starts of two of the
	// applier's bbolt transactions (default DefaultApplyDelay; negative:
	// none): the logged groups that arrive meanwhile wait and go into the
	// next one, and after a quiet spell the first group goes at once.
	// Groups that share a transaction share its rewritten branch and leaf
	// pages and its two fsyncs, so fewer, larger transactions cost less
	// CPU and disk per write. Every write is already durable in the log
	// and visible to reads, so the delay costs only the memory of what
	// waits. The applier does not wait while a caller needs bbolt to hold
	// every write (WaitApplied: a backup, a benchmark), while the
	// committer waits for room, past applyHurryBytes, or on Close.
	ApplyDelay time.Duration
	// MaxGroup caps how many Apply batches share one commit (default 1024).
	// The cap bounds the size of a transaction, hence its memory and the
	// time the next group waits.
	MaxGroup int
	// MaxGroupBytes caps the value bytes of one group (default 32 MiB), as
	// the PostgreSQL store's does: a group is one record of the
	// write-ahead log and one bbolt transaction, both held in memory. A
	// batch larger than the cap gets a group of its own.
	MaxGroupBytes int
	// LockTimeout is how long Open waits for another process to release the
	// file (default 1s). Waiting forever would hang a second veild silently.
	LockTimeout time.Duration
	// Observe, when set, is called after every commit with the number of
	// Apply batches it held and how long the transaction took (fsync
	// included). It runs on the committer goroutine after callers have been
	// answered, but the next group waits for it: keep it cheap (a metric
	// update). With NoGroupCommit it runs on each caller's goroutine,
	// concurrently. It is the hook for store metrics, so that this package
	// does not import Prometheus.
	Observe func(batchSize int, commit time.Duration)
	// Failpoint, when set, is called by the committer at FailBeforeCommit
	// and FailAfterCommit (internal/failpoint). An error it returns fails
	// the group there, as a crash would: before the commit nothing is
	// written; after it the writes are durable but every caller of the
	// group gets the error, not its answer. The robustness test's hook ends
	// the process instead. nil in production. The type is
	// internal/failpoint's Hook, spelled out: persistence imports nothing
	// of ours (internal/layering).
	Failpoint func(name string) error
}

// Hit calls the failpoint hook f, when set, at name (see
// BoltOptions.Failpoint).
func Hit(f func(name string) error, name string) error {
	if f == nil {
		return nil
	}
	return f(name)
}

// Failpoints of the group commit, passed to BoltOptions.Failpoint.
const (
	// FailBeforeCommit: every batch of a group is written into the shared
	// transaction, nothing is on disk and no caller has an answer. A crash
	// here must lose the whole group and nothing acknowledged.
	FailBeforeCommit = "commit.before-commit"
	// FailAfterCommit: the group is committed and fsynced, no caller has
	// its answer yet. A crash here leaves durable writes that nobody
	// acknowledged, which a caller's retry must cope with.
	FailAfterCommit = "commit.after-commit"
)

const (
	defaultMaxGroup = 1024
	defaultMaxBytes = 32 << 20
	// DefaultApplyDelay is BoltOptions.ApplyDelay's default, chosen by
	// measurement (docs/BENCHMARKS.md, "The applier's delay"): against no
	// delay, bbolt writes 42-62% fewer pages per chat and chat serves 17-34%
	// more per second on two cores.
	DefaultApplyDelay  = 100 * time.Millisecond
	defaultLockTimeout = time.Second
	// versionLen is the size of the big-endian version that prefixes every
	// stored value.
	versionLen = 8
)

// Bolt is the embedded Store: one bbolt file, one bucket per table. It is
// safe for concurrent use.
type Bolt struct {
	db   *bolt.DB
	path string
	opts BoltOptions

	// c admits calls until Close and group-commits Apply's batches.
	c *groupcommit.Queue[batch]

	hooks testHooks

	watches watches // records whose version is kept in memory (bolt_watch.go)

	// The write-ahead log, unless NoLog (bolt_log.go): the committer
	// appends to log, the applier (bolt_apply.go) writes into bbolt behind
	// it, and pending holds what it has not yet written. nil without it.
	log     *wal.Log
	logID   wal.ID
	pending *pending
	apply   *applier
	logBuf  []byte // the committer's encoding buffer
}

// testHooks lets the package's own tests observe and steer the committer
// deterministically instead of sleeping. All nil in production.
type testHooks struct {
	enqueued func()                   // a batch joined the queue
	taken    func(group int)          // the committer took a group, before its transaction
	observe  func(int, time.Duration) // called like Observe
	// viewBegun is called by beginView between its bbolt transaction's
	// beginning and its taking pending's lock.
	viewBegun func()
	// applyTaken is called before the applier looks for groups to apply;
	// false stops the applier there, applying nothing more (a simulated
	// crash: export_test.go's Abandon).
	applyTaken func() bool
}

// OpenBolt opens (or creates) the data file at path. It fails within
// LockTimeout when another process holds the file, and with an error naming
// the file when the file is not a readable bbolt database.
func OpenBolt(path string, opts BoltOptions) (*Bolt, error) {
	return openBolt(path, opts, testHooks{})
}

// ApplyDelaySetting is the BoltOptions.ApplyDelay for a delay given as a
// setting (veild's --store-apply-delay, a benchmark's environment), where
// 0 means none: in BoltOptions 0 is the default and a negative delay none.
func ApplyDelaySetting(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func openBolt(path string, opts BoltOptions, hooks testHooks) (s *Bolt, err error) {
	if opts.MaxGroup <= 0 {
		opts.MaxGroup = defaultMaxGroup
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = defaultLockTimeout
	}
	if opts.MaxGroupBytes <= 0 {
		opts.MaxGroupBytes = defaultMaxBytes
	}
	switch {
	case opts.ApplyDelay == 0:
		opts.ApplyDelay = DefaultApplyDelay
	case opts.ApplyDelay < 0:
		opts.ApplyDelay = 0
	}
	// bbolt trusts the file's meta pages; a file that passes their checksum
	// but is otherwise damaged can make it panic, or fault on a page the
	// mmap maps past the end of a truncated file. Report both as a corrupt
	// file rather than crash veild at start: SetPanicOnFault turns the fault
	// into a panic, which recover turns into an error.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("open data file %s: %w: %v", path, ErrCorrupt, r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: opts.LockTimeout,
		// NoSync stays false: an acknowledged write must survive power loss.
		// The map freelist keeps commits fast once the file has many free
		// pages; it is what etcd runs.
		FreelistType: bolt.FreelistMapType,
	})
	if err != nil {
		switch {
		case errors.Is(err, bolterrors.ErrTimeout):
			return nil, fmt.Errorf("open data file %s: %w", path, ErrLocked)
		case errors.Is(err, bolterrors.ErrInvalid),
			errors.Is(err, bolterrors.ErrChecksum),
			errors.Is(err, bolterrors.ErrVersionMismatch):
			return nil, fmt.Errorf("open data file %s: %w: %w", path, ErrCorrupt, err)
		default:
			return nil, fmt.Errorf("open data file %s: %w", path, err)
		}
	}
	if err := checkSize(db, path); err != nil {
		db.Close()
		return nil, err
	}
	s = &Bolt{db: db, path: path, opts: opts, hooks: hooks}
	if !opts.NoLog && !opts.NoGroupCommit {
		log, meta, err := openLog(db, LogDir(path), wal.Options{PlainSync: opts.PlainSync})
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("open data file %s: %w", path, err)
		}
		s.log, s.logID, s.pending = log, meta.id, newPending()
		s.startApplier(meta.applied)
	} else if err := replayLeftoverLog(db, LogDir(path)); err != nil {
		db.Close()
		return nil, fmt.Errorf("open data file %s: %w", path, err)
	}
	s.c = groupcommit.Start(groupcommit.Config[batch]{
		Direct: opts.NoGroupCommit, MaxGroup: opts.MaxGroup, MaxBytes: opts.MaxGroupBytes,
		Commit: s.commitGroup, Enqueued: hooks.enqueued,
	})
	return s, nil
}

// checkSize rejects a file shorter than the pages its meta page claims: a
// truncated file (a bad copy, a full disk during a restore) would otherwise
// open and then kill veild with SIGBUS on the first read past the end.
func checkSize(db *bolt.DB, path string) error {
	return db.View(func(tx *bolt.Tx) error {
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("open data file %s: %w", path, err)
		}
		if fi.Size() < tx.Size() {
			return fmt.Errorf("open data file %s: %w: %d bytes, but its pages reach byte %d (truncated?)", path, ErrCorrupt, fi.Size(), tx.Size())
		}
		return nil
	})
}

// LogDir is where the write-ahead log of the data file at path lives.
func LogDir(path string) string { return path + ".wal" }

// Path returns the data file's path.
func (s *Bolt) Path() string { return s.path }

// Close rejects new calls with ErrClosed, waits for the calls already
// admitted (their batches commit normally), stops the committer and closes
// the file. Closing twice is a no-op.
func (s *Bolt) Close() error {
	if !s.c.Close() {
		return nil
	}
	if s.log != nil {
		// Every admitted write is logged; apply them all, so that a
		// cleanly closed data file holds everything and needs no log.
		err := s.stopApplier()
		if cerr := s.log.Close(err == nil); err == nil {
			err = cerr
		}
		if err != nil {
			s.db.Close()
			return fmt.Errorf("close data file %s (its write-ahead log %s keeps what is not applied; the next open replays it): %w", s.path, LogDir(s.path), err)
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close data file %s: %w", s.path, err)
	}
	return nil
}

// Get implements Store.
func (s *Bolt) Get(ctx context.Context, table, key string) (Record, error) {
	if err := ValidateGet(table, key); err != nil {
		return Record{}, err
	}
	if err := s.c.Enter(ctx); err != nil {
		return Record{}, err
	}
	defer s.c.Leave()
	// The pending writes first: one the applier drops meanwhile is in
	// bbolt before the read below begins.
	if s.pending != nil {
		if raw, decided := s.pending.get(table, key); decided {
			if raw == nil {
				return Record{}, fmt.Errorf("%w: %s/%q", ErrNotFound, table, key)
			}
			return storedRecord(table, key, raw)
		}
	}
	var rec Record
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(table))
		if b == nil {
			return nil
		}
		raw := b.Get([]byte(key))
		if raw == nil {
			return nil
		}
		// raw points into the mmap, valid only inside the transaction.
		var err error
		rec, err = storedRecord(table, key, raw)
		return err
	})
	if err != nil {
		return Record{}, fmt.Errorf("persistence: get: %w", err)
	}
	if rec.Version == 0 {
		return Record{}, fmt.Errorf("%w: %s/%q", ErrNotFound, table, key)
	}
	return rec, nil
}

// storedRecord decodes a stored record into a Record the caller owns.
func storedRecord(table, key string, raw []byte) (Record, error) {
	v, val, err := decodeRecord(raw)
	if err != nil {
		return Record{}, fmt.Errorf("%s/%q: %w", table, key, err)
	}
	rec := Record{Key: key, Value: bytes.Clone(val), Version: v}
	if rec.Value == nil {
		rec.Value = []byte{}
	}
	return rec, nil
}

// listCtxEvery is how many records List reads between checks of its context.
const listCtxEvery = 256

// List implements Store.
func (s *Bolt) List(ctx context.Context, table string, q Query) ([]Record, error) {
	if err := ValidateList(table, q); err != nil {
		return nil, err
	}
	if err := s.c.Enter(ctx); err != nil {
		return nil, err
	}
	defer s.c.Leave()
	tx, snap, err := s.listTx(table, q)
	if err != nil {
		return nil, fmt.Errorf("persistence: list: %w", err)
	}
	defer tx.Rollback()
	out, err := listRange(ctx, tx, table, q, snap)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
			return nil, err
		}
		return nil, fmt.Errorf("persistence: list: %w", err)
	}
	return out, nil
}

// listTx begins a read transaction and, while writes wait for the
// applier, takes their state of q's range as of the same state
// (beginView).
func (s *Bolt) listTx(table string, q Query) (*bolt.Tx, pendingRange, error) {
	if s.pending == nil || s.pending.count.Load() == 0 {
		tx, err := s.db.Begin(false)
		return tx, pendingRange{}, err
	}
	tx, err := s.beginView()
	if err != nil {
		return nil, pendingRange{}, err
	}
	defer s.pending.mu.RUnlock()
	return tx, s.pending.snapshot(table, q), nil
}

// listRange walks q's range of table in tx, merged with the pending
// writes of snap: a key snap decides is answered from it (or skipped when
// deleted), and bbolt's records under a pending prefix deletion are
// skipped.
func listRange(ctx context.Context, tx *bolt.Tx, table string, q Query, snap pendingRange) ([]Record, error) {
	var out []Record
	full := func() bool { return q.Limit > 0 && len(out) >= q.Limit }
	emit := func(key string, raw []byte) error {
		if len(out)%listCtxEvery == listCtxEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		rec, err := storedRecord(table, key, raw)
		if err != nil {
			return err
		}
		out = append(out, rec)
		return nil
	}
	// before: pending key a comes before bbolt key b in the walk.
	before := func(a string, b []byte) bool {
		if q.Reverse {
			return a > string(b)
		}
		return a < string(b)
	}
	pend := snap.keys
	var c *bolt.Cursor
	var k, raw []byte
	prefix := []byte(q.Prefix)
	if b := tx.Bucket([]byte(table)); b != nil {
		c = b.Cursor()
		if q.Reverse {
			k, raw = seekReverse(c, prefix, []byte(q.After))
		} else {
			k, raw = seekForward(c, prefix, []byte(q.After))
		}
	}
	for !full() {
		inBolt := k != nil && bytes.HasPrefix(k, prefix)
		if len(pend) > 0 && (!inBolt || before(pend[0].key, k) || pend[0].key == string(k)) {
			if inBolt && pend[0].key == string(k) {
				k, raw = advance(c, q.Reverse) // the pending write decides
			}
			if pend[0].rec != nil {
				if err := emit(pend[0].key, pend[0].rec); err != nil {
					return nil, err
				}
			}
			pend = pend[1:]
			continue
		}
		if !inBolt {
			break
		}
		// raw nil is a nested bucket; Veil never makes them.
		if raw != nil && !snap.hides(k) {
			if err := emit(string(k), raw); err != nil {
				return nil, err
			}
		}
		k, raw = advance(c, q.Reverse)
	}
	return out, nil
}

// seekForward positions c on the first key >= prefix that is strictly after
// after (when after is set).
func seekForward(c *bolt.Cursor, prefix, after []byte) ([]byte, []byte) {
	if len(after) == 0 || bytes.Compare(after, prefix) < 0 {
		return c.Seek(prefix)
	}
	k, v := c.Seek(after)
	if k != nil && bytes.Equal(k, after) {
		return c.Next()
	}
	return k, v
}

// seekReverse positions c on the last key below the exclusive upper bound,
// which is the smaller of after (when set) and the first key past every key
// with prefix. The caller stops at the first key without prefix, which also
// covers a bound that falls below the prefix's range.
func seekReverse(c *bolt.Cursor, prefix, after []byte) ([]byte, []byte) {
	hi, bounded := keyprefix.End(prefix)
	if len(after) > 0 && (!bounded || bytes.Compare(after, hi) < 0) {
		hi, bounded = after, true
	}
	if !bounded {
		return c.Last()
	}
	if k, _ := c.Seek(hi); k == nil {
		return c.Last()
	}
	return c.Prev()
}

func advance(c *bolt.Cursor, reverse bool) ([]byte, []byte) {
	if reverse {
		return c.Prev()
	}
	return c.Next()
}

func encodeRecord(version uint64, value []byte) []byte {
	buf := make([]byte, versionLen+len(value))
	binary.BigEndian.PutUint64(buf, version)
	copy(buf[versionLen:], value)
	return buf
}

func decodeRecord(raw []byte) (uint64, []byte, error) {
	if len(raw) < versionLen {
		return 0, nil, fmt.Errorf("%w: record of %d bytes has no version", ErrCorrupt, len(raw))
	}
	v := binary.BigEndian.Uint64(raw)
	if v == 0 {
		return 0, nil, fmt.Errorf("%w: record with version 0", ErrCorrupt)
	}
	return v, raw[versionLen:], nil
}

// WriteStats is what the committed transactions of a Bolt wrote since it
// was opened: the measure of the work inside the one serial stage, the
// commit (issue 38). Benchmarks divide it by the requests they ran.
type WriteStats struct {
	// Pages is the number of pages the transactions allocated and wrote
	// (dirty B+tree nodes after spilling, overflow pages and the freelist;
	// the meta page each commit also writes is not counted).
	Pages int64
	// Bytes is the size of those pages.
	Bytes int64
	// Writes is the number of write calls that put them on disk.
	Writes int64
	// Spills is the number of nodes serialized into pages.
	Spills int64
	// LogBytes is what the write-ahead log appended (its records), and
	// LogZeroBytes the zeroes it filled ahead for later segments: with
	// Bytes, what the store handed the disk. Both 0 without the log.
	LogBytes, LogZeroBytes int64
}

// CommitSyncHoldsP reports whether the committer's disk sync holds one of
// Go's Ps while the disk works: a plain fdatasync does (bbolt's own
// commit without the log; the log with PlainSync, or where Linux AIO is
// refused), until the runtime's sysmon takes the P back, and while it
// holds it no handler runs there. The log's AIO sync parks the committer
// instead. veild runs one P more than the CPUs when it holds one
// (cmd/veild/procs.go).
func (s *Bolt) CommitSyncHoldsP() bool { return s.log == nil || !s.log.SyncsByAIO() }

// WriteStats answers the write figures summed over every transaction
// finished so far.
func (s *Bolt) WriteStats() WriteStats {
	st := s.db.Stats().TxStats
	w := WriteStats{Pages: st.GetPageCount(), Bytes: st.GetPageAlloc(), Writes: st.GetWrite(), Spills: st.GetSpill()}
	if s.log != nil {
		w.LogBytes, w.LogZeroBytes = s.log.Bytes()
	}
	return w
}
