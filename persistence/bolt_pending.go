package persistence

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	keyprefix "github.com/veilhq/veil/persistence/internal/prefix"
)

// pending holds the groups that are durable in the write-ahead log but not
// yet in bbolt, in order, and indexes their effects by table and key, so
// that reads and the committer's checks see every acknowledged write.
//
// Only the committer adds (after the group's log write is durable, so no
// read ever sees a write that a crash could lose) and only the applier
// drops (after the bbolt transaction that holds the groups has
// committed). A reader that must see bbolt and pending as of one instant
// (Bolt.beginView) begins its bbolt transaction, then takes mu for
// reading and checks that the transaction holds everything dropped so far
// (it begins again if not): the pending writes it then sees are every
// group the transaction lacks, so the two together are one state.
type pending struct {
	mu     sync.RWMutex
	tables map[string]*pendingTable
	groups []loggedGroup
	// dropped is the last sequence number drop forgot: bbolt holds it
	// and everything before it (beginView).
	dropped uint64
	// count is len(groups) and size the bytes of their effects, written
	// under mu and readable without it: a read that finds no group goes
	// straight to bbolt (anything added later is concurrent with it), and
	// the committer checks for room without taking mu.
	count, size atomic.Int64
	// room is signalled when the applier drops groups (backpressure).
	room *sync.Cond
}

type pendingTable struct {
	// keys holds each key's latest pending state, in key order, so that a
	// List reads only its range (a continued chat lists its conversation's
	// messages on every turn, while the messages table has the most
	// pending keys).
	keys *btree.BTreeG[pendingItem]
	// prefixes are the DeletePrefix ops not yet applied: they hide bbolt's
	// records under them. Keys written after one are in keys.
	prefixes []pendingPrefix
}

type pendingItem struct {
	key string
	pendingEntry
}

func lessItem(a, b pendingItem) bool { return a.key < b.key }

// ascendPrefix calls fn with every item whose key starts with prefix, in
// order, until fn returns false.
func (t *pendingTable) ascendPrefix(prefix string, fn func(pendingItem) bool) {
	t.keys.AscendGreaterOrEqual(pendingItem{key: prefix}, func(it pendingItem) bool {
		return strings.HasPrefix(it.key, prefix) && fn(it)
	})
}

// prefixItems returns the items under prefix.
func (t *pendingTable) prefixItems(prefix string) []pendingItem {
	var out []pendingItem
	t.ascendPrefix(prefix, func(it pendingItem) bool { out = append(out, it); return true })
	return out
}

// pendingEntry is a key's latest logged state: its stored record (version
// then value), or nil when it was deleted.
type pendingEntry struct {
	seq uint64
	rec []byte
}

type pendingPrefix struct {
	seq    uint64
	prefix string
}

// loggedGroup is one log record: a committed group's effects.
type loggedGroup struct {
	seq   uint64
	ops   []logOp
	bytes int
}

func newPending() *pending {
	p := &pending{tables: map[string]*pendingTable{}}
	p.room = sync.NewCond(&p.mu)
	return p
}

func (p *pending) table(name string) *pendingTable {
	t := p.tables[name]
	if t == nil {
		t = &pendingTable{keys: btree.NewG(16, lessItem)}
		p.tables[name] = t
	}
	return t
}

// add records a group whose log write is durable.
func (p *pending) add(seq uint64, ops []logOp) {
	g := loggedGroup{seq: seq, ops: ops}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, op := range ops {
		g.bytes += len(op.table) + len(op.key) + len(op.rec)
		t := p.table(op.table)
		switch op.kind {
		case OpPut:
			t.keys.ReplaceOrInsert(pendingItem{op.key, pendingEntry{seq: seq, rec: op.rec}})
		case OpDelete:
			t.keys.ReplaceOrInsert(pendingItem{op.key, pendingEntry{seq: seq}})
		case OpDeletePrefix:
			for _, it := range t.prefixItems(op.key) {
				t.keys.ReplaceOrInsert(pendingItem{it.key, pendingEntry{seq: seq}})
			}
			t.prefixes = append(t.prefixes, pendingPrefix{seq: seq, prefix: op.key})
		}
	}
	p.groups = append(p.groups, g)
	p.count.Store(int64(len(p.groups)))
	p.size.Add(int64(g.bytes))
}

// take returns the oldest groups not yet applied, up to maxBytes of
// effects (at least one group).
func (p *pending) take(maxBytes int) []loggedGroup {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n, size := 0, 0
	for n < len(p.groups) {
		if n > 0 && size+p.groups[n].bytes > maxBytes {
			break
		}
		size += p.groups[n].bytes
		n++
	}
	return slices.Clone(p.groups[:n])
}

