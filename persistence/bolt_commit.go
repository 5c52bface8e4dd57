package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veilhq/veil/persistence/internal/groupcommit"
)

// Group commit. An fsync costs milliseconds and bbolt runs one writer at a
// time, so one transaction per Apply caps the store at a few hundred writes
// a second however many writers wait. Instead, Apply queues its batch and a
// single committer goroutine runs every batch queued so far in one
// transaction with one fsync. Batches keep their own atomicity inside the
// shared transaction: each is checked against the state the earlier ones
// left and is applied only when all its expectations hold.

// request is one Apply call waiting for the committer.
type request = groupcommit.Request[batch]

// batch is one Apply's ops, with what bbolt stores for each prepared in
// the caller's goroutine: the committer is the one serial stage of every
// write, so it only checks expectations, fills in versions and puts
// (issue 38: encoding outside the committer).
type batch struct {
	ops []Op
	// keys and recs are each op's key as bytes and, for a Put, its
	// stored form (encodeRecord) with the version left to the committer.
	keys, recs [][]byte
	// overlay: some op of the batch reads what an earlier one wrote (a
	// key repeated, a DeletePrefix), so planning must track the batch's
	// own effects (needsOverlay).
	overlay bool
}

func newBatch(ops []Op) batch {
	b := batch{ops: ops, keys: make([][]byte, len(ops)), recs: make([][]byte, len(ops)), overlay: needsOverlay(ops)}
	for i, op := range ops {
		b.keys[i] = []byte(op.Key)
		if op.Kind == OpPut {
			b.recs[i] = encodeRecord(0, op.Value)
		}
	}
	return b
}

// overlaySmall is the batch length up to which needsOverlay compares every
// pair of ops; a longer batch is planned with the overlay.
const overlaySmall = 32

// needsOverlay reports whether an op of ops may see an earlier op's effect:
// a DeletePrefix, or a table and key repeated.
func needsOverlay(ops []Op) bool {
	if len(ops) > overlaySmall {
		return true
	}
	for i, op := range ops {
		if op.Kind == OpDeletePrefix {
			return true
		}
		for _, prev := range ops[:i] {
			if prev.Table == op.Table && prev.Key == op.Key {
				return true
			}
		}
	}
	return false
}

// Apply implements Store. A batch whose ctx ends while it is still queued is
// withdrawn and Apply returns ctx.Err(); once the committer has taken it,
// Apply waits for the commit and reports its real outcome, because the write
// may already be durable.
func (s *Bolt) Apply(ctx context.Context, ops ...Op) ([]uint64, error) {
	if err := ValidateBatch(ops); err != nil {
		return nil, err
	}
	size := 0
	for _, op := range ops {
		size += len(op.Value)
	}
	return s.c.Apply(ctx, groupcommit.NewRequest(newBatch(ops), size))
}

// commitGroup runs every request of group in one transaction and answers
// each. A request whose expectations fail gets its *ConflictError and
// changes nothing; only a failure of the transaction itself reaches all.
func (s *Bolt) commitGroup(group []*request) {
	if s.log != nil {
		s.commitLogged(group)
		return
	}
	if s.hooks.taken != nil {
		s.hooks.taken(len(group))
	}
	start := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, r := range group {
			versions, err := plan(boltVersions{tx}, r.Batch)
			if err != nil {
				r.Err = err
				continue
			}
			if err := write(tx, r.Batch, versions); err != nil {
				// The batch may be half written: only a rollback of the
				// whole transaction restores atomicity.
				return err
			}
			r.Versions = versions
		}
		return Hit(s.opts.Failpoint, FailBeforeCommit)
	})
	elapsed := time.Since(start)
	if err == nil {
		err = Hit(s.opts.Failpoint, FailAfterCommit)
	}
	s.answer(group, elapsed, err)
}

// answer answers every request of a group: the commit's error reaches
// all; without one, the watches learn the new versions first.
func (s *Bolt) answer(group []*request, elapsed time.Duration, err error) {
	if err != nil {
		err = fmt.Errorf("persistence: commit to %s: %w", s.path, err)
		for _, r := range group {
			r.Versions, r.Err = nil, err
		}
	} else {
		s.noteWatched(group)
	}
	groupcommit.Answer(group, elapsed, s.opts.Observe, s.hooks.observe)
}

