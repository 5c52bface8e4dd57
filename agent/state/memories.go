package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// MaxMemories caps one agent's memories. When full, a new memory replaces
// the oldest of the least important ones if that is not more important
// than the new one; otherwise Save fails with ErrMemoryFull.
const MaxMemories = 200

// MemoryTypes are the valid memory types.
var MemoryTypes = []string{"preference", "fact", "contact", "instruction"}

// Memories is one agent's long-term memory. It implements tools.Memories.
type Memories struct {
	store   persistence.Store
	agentID string
	now     func() time.Time
	// mu serialises this instance's writes (they would only conflict on
	// the meta record); writers elsewhere are handled by its version.
	mu sync.Mutex
}

var _ tools.Memories = (*Memories)(nil)

// NewMemories serves the memories of agentID.
func NewMemories(store persistence.Store, agentID string, now func() time.Time) *Memories {
	return &Memories{store: store, agentID: agentID, now: clock(now)}
}

func (s *Memories) key(id string) string { return s.agentID + "/" + id }

type memoryMeta struct {
	Count int `json:"count"`
}

func normContent(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// Save stores a memory. Saving content the agent already remembers (same
// words, ignoring case and spacing) updates that memory's type and
// importance instead of adding a copy. A preset m.ID makes it idempotent.
// Importance 0 means 3. Saves of one agent are serialised through a
// per-agent meta record, so the cap holds under concurrency.
func (s *Memories) Save(ctx context.Context, m tools.Memory) (tools.Memory, error) {
	if err := checkAgentID(s.agentID); err != nil {
		return tools.Memory{}, err
	}
	m.Content = strings.TrimSpace(m.Content)
	switch n := utf8.RuneCountInString(m.Content); {
	case n == 0:
		return tools.Memory{}, fmt.Errorf("%w: empty memory", ErrInvalid)
	case n > tools.MaxMemoryLen:
		return tools.Memory{}, fmt.Errorf("%w: memory of %d characters (max %d)", ErrInvalid, n, tools.MaxMemoryLen)
	}
	if !slices.Contains(MemoryTypes, m.Type) {
		return tools.Memory{}, fmt.Errorf("%w: memory type %q: use one of %s", ErrInvalid, m.Type, strings.Join(MemoryTypes, ", "))
	}
	if m.Importance == 0 {
		m.Importance = 3
	}
	if m.Importance < 1 || m.Importance > 5 {
		return tools.Memory{}, fmt.Errorf("%w: importance %d (1 to 5)", ErrInvalid, m.Importance)
	}
	id, preset, err := newID(m.ID)
	if err != nil {
		return tools.Memory{}, err
	}
	m.ID = id
	s.mu.Lock()
	defer s.mu.Unlock()
	var out tools.Memory
	err = retry(ctx, func() error {
		var meta memoryMeta
		mv, err := getJSON(ctx, s.store, TableMemoryMeta, s.agentID, &meta)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		all, vers, err := s.list(ctx)
		if err != nil {
			return err
		}
		if preset {
			for _, x := range all {
				if x.ID == id {
					out = x
					return nil
				}
			}
		}
		ops := []persistence.Op{}
		count := len(all)
		norm := normContent(m.Content)
		for _, x := range all {
			if normContent(x.Content) == norm {
				if x.Type == m.Type && x.Importance == m.Importance {
					out = x
					return nil
				}
				x.Type, x.Importance = m.Type, m.Importance
				ops = append(ops, persistence.Put(TableMemories, s.key(x.ID), mustJSON(x), persistence.AtVersion(vers[x.ID])))
				out = x
				break
			}
		}
		if len(ops) == 0 {
			if count >= MaxMemories {
				victim := -1
				for i, x := range all {
					if x.Importance > m.Importance {
						continue
					}
					if victim < 0 || x.Importance < all[victim].Importance ||
						x.Importance == all[victim].Importance && x.CreatedAt.Before(all[victim].CreatedAt) {
						victim = i
					}
				}
				if victim < 0 {
					return fmt.Errorf("%w: %d memories, all more important than this one (importance %d)", ErrMemoryFull, count, m.Importance)
				}
				v := all[victim]
				ops = append(ops, persistence.Delete(TableMemories, s.key(v.ID), persistence.AtVersion(vers[v.ID])))
				count--
			}
			m.CreatedAt = s.now().UTC()
			ops = append(ops, persistence.Put(TableMemories, s.key(m.ID), mustJSON(m), persistence.Absent()))
			count++
			out = m
		}
		ops = append(ops, persistence.Put(TableMemoryMeta, s.agentID, mustJSON(memoryMeta{Count: count}), expectVersion(mv)))
		_, err = s.store.Apply(ctx, ops...)
		return err
	})
	if err != nil {
		return tools.Memory{}, err
	}
	return out, nil
}

func (s *Memories) list(ctx context.Context) ([]tools.Memory, map[string]uint64, error) {
	recs, err := s.store.List(ctx, TableMemories, persistence.Query{Prefix: s.agentID + "/"})
	if err != nil {
		return nil, nil, err
	}
	out, err := jsonrec.Decode[tools.Memory](TableMemories, recs)
	if err != nil {
		return nil, nil, err
	}
	vers := make(map[string]uint64, len(recs))
	for i, m := range out {
		vers[m.ID] = recs[i].Version
	}
	return out, vers, nil
}

// List returns the agent's memories, most important first, then newest
// first.
func (s *Memories) List(ctx context.Context) ([]tools.Memory, error) {
	out, _, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Importance != out[j].Importance {
			return out[i].Importance > out[j].Importance
		}
		return out[i].CreatedAt.After(out[j].CreatedAt)
	})
	return out, nil
}

// Delete forgets one memory.
func (s *Memories) Delete(ctx context.Context, id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("%w: memory %q", ErrNotFound, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return retry(ctx, func() error {
		var meta memoryMeta
		mv, err := getJSON(ctx, s.store, TableMemoryMeta, s.agentID, &meta)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		rec, err := s.store.Get(ctx, TableMemories, s.key(id))
		if errors.Is(err, persistence.ErrNotFound) {
			return fmt.Errorf("%w: memory %s", ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		_, err = s.store.Apply(ctx,
			persistence.Delete(TableMemories, s.key(id), persistence.AtVersion(rec.Version)),
			persistence.Put(TableMemoryMeta, s.agentID, mustJSON(memoryMeta{Count: max(meta.Count-1, 0)}), expectVersion(mv)),
		)
		return err
	})
}