// drop forgets groups, the oldest pending ones, now that bbolt holds them
// durably. A key written again by a later group keeps its entry.
func (p *pending) drop(groups []loggedGroup) {
	if len(groups) == 0 {
		return
	}
	upTo := groups[len(groups)-1].seq
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropped = upTo
	for _, g := range groups {
		for _, op := range g.ops {
			t := p.tables[op.table]
			if t == nil {
				continue
			}
			if op.kind == OpDeletePrefix {
				for _, it := range t.prefixItems(op.key) {
					if it.seq <= upTo {
						t.keys.Delete(it)
					}
				}
				t.prefixes = slices.DeleteFunc(t.prefixes, func(x pendingPrefix) bool { return x.seq <= upTo })
			} else if it, ok := t.keys.Get(pendingItem{key: op.key}); ok && it.seq <= upTo {
				t.keys.Delete(it)
			}
			if t.keys.Len() == 0 && len(t.prefixes) == 0 {
				delete(p.tables, op.table)
			}
		}
		p.size.Add(-int64(g.bytes))
	}
	n := copy(p.groups, p.groups[len(groups):])
	clear(p.groups[n:])
	p.groups = p.groups[:n]
	p.count.Store(int64(len(p.groups)))
	p.room.Broadcast()
}

// wakeWaiters wakes a committer waiting for room, to look again.
func (p *pending) wakeWaiters() {
	p.mu.Lock()
	p.room.Broadcast()
	p.mu.Unlock()
}

// lookup answers what the pending writes say of a key: decided is false
// when they say nothing (bbolt knows), else rec is its record or nil when
// it is deleted. The caller holds mu.
func (p *pending) lookup(table, key string) (rec []byte, decided bool) {
	t := p.tables[table]
	if t == nil {
		return nil, false
	}
	if it, ok := t.keys.Get(pendingItem{key: key}); ok {
		return it.rec, true
	}
	for _, x := range t.prefixes {
		if strings.HasPrefix(key, x.prefix) {
			return nil, true
		}
	}
	return nil, false
}

// get is lookup for a reader: it takes mu.
func (p *pending) get(table, key string) ([]byte, bool) {
	if p.count.Load() == 0 {
		return nil, false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.lookup(table, key)
}

// pendingKV is one key of a snapshot: rec nil means deleted.
type pendingKV struct {
	key string
	rec []byte
}

// pendingRange is what the pending writes say of a List's range: the keys
// they decide, in the walk's order, and the prefixes whose bbolt records
// they hide.
type pendingRange struct {
	keys     []pendingKV
	prefixes []string
}

// hides reports whether a pending prefix deletion hides bbolt's key.
func (r *pendingRange) hides(key []byte) bool {
	for _, p := range r.prefixes {
		if len(key) >= len(p) && string(key[:len(p)]) == p {
			return true
		}
	}
	return false
}

// snapshot collects the pending state of q's range in table. The caller
// holds mu.
func (p *pending) snapshot(table string, q Query) pendingRange {
	t := p.tables[table]
	if t == nil {
		return pendingRange{}
	}
	var r pendingRange
	for _, x := range t.prefixes {
		r.prefixes = append(r.prefixes, x.prefix)
	}
	take := func(it pendingItem) bool {
		if !strings.HasPrefix(it.key, q.Prefix) {
			return false
		}
		r.keys = append(r.keys, pendingKV{key: it.key, rec: it.rec})
		return true
	}
	switch {
	case !q.Reverse && q.After != "" && q.After >= q.Prefix:
		t.keys.AscendGreaterOrEqual(pendingItem{key: q.After}, func(it pendingItem) bool {
			return it.key == q.After || take(it)
		})
	case !q.Reverse:
		t.keys.AscendGreaterOrEqual(pendingItem{key: q.Prefix}, take)
	default:
		// Down from the end of the range: below After when it is set
		// (and within the prefix), else from the prefix's last key.
		hi, bounded := keyprefix.End([]byte(q.Prefix))
		if q.After != "" && (!bounded || q.After < string(hi)) {
			hi, bounded = []byte(q.After), true
		}
		if bounded {
			t.keys.DescendLessOrEqual(pendingItem{key: string(hi)}, func(it pendingItem) bool {
				return it.key == string(hi) || take(it)
			})
		} else {
			t.keys.Descend(take)
		}
	}
	return r
}
