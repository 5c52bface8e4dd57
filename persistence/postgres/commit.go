package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/internal/groupcommit"
	keyprefix "github.com/veilhq/veil/persistence/internal/prefix"
)

// Group commit. A commit waits for PostgreSQL to flush its WAL, and each
// statement is a round trip, so one transaction per Apply caps a member at
// one commit per flush per connection. Instead, Apply queues its batch and a
// single committer goroutine runs every batch queued so far in one
// transaction, sent as one pipeline: BEGIN, the statements of every batch,
// COMMIT, then one Sync; one round trip, one WAL flush.
//
// Each batch keeps its own all-or-nothing outcome. Every expectation is a
// guarded statement (sql.go): when one fails, the server aborts the
// transaction and skips the rest of the pipeline, COMMIT included, so
// nothing is committed. The committer then rolls back and runs the group
// again with a SAVEPOINT around each batch. When a batch fails there, the
// committer rolls back to its savepoint (the batches before it stay), decides
// that batch op by op under row locks to name the failed op and its actual
// version, and sends the rest of the group. Savepoints cost two statements
// per batch and a subtransaction each, so the common case, a group without a
// conflict, does without them.

// request is one Apply call waiting for the committer.
type request = groupcommit.Request[[]persistence.Op]

// Apply implements persistence.Store. A batch whose ctx ends while it is
// still queued is withdrawn and Apply returns ctx.Err(); once the committer
// has taken it, Apply waits for the transaction's outcome, because the write
// may already be committed. The transaction runs under the committer's own
// context (bounded by CommitTimeout), never a caller's.
func (s *Store) Apply(ctx context.Context, ops ...persistence.Op) ([]uint64, error) {
	if err := persistence.ValidateBatch(ops); err != nil {
		return nil, err
	}
	size := 0
	for _, op := range ops {
		size += len(op.Value)
	}
	return s.c.Apply(ctx, groupcommit.NewRequest(ops, size))
}

// groupAttempts bounds how often a group is run again after a serialization
// failure or a deadlock with another member's transaction (both roll the
// whole transaction back, so running it again is safe).
const groupAttempts = 8

// commitGroup runs group in one transaction and answers every request. A
// request whose expectation fails gets its *ConflictError and changes
// nothing; only a failure of the transaction itself reaches all of them,
// and that error is ambiguous (the commit may have happened) unless it is
// a database error raised before COMMIT.
func (s *Store) commitGroup(group []*request) {
	if s.hooks.taken != nil {
		s.hooks.taken(len(group))
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CommitTimeout)
	// The pipeline sends BEGIN to COMMIT at once, so "before commit" is
	// before the transaction leaves this process.
	var res []outcome
	err := persistence.Hit(s.opts.Failpoint, persistence.FailBeforeCommit)
	if err == nil {
		res, err = s.runGroup(ctx, group)
	}
	cancel()
	elapsed := time.Since(start)
	if err == nil {
		err = persistence.Hit(s.opts.Failpoint, persistence.FailAfterCommit)
	}
	for i, r := range group {
		if err != nil {
			r.Versions, r.Err = nil, err
		} else {
			r.Versions, r.Err = res[i].versions, res[i].err
		}
	}
	groupcommit.Answer(group, elapsed, s.opts.Observe, s.hooks.observe)
}

// outcome is what one batch came to: its versions, or its conflict.
type outcome struct {
	versions []uint64
	err      error
}

func (s *Store) runGroup(ctx context.Context, group []*request) ([]outcome, error) {
	for attempt := 0; ; attempt++ {
		res, err := s.tryGroup(ctx, group)
		if err == nil {
			return res, nil
		}
		if !retriable(err) || attempt+1 >= groupAttempts {
			return nil, fmt.Errorf("persistence/postgres: commit: %w", err)
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return nil, fmt.Errorf("persistence/postgres: commit: %w", err)
		}
	}
}

// tryGroup runs group in one transaction: first as one pipeline, then, if
// an expectation failed, again with a savepoint per batch.
func (s *Store) tryGroup(ctx context.Context, group []*request) ([]outcome, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	// A connection left inside a transaction (an error we could not roll
	// back) is destroyed by the pool on release rather than reused.
	defer pc.Release()
	g := &groupTx{conn: pc.Conn(), group: group, res: make([]outcome, len(group))}
	err = g.run(ctx, s.hooks.savepoints)
	if err != nil && !s.hooks.savepoints && pgCode(err) == guardFailed {
		if err = g.exec(ctx, stRollback); err == nil {
			clear(g.res)
			err = g.run(ctx, true)
		}
	}
	if err != nil {
		g.abort()
		return nil, err
	}
	return g.res, nil
}

