package state

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/internal/fakeclock"
)

func TestMemories(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	m := NewMemories(s, "agent-a", clk.Now)
	a, err := m.Save(ctx, tools.Memory{Content: "Prefers USDC", Type: "preference"})
	if err != nil || a.Importance != 3 || a.ID == "" || !a.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("%+v %v", a, err)
	}
	clk.Set(clk.Now().Add(time.Minute))
	// Same words: the existing memory is updated, not copied.
	b, err := m.Save(ctx, tools.Memory{Content: "  prefers   usdc ", Type: "fact", Importance: 5})
	if err != nil || b.ID != a.ID || b.Importance != 5 || b.Type != "fact" {
		t.Errorf("dedupe: %+v %v", b, err)
	}
	c, _ := m.Save(ctx, tools.Memory{Content: "Landlord is carol.veil", Type: "contact", Importance: 5})
	d, _ := m.Save(ctx, tools.Memory{Content: "Trivia", Type: "fact", Importance: 1})
	list, _ := m.List(ctx)
	if len(list) != 3 || list[0].ID != c.ID || list[1].ID != a.ID || list[2].ID != d.ID {
		t.Errorf("order: %+v", list)
	}
	// A preset id is idempotent.
	id := "0f000000-0000-4000-8000-000000000000"
	e1, _ := m.Save(ctx, tools.Memory{ID: id, Content: "x1", Type: "fact"})
	e2, err := m.Save(ctx, tools.Memory{ID: id, Content: "x1", Type: "fact"})
	if err != nil || e1.ID != e2.ID || e1.ID != id {
		t.Errorf("preset id: %+v %+v %v", e1, e2, err)
	}
	for _, bad := range []tools.Memory{
		{Content: "", Type: "fact"}, {Content: strings.Repeat("x", tools.MaxMemoryLen+1), Type: "fact"},
		{Content: "x", Type: "secret"}, {Content: "x", Type: "fact", Importance: 6}, {Content: "x", Type: "fact", ID: "zz"},
	} {
		if _, err := m.Save(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Save(%+v) = %v", bad, err)
		}
	}
	if err := m.Delete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, d.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if list, _ := m.List(ctx); len(list) != 3 {
		t.Errorf("after delete: %d", len(list))
	}
}

func TestMemoryCapUnderConcurrency(t *testing.T) {
	s := openStore(t)
	clk := fakeclock.New(at(t, "2027-01-31T10:00:00Z"))
	m := NewMemories(s, "agent-a", clk.Now)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two goroutines share m; two have instances of their own
			// (another activation), which only the store's versions
			// keep in line.
			m := m
			if w >= 2 {
				m = NewMemories(s, "agent-a", clk.Now)
			}
			for i := range (MaxMemories + 20) / 4 {
				if _, err := m.Save(ctx, tools.Memory{Content: fmt.Sprintf("note %d-%d", w, i), Type: "fact", Importance: 2}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	list, _ := m.List(ctx)
	var meta memoryMeta
	getJSON(ctx, s, TableMemoryMeta, "agent-a", &meta)
	if len(list) != MaxMemories || meta.Count != MaxMemories {
		t.Fatalf("%d memories, meta %d; want %d", len(list), meta.Count, MaxMemories)
	}
	// Full: a less important memory is refused, a more important one
	// replaces the oldest least important.
	if _, err := m.Save(ctx, tools.Memory{Content: "minor", Type: "fact", Importance: 1}); !errors.Is(err, ErrMemoryFull) {
		t.Errorf("minor: %v", err)
	}
	clk.Set(clk.Now().Add(time.Hour))
	if _, err := m.Save(ctx, tools.Memory{Content: "major", Type: "instruction", Importance: 5}); err != nil {
		t.Fatal(err)
	}
	list, _ = m.List(ctx)
	if len(list) != MaxMemories || list[0].Content != "major" {
		t.Errorf("%d, first %+v", len(list), list[0])
	}
}
