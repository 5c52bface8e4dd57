// Package wal is the bbolt store's write-ahead log: numbered records
// appended to segment files in one directory, each record made durable by
// one write and one fdatasync before its writer is answered.
//
// The log exists because a bbolt commit is the one serial stage of every
// write (issue 38): it rewrites and fsyncs every page its batches dirtied,
// scattered over the file, so its cost grows with the pages a group
// touches. Appending a group to a log costs one sequential write and one
// fdatasync; the store applies the logged groups to bbolt in larger
// transactions behind the log (persistence/bolt_apply.go), and replays
// what bbolt had not yet applied when the process died.
//
// A record is [len u32][crc32c u32][seq u64][payload]: len counts seq and
// payload, the checksum covers them. Sequence numbers start at 1 and grow
// by one per record across segments. A segment starts with a header that
// names its log (the id stored in the bbolt file it belongs to), so a log
// left next to another data file (a restore) is refused, not replayed
// into it. A segment's file name is the first sequence number it holds.
package wal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ID names a log: the bbolt file it belongs to keeps the same id.
type ID [16]byte

// Errors Replay wraps.
var (
	// ErrForeign reports a segment that belongs to another data file.
	ErrForeign = errors.New("write-ahead log belongs to another data file")
	// ErrCorrupt reports a damaged record that is not the torn tail of the
	// last segment (the only place a crash can leave one).
	ErrCorrupt = errors.New("write-ahead log is damaged")
)

const (
	magic     = "VEILWAL1"
	headerLen = len(magic) + len(ID{})
	// recordHead is len, crc and seq.
	recordHead = 4 + 4 + 8
	// maxRecord is the largest record: its length field is 32 bits.
	// Write refuses a larger payload (the store's groups are bounded far
	// below it, MaxGroupBytes, but a single batch is not).
	maxRecord = 1<<32 - 1
	suffix    = ".wal"
	// DefaultSegmentSize is the size past which Write starts a new
	// segment, so that applied segments can be removed whole.
	DefaultSegmentSize = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segment is one file of the log.
type segment struct {
	first uint64 // first sequence number, from the file name
	path  string
}

// segments lists dir's segment files in order. A missing directory has none.
func segments(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []segment
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, suffix) {
			continue
		}
		first, err := strconv.ParseUint(strings.TrimSuffix(name, suffix), 16, 64)
		if err != nil {
			continue // not ours
		}
		out = append(out, segment{first: first, path: filepath.Join(dir, name)})
	}
	slices.SortFunc(out, func(a, b segment) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	return out, nil
}

func segmentName(first uint64) string { return fmt.Sprintf("%016x%s", first, suffix) }

// Replay calls fn, in order, with every record of the log in dir whose
// sequence number is above after, and returns the last sequence number it
// read (after when there is none). A torn record at the end of the last
// segment ends the log: it was never acknowledged. Any other damage, a gap
// in the numbering or a segment of another log fails with ErrCorrupt or
// ErrForeign, before fn sees the record.
func Replay(dir string, id ID, after uint64, fn func(seq uint64, payload []byte) error) (uint64, error) {
	segs, err := segments(dir)
	if err != nil {
		return 0, fmt.Errorf("read write-ahead log %s: %w", dir, err)
	}
	last := after
	for i, sg := range segs {
		lastSeg := i == len(segs)-1
		n, err := replaySegment(sg, id, after, last, lastSeg, fn)
		if err != nil {
			return 0, err
		}
		last = n
	}
	return last, nil
}

