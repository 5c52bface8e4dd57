package persistence

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/veilhq/veil/persistence/internal/wal"
)

// The write-ahead log (issue 38). The committer makes a group durable by
// appending its effects to the log (internal/wal: one write, one
// fdatasync) instead of committing it to bbolt; the applier
// (bolt_apply.go) writes the logged groups into bbolt behind it, many
// groups per bbolt transaction, and until it has, reads see them through
// the pending overlay (bolt_pending.go). Opening the store replays into
// bbolt whatever the log holds beyond what bbolt applied, so an
// acknowledged write survives a crash exactly as before: it is on disk
// before its Apply returns. docs/storage.md.

// logMetaBucket holds the log's id and the last sequence number bbolt has
// applied. Its name is longer than MaxTableLen, so no table can be it.
const logMetaBucket = "persistence: the write-ahead log position (bolt_log.go); not a table."

var logMetaKey = []byte("log")

// logTxKey records, beside logMetaKey, the bbolt transaction that last
// wrote the log's position, and that position (8 + 8 bytes). A program
// that knows no log (a build from before it, a tool) writes bbolt
// without moving either, so a later transaction id with the position
// unmoved means that bbolt was written after the log was last applied:
// replaying the log then would undo those writes, records going back to
// older versions. A build with the log from before this key moves the
// position with every write, and is trusted as before. It is a key of
// its own because those builds refuse a logMetaKey of another length.
var logTxKey = []byte("log-tx")

// ErrLogBehind reports a write-ahead log whose records bbolt has not
// applied while bbolt was written since by something that does not know
// the log (logTxKey): neither replaying it nor dropping it is safe to do
// unasked.
var ErrLogBehind = errors.New("the data file was written after its write-ahead log, by a program that does not apply the log")

func init() {
	if len(logMetaBucket) <= MaxTableLen {
		panic("logMetaBucket must be longer than any table name")
	}
}

// logMeta is what bbolt records about the log, in the transaction that
// applies the log's records.
type logMeta struct {
	id      wal.ID
	applied uint64
}

func (m logMeta) encode() []byte {
	buf := make([]byte, len(m.id)+8)
	copy(buf, m.id[:])
	binary.BigEndian.PutUint64(buf[len(m.id):], m.applied)
	return buf
}

func readLogMeta(tx *bolt.Tx) (logMeta, bool, error) {
	b := tx.Bucket([]byte(logMetaBucket))
	if b == nil {
		return logMeta{}, false, nil
	}
	raw := b.Get(logMetaKey)
	if len(raw) != len(wal.ID{})+8 {
		return logMeta{}, false, fmt.Errorf("%w: write-ahead log position of %d bytes", ErrCorrupt, len(raw))
	}
	var m logMeta
	copy(m.id[:], raw)
	m.applied = binary.BigEndian.Uint64(raw[len(m.id):])
	return m, true, nil
}

func writeLogMeta(tx *bolt.Tx, m logMeta) error {
	b, err := tx.CreateBucketIfNotExists([]byte(logMetaBucket))
	if err != nil {
		return err
	}
	if err := b.Put(logMetaKey, m.encode()); err != nil {
		return err
	}
	var rec [16]byte
	binary.BigEndian.PutUint64(rec[:8], uint64(tx.ID())) // the id this transaction commits as
	binary.BigEndian.PutUint64(rec[8:], m.applied)
	return b.Put(logTxKey, rec[:])
}

// writtenBehindLog reports whether bbolt was written, since the last
// transaction that wrote the log's position m, by a program that left m
// as it was (logTxKey). tx is a write transaction, whose id is one past
// the last committed.
func writtenBehindLog(tx *bolt.Tx, m logMeta) (bool, error) {
	b := tx.Bucket([]byte(logMetaBucket))
	if b == nil {
		return false, nil
	}
	raw := b.Get(logTxKey)
	if raw == nil {
		return false, nil // written by a build from before the key
	}
	if len(raw) != 16 {
		return false, fmt.Errorf("%w: write-ahead log transaction record of %d bytes", ErrCorrupt, len(raw))
	}
	txid, applied := binary.BigEndian.Uint64(raw[:8]), binary.BigEndian.Uint64(raw[8:])
	return applied == m.applied && txid != uint64(tx.ID()-1), nil
}