// groupTx is one attempt at a group's transaction on one connection.
type groupTx struct {
	conn  *pgx.Conn
	group []*request
	res   []outcome
}

// item describes one queued statement of a pipeline.
type item struct {
	req  int  // the request it belongs to; -1 for BEGIN, SAVEPOINT, COMMIT...
	op   int  // the op of that request
	scan bool // it returns the new version (Put with Any)
}

// run sends BEGIN, every batch and COMMIT. With savepoints, a batch whose
// expectation fails is undone alone and decided by precise, and the
// batches after it are sent again; without, any failure aborts the whole
// transaction and run returns the guard's error.
func (g *groupTx) run(ctx context.Context, savepoints bool) error {
	begun := false
	for next := 0; ; {
		b := &pgx.Batch{}
		var items []item
		control := func(name string) {
			b.Queue(name)
			items = append(items, item{req: -1})
		}
		if !begun {
			control(stBegin)
		}
		for ri := next; ri < len(g.group); ri++ {
			if savepoints {
				control(stSavepoint)
			}
			items = g.queueBatch(b, items, ri)
			if savepoints {
				control(stRelease)
			}
		}
		control(stCommit)
		failed, err := g.send(ctx, b, items)
		if err == nil {
			return nil
		}
		if !savepoints || pgCode(err) != guardFailed || failed < 0 || items[failed].req < 0 {
			return err
		}
		begun = true
		// The batches before this one are in, each released; this one's
		// savepoint is still there.
		ri := items[failed].req
		if err := g.exec(ctx, stRollbackTo); err != nil {
			return err
		}
		if err := g.precise(ctx, ri); err != nil {
			return err
		}
		next = ri + 1
	}
}

// queueBatch queues the guarded statements of request ri and sets the
// versions its success will return.
func (g *groupTx) queueBatch(b *pgx.Batch, items []item, ri int) []item {
	ops := g.group[ri].Batch
	versions := make([]uint64, len(ops))
	g.res[ri] = outcome{versions: versions}
	q := func(j int, scan bool, name string, args ...any) {
		b.Queue(name, args...)
		items = append(items, item{req: ri, op: j, scan: scan})
	}
	for j, op := range ops {
		tbl, key := []byte(op.Table), []byte(op.Key)
		switch op.Kind {
		case persistence.OpPut:
			val := value(op)
			switch op.Expect.Kind {
			case persistence.ExpectAbsent:
				q(j, false, stPutAbsent, tbl, key, val)
				versions[j] = 1
			case persistence.ExpectVersion:
				q(j, false, stPutAt, tbl, key, val, sqlVersion(op.Expect.Version))
				versions[j] = op.Expect.Version + 1
			default:
				q(j, true, stPutAny, tbl, key, val)
			}
		case persistence.OpDelete, persistence.OpCheck:
			switch op.Expect.Kind {
			case persistence.ExpectAbsent:
				// Lock the absent key: the insert holds its index entry to
				// commit, so another member cannot create the key before
				// this batch commits; the delete removes the row again.
				q(j, false, stPutAbsent, tbl, key, []byte{})
				q(j, false, stDeleteAny, tbl, key)
			case persistence.ExpectVersion:
				if op.Kind == persistence.OpDelete {
					q(j, false, stDeleteAt, tbl, key, sqlVersion(op.Expect.Version))
				} else {
					q(j, false, stCheckAt, tbl, key, sqlVersion(op.Expect.Version))
				}
			default:
				if op.Kind == persistence.OpDelete {
					q(j, false, stDeleteAny, tbl, key)
				}
				// A check with Any asserts nothing.
			}
		case persistence.OpDeletePrefix:
			if end, ok := keyprefix.End(key); ok {
				q(j, false, stDeletePrefix, tbl, key, end)
			} else {
				q(j, false, stDeletePrefixOpen, tbl, key)
			}
		}
	}
	return items
}

// send runs one pipeline and reads its results in order. It returns the
// index of the item that failed, with its error, or -1 and the error of
// the pipeline's end.
func (g *groupTx) send(ctx context.Context, b *pgx.Batch, items []item) (int, error) {
	br := g.conn.SendBatch(ctx, b)
	for i, it := range items {
		var err error
		if it.scan {
			var v int64
			if err = br.QueryRow().Scan(&v); err == nil {
				g.res[it.req].versions[it.op] = uint64(v)
			}
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			br.Close()
			return i, err
		}
	}
	return -1, br.Close()
}

// preciseAttempts bounds how often precise reads a key again because
// another transaction created it between the read and the insert.
const preciseAttempts = 16