func replaySegment(sg segment, id ID, after, last uint64, lastSeg bool, fn func(uint64, []byte) error) (uint64, error) {
	f, err := os.Open(sg.path)
	if err != nil {
		return 0, fmt.Errorf("read write-ahead log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("read write-ahead log: %w", err)
	}
	left := fi.Size() - int64(headerLen) // bytes after the header, for the records
	r := bufio.NewReaderSize(f, 1<<20)
	var head [headerLen]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if lastSeg && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return last, nil // created, header not yet durable: empty
		}
		return 0, fmt.Errorf("%s: %w: short header", sg.path, ErrCorrupt)
	}
	if string(head[:len(magic)]) != magic {
		return 0, fmt.Errorf("%s: %w: not a segment", sg.path, ErrCorrupt)
	}
	if ID(head[len(magic):]) != id {
		return 0, fmt.Errorf("%s: %w", sg.path, ErrForeign)
	}
	for {
		off := fi.Size() - left // where the record starts
		seq, payload, err := readRecord(r, left)
		left -= int64(recordHead + len(payload))
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			// A segment zero-filled ahead of the writer (Log.prepare)
			// ends where its zeroes begin, be they shorter than a
			// record's header. An acknowledged record is never zeroes:
			// its length is not 0.
			zero, zerr := zeroFrom(sg.path, off)
			if zerr != nil {
				return 0, fmt.Errorf("read write-ahead log: %w", zerr)
			}
			if zero {
				return last, nil
			}
		}
		if err != nil {
			// A crash can only tear the last write: nothing follows it.
			// An intact record after the damage was acknowledged.
			if lastSeg {
				found, ferr := writtenAfter(sg.path, off)
				if ferr == nil && !found {
					found, ferr = intactAfter(sg.path, off, last)
				}
				if ferr != nil {
					return 0, fmt.Errorf("read write-ahead log: %w", ferr)
				}
				if !found {
					return last, nil // the torn tail of the last write
				}
			}
			return 0, fmt.Errorf("%s: %w: %w", sg.path, ErrCorrupt, err)
		}
		if seq <= after {
			last = max(last, seq)
			continue
		}
		if seq != last+1 {
			return 0, fmt.Errorf("%s: %w: record %d follows %d", sg.path, ErrCorrupt, seq, last)
		}
		if err := fn(seq, payload); err != nil {
			return 0, err
		}
		last = seq
	}
}

// writtenAfter reports whether the damaged record at off in the segment at
// path states a length, and bytes other than zero follow the end it
// states. A crash tears only the last write, and never its length into
// another non-zero length: the length is in the write's first bytes, which
// reached the disk whole or left the zeroes (or the end of the file) that
// were there. So a record whose stated end has data after it was not the
// last write, whatever damaged it, even when nothing after it is intact.
func writtenAfter(path string, off int64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	var head [4]byte
	if _, err := f.ReadAt(head[:], off); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil // not even a length: nothing stated
		}
		return false, err
	}
	n := int64(binary.BigEndian.Uint32(head[:]))
	if n < 8 || off+8+n >= fi.Size() {
		return false, nil
	}
	zero, err := zeroFrom(path, off+8+n)
	return !zero, err
}

// intactAfter reports whether the segment at path holds, somewhere past
// the start (off) of its damaged record, which is last+1, intact records
// numbered from one after the damaged ones (last+2, or later when several
// are damaged: as many as fit between), one after another, up to the end
// of the file or to the zeroes a spare segment was filled with
// (Log.prepare): records written after the damaged one, so the damage is
// not the torn tail of the last write. Requiring a successor the space can
// hold and a chain to the end keeps a value that merely contains a
// record's bytes, in a write that was torn, from passing for one. (Every
// segment after a log's first is a zero-filled spare: before the zeroes
// counted as an end, damage to any record but the last of such a segment
// dropped the acknowledged records after it without a word, as did damage
// to two records; TestSpareSegmentDamageBeforeRecords,
// TestReplayTwoDamagedRecords. writtenAfter catches damage that leaves
// nothing intact after it.)
func intactAfter(path string, off int64, last uint64) (bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	// intact answers the seq and end of an intact record at i.
	intact := func(i int64) (uint64, int64, bool) {
		if i+recordHead > int64(len(data)) {
			return 0, 0, false
		}
		n := int64(binary.BigEndian.Uint32(data[i:]))
		if n < 8 || i+8+n > int64(len(data)) {
			return 0, 0, false
		}
		if crc32.Checksum(data[i+8:i+8+n], castagnoli) != binary.BigEndian.Uint32(data[i+4:]) {
			return 0, 0, false
		}
		return binary.BigEndian.Uint64(data[i+8:]), i + 8 + n, true
	}
	for i := off + 1; i+recordHead <= int64(len(data)); i++ {
		seq, end, ok := intact(i)
		// The records from last+1 to seq-1 lie damaged between off and i,
		// each at least recordHead bytes: a seq further on cannot follow.
		if !ok || seq < last+2 || seq-last-1 > uint64(i-off)/recordHead {
			continue
		}
		for end < int64(len(data)) {
			next, e, ok := intact(end)
			if !ok || next != seq+1 {
				break
			}
			seq, end = next, e
		}
		if !slices.ContainsFunc(data[end:], func(b byte) bool { return b != 0 }) {
			return true, nil
		}
	}
	return false, nil
}