// logOp is one effect of a committed batch, as logged and applied: a Put
// with its stored form (the version, then the value: encodeRecord), a
// Delete or a DeletePrefix. Checks and failed batches leave none.
type logOp struct {
	kind  OpKind
	table string
	key   string
	kb    []byte // key as bytes, for bbolt (shares the batch's or the record's)
	rec   []byte
}

// recVersion is the version of a stored record, 0 for none (a delete).
func recVersion(rec []byte) uint64 {
	if len(rec) < versionLen {
		return 0
	}
	return binary.BigEndian.Uint64(rec)
}

// encodeLogOps appends ops to buf: per op its kind (1 byte), table (1-byte
// length), key (2-byte length) and, for a Put, its record (4-byte length).
func encodeLogOps(buf []byte, ops []logOp) []byte {
	for _, op := range ops {
		buf = append(buf, byte(op.kind), byte(len(op.table)))
		buf = append(buf, op.table...)
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(op.key)))
		buf = append(buf, op.key...)
		if op.kind == OpPut {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(op.rec)))
			buf = append(buf, op.rec...)
		}
	}
	return buf
}

var errLogRecord = errors.New("malformed write-ahead log record")

// decodeLogOps reads what encodeLogOps wrote. The records share buf.
func decodeLogOps(buf []byte) ([]logOp, error) {
	var ops []logOp
	for len(buf) > 0 {
		if len(buf) < 2 {
			return nil, errLogRecord
		}
		op := logOp{kind: OpKind(buf[0])}
		n := int(buf[1])
		buf = buf[2:]
		if len(buf) < n+2 {
			return nil, errLogRecord
		}
		op.table = string(buf[:n])
		buf = buf[n:]
		n = int(binary.BigEndian.Uint16(buf))
		buf = buf[2:]
		if len(buf) < n {
			return nil, errLogRecord
		}
		op.kb = buf[:n:n]
		op.key = string(op.kb)
		buf = buf[n:]
		switch op.kind {
		case OpPut:
			if len(buf) < 4 {
				return nil, errLogRecord
			}
			n = int(binary.BigEndian.Uint32(buf))
			buf = buf[4:]
			if len(buf) < n || n < versionLen {
				return nil, errLogRecord
			}
			op.rec = buf[:n:n]
			buf = buf[n:]
		case OpDelete, OpDeletePrefix:
		default:
			return nil, fmt.Errorf("%w: op kind %d", errLogRecord, op.kind)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// fillPercent is how full bbolt packs a node it splits (its default is
// half). Most writes append: messages, conversations (version 7 ids) and
// notifications at the end of their agent's range, audit records at the
// end of their account's. A half-full split leaves every page of that
// data half empty, so each transaction writes twice the pages it needs;
// packed to 90% (etcd's setting for its appended keys), a chat turn
// writes half the pages (docs/BENCHMARKS.md). A random insert into a
// packed page splits it sooner; the tables keyed by hash or name take few
// writes (an agent's creation, a payment), so that cost was not measured.
const fillPercent = 0.9

// applyLogOps writes logged effects into tx.
func applyLogOps(tx *bolt.Tx, ops []logOp) error {
	for _, op := range ops {
		switch op.kind {
		case OpPut:
			b, err := tx.CreateBucketIfNotExists([]byte(op.table))
			if err != nil {
				return fmt.Errorf("create table %s: %w", op.table, err)
			}
			b.FillPercent = fillPercent
			if err := b.Put(op.kb, op.rec); err != nil {
				return fmt.Errorf("put %s/%q: %w", op.table, op.key, err)
			}
		case OpDelete:
			if b := tx.Bucket([]byte(op.table)); b != nil {
				if err := b.Delete(op.kb); err != nil {
					return fmt.Errorf("delete %s/%q: %w", op.table, op.key, err)
				}
			}
		case OpDeletePrefix:
			if b := tx.Bucket([]byte(op.table)); b != nil {
				if err := deletePrefix(b, op.kb); err != nil {
					return fmt.Errorf("delete prefix %s/%q: %w", op.table, op.key, err)
				}
			}
		}
	}
	return nil
}

// openLog replays the log at dir into db, beyond what db applied, in one
// transaction, and starts a fresh log after it. A data file from before
// the log (or a new one) gets its id here.
func openLog(db *bolt.DB, dir string, opts wal.Options) (*wal.Log, logMeta, error) {
	var meta logMeta
	err := db.Update(func(tx *bolt.Tx) error {
		m, ok, err := readLogMeta(tx)
		if err != nil {
			return err
		}
		if !ok {
			if _, err := rand.Read(m.id[:]); err != nil {
				return err
			}
		}
		behind, err := writtenBehindLog(tx, m)
		if err != nil {
			return err
		}
		last, err := wal.Replay(dir, m.id, m.applied, func(seq uint64, payload []byte) error {
			if behind {
				return fmt.Errorf("%w: record %d and on are not in it", ErrLogBehind, seq)
			}
			ops, err := decodeLogOps(payload)
			if err != nil {
				return fmt.Errorf("%w: record %d: %w", wal.ErrCorrupt, seq, err)
			}
			return applyLogOps(tx, ops)
		})
		if err != nil {
			return err
		}
		// Written even when nothing was replayed: this transaction
		// commits as a new bbolt transaction id, which logTxKey must name.
		m.applied = last
		meta = m
		return writeLogMeta(tx, m)
	})
	if err != nil {
		if errors.Is(err, wal.ErrForeign) {
			return nil, logMeta{}, fmt.Errorf("%w (move the directory %s away if this data file was restored: a restore leaves no log)", err, dir)
		}
		if errors.Is(err, ErrLogBehind) {
			// An earlier build (before the log) or a tool wrote the file
			// after a crash left the log: its writes and the log's are
			// each acknowledged, and replaying would undo the former.
			return nil, logMeta{}, fmt.Errorf("replay write-ahead log %s: %w (after a crash left the log, the file was opened and written by a build from before the log, or another tool, which never saw the log's writes; to open the file as that program left it, move the directory %s aside and keep it: it holds writes that were acknowledged and are not in the file. If it was last written by a build with the log, start that build once and stop it cleanly instead: it replays its log)", dir, err, dir)
		}
		if errors.Is(err, wal.ErrCorrupt) {
			// An acknowledged write is damaged: the store does not open
			// without it rather than answer as if it never was.
			return nil, logMeta{}, fmt.Errorf("replay write-ahead log %s: %w (a write that was answered as stored is damaged on disk, so the store does not open without it: restore the latest backup (veild restore), or, to open the data file with what it holds, losing the writes logged after it, move the directory %s aside and keep it for inspection)", dir, err, dir)
		}
		return nil, logMeta{}, fmt.Errorf("replay write-ahead log %s: %w", dir, err)
	}
	log, err := wal.Create(dir, meta.id, meta.applied+1, opts)
	if err != nil {
		return nil, logMeta{}, err
	}
	return log, meta, nil
}

// replayLeftoverLog is for a store opened without the log (NoLog): a log a
// crash left next to the file may hold acknowledged writes the file lacks,
// so it is replayed into the file and removed, as an open with the log and
// a clean close would. Left in place, those writes would be missing, and a
// later open with the log would replay them over what was written since.
func replayLeftoverLog(db *bolt.DB, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	log, _, err := openLog(db, dir, wal.Options{PlainSync: true}) // writes nothing
	if err != nil {
		return err
	}
	return log.Close(true)
}