// commitLogged commits a group through the write-ahead log: its batches
// are checked against bbolt and the pending writes, the effects of those
// that hold are appended to the log as one record (one write, one
// fdatasync), and only then are they visible (pending) and answered. The
// applier writes them into bbolt later.
func (s *Bolt) commitLogged(group []*request) {
	if s.hooks.taken != nil {
		s.hooks.taken(len(group))
	}
	start := time.Now()
	var ops []logOp
	err := s.waitForRoom()
	if err == nil {
		ops, err = s.planLogged(group)
	}
	if err == nil {
		err = Hit(s.opts.Failpoint, FailBeforeCommit)
	}
	logged := false
	var seq uint64
	if err == nil && len(ops) > 0 {
		s.logBuf = encodeLogOps(s.logBuf[:0], ops)
		seq, err = s.log.Write(s.logBuf)
		logged = err == nil
		if cap(s.logBuf) > 4<<20 {
			s.logBuf = nil // one large group must not pin its buffer
		}
	}
	if err == nil {
		err = Hit(s.opts.Failpoint, FailAfterCommit)
	}
	if logged {
		// Durable, whatever the failpoint said: readers must see it.
		s.pending.add(seq, ops)
		s.apply.kick()
		if s.urgent() {
			s.apply.rush()
		}
		// A segment left behind on an error is only replayed over (its
		// records are at or below bbolt's position), so it is not one.
		_ = s.log.Release(s.apply.applied.Load())
	}
	s.answer(group, time.Since(start), err)
}

// planLogged checks every batch of group in order against bbolt, the
// pending writes and the batches before it in the group, and answers the
// effects of those that hold. It reads bbolt and the pending writes as one
// state (beginView).
func (s *Bolt) planLogged(group []*request) ([]logOp, error) {
	p := s.pending
	tx, err := s.beginView()
	if err != nil {
		return nil, err
	}
	defer p.mu.RUnlock()
	defer tx.Rollback()
	g := &overlay{next: pendingVersions{p, boltVersions{tx}}, keys: map[string]map[string]uint64{}, deleted: map[string][]string{}}
	var ops []logOp
	for _, r := range group {
		versions, err := plan(g, r.Batch)
		if err != nil {
			r.Err = err
			continue
		}
		n := len(ops)
		ops = effects(ops, r.Batch, versions)
		for _, op := range ops[n:] {
			if op.kind == OpDeletePrefix {
				g.deletePrefix(op.table, op.key)
			} else {
				g.set(op.table, op.key, recVersion(op.rec))
			}
		}
		r.Versions = versions
	}
	return ops, nil
}

// beginView begins a bbolt read transaction and returns it with
// pending's read lock held (the caller releases it), once the transaction
// holds every group the applier has dropped from pending: then what the
// transaction lacks is still pending, and the two read together are one
// state. The transaction begins before the lock is taken, so that waiting
// for bbolt (its readers share one mutex) never holds up a drop, behind
// which every reader of pending would wait. A drop between the two makes
// it begin again.
func (s *Bolt) beginView() (*bolt.Tx, error) {
	for {
		tx, err := s.db.Begin(false)
		if err != nil {
			return nil, err
		}
		m, _, err := readLogMeta(tx)
		if err != nil {
			tx.Rollback()
			return nil, err
		}
		if s.hooks.viewBegun != nil {
			s.hooks.viewBegun()
		}
		s.pending.mu.RLock()
		if s.pending.dropped <= m.applied {
			return tx, nil
		}
		s.pending.mu.RUnlock()
		tx.Rollback()
	}
}

// versionSource answers a record's current version (0: absent).
type versionSource interface {
	version(table, key string) (uint64, error)
}

// boltVersions reads versions from a bbolt transaction.
type boltVersions struct{ tx *bolt.Tx }