// zeroFrom reports whether the file at path holds only zero bytes from off
// to its end.
func zeroFrom(path string, off int64) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.ReadAt(buf, off)
		for _, b := range buf[:n] {
			if b != 0 {
				return false, nil
			}
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// readRecord reads one record of at most left bytes (what the file has
// after it: a damaged length must not allocate more); io.EOF means a clean
// end.
func readRecord(r *bufio.Reader, left int64) (uint64, []byte, error) {
	var head [recordHead]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, io.EOF
		}
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[0:4])
	sum := binary.BigEndian.Uint32(head[4:8])
	if n < 8 {
		if n == 0 && sum == 0 {
			return 0, nil, errors.New("zeroes where a record should be")
		}
		return 0, nil, fmt.Errorf("record length %d", n)
	}
	if int64(n)+8 > left {
		return 0, nil, fmt.Errorf("record of %d bytes where %d are left", n, left-8)
	}
	body := make([]byte, n)
	copy(body, head[8:])
	if _, err := io.ReadFull(r, body[8:]); err != nil {
		return 0, nil, fmt.Errorf("short record: %w", err)
	}
	if crc32.Checksum(body, castagnoli) != sum {
		return 0, nil, errors.New("checksum mismatch")
	}
	return binary.BigEndian.Uint64(body[:8]), body[8:], nil
}

// Log appends records. It is not safe for concurrent use: the store's
// committer is its only writer.
//
// Segments after the first are zero-filled and made durable before they
// are used (prepare, in the background while the one before fills): a
// record written over zeroes changes no file size, so its fdatasync
// flushes data only, where an append must also commit the new size (on
// ext4 a journal commit, which waits behind every other file's; measured
// in docs/BENCHMARKS.md). Segments grow from firstSegment, doubling, up to
// the segment size, so a small store never fills megabytes of zeroes.
type Log struct {
	dir         string
	id          ID
	segmentSize int64
	f           *os.File
	size        int64 // where the next record goes
	limit       int64 // the current segment's size: rotate past it
	cur         segment
	closed      []segment // older segments, oldest first
	next        uint64
	buf         []byte
	sync        syncer // the records' fdatasync (sync_linux.go)
	// err, once set, fails every later write: after a failed write or
	// fdatasync the file's state is unknown, and appending after it could
	// leave an acknowledged record behind a damaged one.
	err error

	// The spare segment being prepared, at most one at a time: preparing
	// is set from its start until the committer takes it from spare.
	preparing bool
	spare     chan spareFile
	quit      chan struct{}
	wg        sync.WaitGroup

	// written and zeroed count the bytes of records written and of
	// zeroes filled ahead since Create (Bytes), for the store's figures.
	written, zeroed atomic.Int64
}

// Bytes answers the bytes of records this log wrote and of zeroes it
// filled ahead for later segments, since Create: what it handed the disk.
func (l *Log) Bytes() (records, zeroes int64) { return l.written.Load(), l.zeroed.Load() }

// spareFile is a zero-filled, durable file of size bytes, ready to become
// the next segment, or why it could not be made.
type spareFile struct {
	f    *os.File
	path string
	size int64
	err  error
}

const (
	// firstSegment is the size of a log's first segment.
	firstSegment = 256 << 10
	spareSuffix  = ".spare"
)

// Options tunes Create. The zero value is the production setting.
type Options struct {
	// SegmentSize is the size past which Write starts a new segment;
	// 0 means DefaultSegmentSize.
	SegmentSize int64
	// PlainSync makes every record durable with fdatasync on the writer's
	// goroutine, never with Linux AIO (sync_linux.go): the baseline AIO is
	// measured against, and a way out on a system that mishandles it.
	PlainSync bool
}