// precise decides batch ri one op at a time, inside the savepoint that run
// left for it: lock the row and read its version, check the expectation in
// Go, then write with a statement whose rows affected must match. On a
// failed expectation it rolls back to the savepoint and records the
// conflict, naming the op and the version it found.
func (g *groupTx) precise(ctx context.Context, ri int) error {
	ops := g.group[ri].Batch
	versions := make([]uint64, len(ops))
	for j, op := range ops {
		v, conflict, err := g.preciseOp(ctx, op)
		if err != nil {
			return err
		}
		if conflict != nil {
			if err := g.exec(ctx, stRollbackTo); err != nil {
				return err
			}
			g.res[ri] = outcome{err: conflict}
			return g.exec(ctx, stRelease)
		}
		versions[j] = v
	}
	g.res[ri] = outcome{versions: versions}
	return g.exec(ctx, stRelease)
}

func (g *groupTx) preciseOp(ctx context.Context, op persistence.Op) (uint64, *persistence.ConflictError, error) {
	tbl, key := []byte(op.Table), []byte(op.Key)
	switch {
	case op.Kind == persistence.OpDeletePrefix:
		if end, ok := keyprefix.End(key); ok {
			return 0, nil, g.exec(ctx, stDeletePrefix, tbl, key, end)
		}
		return 0, nil, g.exec(ctx, stDeletePrefixOpen, tbl, key)
	case op.Kind == persistence.OpCheck && op.Expect.Kind == persistence.ExpectAny:
		return 0, nil, nil
	case op.Kind == persistence.OpDelete && op.Expect.Kind == persistence.ExpectAny:
		return 0, nil, g.exec(ctx, stDeleteAny, tbl, key)
	}
	for range preciseAttempts {
		var cur int64
		err := g.conn.QueryRow(ctx, stLockRead, tbl, key).Scan(&cur)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, nil, err
		}
		if !op.Expect.Holds(uint64(cur)) {
			return 0, &persistence.ConflictError{Table: op.Table, Key: op.Key, Expected: op.Expect, Actual: uint64(cur)}, nil
		}
		if cur > 0 {
			// The row exists and is locked until commit.
			switch op.Kind {
			case persistence.OpPut:
				if err := g.execOne(ctx, stUpdateAt, tbl, key, value(op), cur); err != nil {
					return 0, nil, err
				}
				return uint64(cur) + 1, nil, nil
			case persistence.OpDelete:
				return 0, nil, g.execOne(ctx, stDeleteVersion, tbl, key, cur)
			default: // a check: the lock is the point
				return 0, nil, nil
			}
		}
		// Absent. A put inserts; a check or delete with Absent inserts and
		// deletes, to lock the absent key as the fast path does. No row
		// inserted means another transaction created the key since the
		// read: read again.
		val := []byte{}
		if op.Kind == persistence.OpPut {
			val = value(op)
		}
		tag, err := g.conn.Exec(ctx, stInsert, tbl, key, val)
		if err != nil {
			return 0, nil, err
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		if op.Kind == persistence.OpPut {
			return 1, nil, nil
		}
		return 0, nil, g.exec(ctx, stDeleteAny, tbl, key)
	}
	return 0, nil, fmt.Errorf("%s/%q changed under each of %d reads", op.Table, op.Key, preciseAttempts)
}

// value is op's value as a parameter: never nil, which pgx would send as
// NULL.
func value(op persistence.Op) []byte {
	if op.Value == nil {
		return []byte{}
	}
	return op.Value
}

func (g *groupTx) exec(ctx context.Context, name string, args ...any) error {
	_, err := g.conn.Exec(ctx, name, args...)
	return err
}

// execOne runs a write on a row this transaction holds locked; anything but
// one row affected means the store's assumptions are broken.
func (g *groupTx) execOne(ctx context.Context, name string, args ...any) error {
	tag, err := g.conn.Exec(ctx, name, args...)
	if err != nil {
		return err
	}
	if n := tag.RowsAffected(); n != 1 {
		return fmt.Errorf("%s on a locked row affected %d rows", name, n)
	}
	return nil
}

// abort rolls back whatever the connection still has open, on a context of
// its own: the group's may be what ended.
func (g *groupTx) abort() {
	if g.conn.IsClosed() || g.conn.PgConn().TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g.conn.Exec(ctx, stRollback)
}

// retriable reports an error after which the database rolled the whole
// transaction back and running it again may succeed: a serialization
// failure (CockroachDB's way of reporting contention; PostgreSQL's under
// REPEATABLE READ or SERIALIZABLE) or a deadlock between members.
func retriable(err error) bool {
	switch pgCode(err) {
	case "40001", "40P01":
		return true
	}
	return false
}

// backoff is the pause before attempt+1: exponential from 1 ms, capped at
// 100 ms, with jitter so that two members that collided do not again.
func backoff(attempt int) time.Duration {
	d := min(time.Millisecond<<attempt, 100*time.Millisecond)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