func (v boltVersions) version(table, key string) (uint64, error) {
	b := v.tx.Bucket([]byte(table))
	if b == nil {
		return 0, nil
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return 0, nil
	}
	ver, _, err := decodeRecord(raw)
	if err != nil {
		return 0, fmt.Errorf("persistence: %s/%q: %w", table, key, err)
	}
	return ver, nil
}

// pendingVersions answers from the pending writes, then from next. The
// caller holds pending's lock.
type pendingVersions struct {
	p    *pending
	next versionSource
}

func (v pendingVersions) version(table, key string) (uint64, error) {
	rec, decided := v.p.lookup(table, key)
	if !decided {
		return v.next.version(table, key)
	}
	return recVersion(rec), nil // nil: deleted
}

// overlay is the state a batch sees while it is planned: the state below
// it (next) plus the effects of the ops before it. A version of 0 means
// absent. A batch that never reads its own effects (batch.overlay false:
// most of them, a chat turn's included) tracks none, so planning it
// allocates nothing in the committer.
type overlay struct {
	next    versionSource
	keys    map[string]map[string]uint64 // table -> key -> version
	deleted map[string][]string          // table -> prefixes deleted so far
}

func (o *overlay) version(table, key string) (uint64, error) {
	if v, ok := o.keys[table][key]; ok {
		return v, nil
	}
	for _, p := range o.deleted[table] {
		if strings.HasPrefix(key, p) {
			return 0, nil
		}
	}
	return o.next.version(table, key)
}

func (o *overlay) set(table, key string, v uint64) {
	m := o.keys[table]
	if m == nil {
		m = make(map[string]uint64)
		o.keys[table] = m
	}
	m[key] = v
}

func (o *overlay) deletePrefix(table, prefix string) {
	for k := range o.keys[table] {
		if strings.HasPrefix(k, prefix) {
			o.keys[table][k] = 0
		}
	}
	o.deleted[table] = append(o.deleted[table], prefix)
}

// plan checks every expectation of the batch, in order, against below as
// modified by the ops before it, without writing anything, and answers the
// version each op leaves (a Put's new version; 0 otherwise). bbolt has no
// savepoints, so deciding before writing is what keeps a failed batch from
// touching the transaction its group shares.
func plan(below versionSource, b batch) ([]uint64, error) {
	ops := b.ops
	versions := make([]uint64, len(ops))
	o := overlay{next: below}
	if b.overlay {
		o.keys, o.deleted = map[string]map[string]uint64{}, map[string][]string{}
	}
	for i, op := range ops {
		if op.Kind == OpDeletePrefix {
			o.deletePrefix(op.Table, op.Key)
			continue
		}
		cur, err := o.version(op.Table, op.Key)
		if err != nil {
			return nil, err
		}
		if !op.Expect.Holds(cur) {
			return nil, &ConflictError{Table: op.Table, Key: op.Key, Expected: op.Expect, Actual: cur}
		}
		if op.Kind == OpPut {
			versions[i] = cur + 1
		}
		// A Check leaves the record as it is: only a Put or a Delete
		// changes what the later ops of the batch see.
		if b.overlay && op.Kind != OpCheck {
			o.set(op.Table, op.Key, versions[i])
		}
	}
	return versions, nil
}

// effects appends to ops what a planned batch does, with the versions
// plan answered written into its Puts' stored forms: what the log records
// and bbolt applies. Checks do nothing.
func effects(ops []logOp, bt batch, versions []uint64) []logOp {
	for i, op := range bt.ops {
		e := logOp{kind: op.Kind, table: op.Table, key: op.Key, kb: bt.keys[i]}
		switch op.Kind {
		case OpPut:
			e.rec = bt.recs[i]
			binary.BigEndian.PutUint64(e.rec, versions[i])
		case OpCheck:
			continue
		}
		ops = append(ops, e)
	}
	return ops
}

// write applies a planned batch. An error here leaves the batch half done,
// so the caller must roll the transaction back.
func write(tx *bolt.Tx, bt batch, versions []uint64) error {
	return applyLogOps(tx, effects(make([]logOp, 0, len(bt.ops)), bt, versions))
}

func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	// Collect first: deleting under a moving bbolt cursor skips keys.
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