// Create starts the log in dir (made if needed) at sequence number next,
// after removing every segment there: call it once Replay's records are
// durable elsewhere.
func Create(dir string, id ID, next uint64, opts Options) (*Log, error) {
	segmentSize := opts.SegmentSize
	if segmentSize <= 0 {
		segmentSize = DefaultSegmentSize
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create write-ahead log %s: %w", dir, err)
	}
	old, err := segments(dir)
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log %s: %w", dir, err)
	}
	spares, _ := filepath.Glob(filepath.Join(dir, "*"+spareSuffix))
	for _, sg := range old {
		spares = append(spares, sg.path)
	}
	for _, path := range spares {
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove replayed segment: %w", err)
		}
	}
	l := &Log{dir: dir, id: id, segmentSize: segmentSize, next: next, spare: make(chan spareFile, 1), quit: make(chan struct{})}
	if err := l.open(next); err != nil {
		return nil, err
	}
	l.sync.init(opts.PlainSync)
	return l, nil
}

// open starts a segment whose first record will be first, appended to a
// new file, and makes its header and its name durable.
func (l *Log) open(first uint64) error {
	sg := segment{first: first, path: filepath.Join(l.dir, segmentName(first))}
	f, err := os.OpenFile(sg.path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create write-ahead log segment: %w", err)
	}
	if err := l.start(f, sg, min(firstSegment, l.segmentSize)); err != nil {
		f.Close()
		return err
	}
	return nil
}

// start makes f, whose name is already sg's, the current segment: its
// header is written and made durable, then its name.
func (l *Log) start(f *os.File, sg segment, limit int64) error {
	head := append([]byte(magic), l.id[:]...)
	_, err := f.WriteAt(head, 0)
	if err == nil {
		err = fdatasync(f)
	}
	if err == nil {
		err = syncDir(l.dir)
	}
	if err != nil {
		return fmt.Errorf("create write-ahead log segment %s: %w", sg.path, err)
	}
	l.f, l.cur, l.size, l.limit = f, sg, int64(len(head)), max(limit, int64(len(head)))
	return nil
}

// prepare zero-fills a spare file of size bytes and makes it durable, in
// the background, unless one is already under way.
func (l *Log) prepare(size int64) {
	if l.preparing {
		return
	}
	l.preparing = true
	path := filepath.Join(l.dir, segmentName(l.next)+spareSuffix)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		sp := spareFile{path: path, size: size}
		sp.f, sp.err = zeroFile(path, size, append([]byte(magic), l.id[:]...), l.quit)
		if sp.err == nil {
			l.zeroed.Add(size)
		}
		if sp.err != nil && sp.f != nil {
			sp.f.Close()
			sp.f = nil
		}
		l.spare <- sp // capacity 1, and one spare at a time
	}()
}

// zeroFile creates path with size bytes, head then zeroes, durable: a
// segment's header comes with it, so that once renamed to a segment's
// name it is a valid segment even if a crash follows at once. It stops
// early when quit closes.
func zeroFile(path string, size int64, head []byte, quit <-chan struct{}) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(head, 0); err != nil {
		return f, err
	}
	zeroes := make([]byte, min(size, 1<<20))
	for off := int64(len(head)); off < size; off += int64(len(zeroes)) {
		select {
		case <-quit:
			return f, errors.New("write-ahead log closed")
		default:
		}
		if _, err := f.WriteAt(zeroes[:min(int64(len(zeroes)), size-off)], off); err != nil {
			return f, err
		}
	}
	return f, f.Sync()
}

// Next is the sequence number the next Write will use.
func (l *Log) Next() uint64 { return l.next }

// Write appends payload as one record, makes it durable (write and
// fdatasync) and returns its sequence number. An error leaves the log
// unusable: every later Write fails with it.
func (l *Log) Write(payload []byte) (uint64, error) {
	if l.err != nil {
		return 0, l.err
	}
	if uint64(len(payload))+8 > maxRecord {
		return 0, fmt.Errorf("write-ahead log: a record of %d bytes is over the limit of %d", len(payload), uint64(maxRecord-8))
	}
	n := int64(recordHead + len(payload))
	// A segment holds at least one record: rotating an empty one would
	// open a second segment of the same first number, the same name.
	if l.size+n > l.limit && l.next > l.cur.first {
		if err := l.rotate(); err != nil {
			l.err = err
			return 0, err
		}
	}
	seq := l.next
	l.buf = slices.Grow(l.buf[:0], int(n))[:recordHead]
	binary.BigEndian.PutUint32(l.buf[0:4], uint32(8+len(payload)))
	binary.BigEndian.PutUint64(l.buf[8:16], seq)
	l.buf = append(l.buf, payload...)
	binary.BigEndian.PutUint32(l.buf[4:8], crc32.Checksum(l.buf[8:], castagnoli))
	if _, err := l.f.WriteAt(l.buf, l.size); err != nil {
		l.err = fmt.Errorf("write-ahead log %s: %w", l.cur.path, err)
		return 0, l.err
	}
	if err := l.sync.datasync(l.f); err != nil {
		l.err = fmt.Errorf("write-ahead log %s: fdatasync: %w", l.cur.path, err)
		return 0, l.err
	}
	l.size += n
	l.written.Add(n)
	l.next++
	if cap(l.buf) > 4<<20 {
		l.buf = nil // one large group must not pin its buffer
	}
	if l.size > l.limit/2 {
		l.prepare(min(2*l.limit, l.segmentSize))
	}
	return seq, nil
}

// rotate closes the current segment (every record in it is durable) and
// starts the next: the spare when it is ready, else a file appended to.
func (l *Log) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close write-ahead log segment: %w", err)
	}
	l.closed = append(l.closed, l.cur)
	select {
	case sp := <-l.spare:
		l.preparing = false
		if sp.err == nil {
			sg := segment{first: l.next, path: filepath.Join(l.dir, segmentName(l.next))}
			err := os.Rename(sp.path, sg.path)
			if err == nil {
				err = l.start(sp.f, sg, sp.size)
			}
			if err != nil {
				sp.f.Close()
				return fmt.Errorf("start write-ahead log segment: %w", err)
			}
			return nil
		}
		_ = os.Remove(sp.path) // could not be made: append instead
	default: // not ready yet: append, and take it next time
	}
	return l.open(l.next)
}

// Release removes the closed segments whose every record is at or below
// applied: those the data file holds durably.
func (l *Log) Release(applied uint64) error {
	n := 0
	for i, sg := range l.closed {
		end := l.cur.first
		if i+1 < len(l.closed) {
			end = l.closed[i+1].first
		}
		if end-1 > applied {
			break
		}
		if err := os.Remove(sg.path); err != nil {
			return fmt.Errorf("remove applied segment: %w", err)
		}
		n++
	}
	l.closed = slices.Delete(l.closed, 0, n)
	return nil
}

// SyncsByAIO reports whether the records' fdatasync goes through Linux
// AIO, the writer parked meanwhile (sync_linux.go), rather than a plain
// fdatasync, which holds the writer's P until the runtime takes it back.
// It turns false for good when the kernel refuses an AIO sync.
func (l *Log) SyncsByAIO() bool { return l.sync.byAIO() }

// Segments is the number of segment files, the current one included.
func (l *Log) Segments() int { return len(l.closed) + 1 }

// Close closes the current segment. With removeAll (every record is
// applied durably) it also removes every segment and the directory, so
// that a cleanly closed data file needs no log.
func (l *Log) Close(removeAll bool) error {
	close(l.quit)
	l.wg.Wait()
	l.sync.close()
	if l.preparing {
		sp := <-l.spare
		if sp.f != nil {
			sp.f.Close()
		}
		_ = os.Remove(sp.path) // a spare holds no record
	}
	err := l.f.Close()
	if !removeAll || err != nil {
		return err
	}
	for _, sg := range append(l.closed, l.cur) {
		if err := os.Remove(sg.path); err != nil {
			return fmt.Errorf("remove applied segment: %w", err)
		}
	}
	if err := os.Remove(l.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil // something else lives there; leave it
	}
	return syncDir(filepath.Dir(l.dir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
