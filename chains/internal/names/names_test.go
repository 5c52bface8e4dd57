package names

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/edstealth"
	"github.com/veilhq/veil/persistence"
)

// history is a registry account's history, read in pages of two.
type history struct {
	entries []Entry
	reads   int
}

func (h *history) page(_ context.Context, cursor string) ([]Entry, bool, error) {
	h.reads++
	start := 0
	for i, e := range h.entries {
		if e.Cursor == cursor {
			start = i + 1
		}
	}
	end := min(start+2, len(h.entries))
	return h.entries[start:end], end-start == 2, nil
}

func newMeta(t *testing.T) (string, string) {
	t.Helper()
	var spend, view [32]byte
	_, _ = rand.Read(spend[:])
	_, _ = rand.Read(view[:])
	k, err := edstealth.KeysFromSeeds(edstealth.Solana, spend, view)
	if err != nil {
		t.Fatal(err)
	}
	m := k.Meta
	return hex.EncodeToString(append(m.Spend[:], m.View[:]...)), m.String()
}

func TestIndexFirstRegistrationOwnsTheName(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "n.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m1, s1 := newMeta(t)
	m2, s2 := newMeta(t)
	m3, _ := newMeta(t)
	h := &history{entries: []Entry{
		{Cursor: "1", Name: "alice", Record: Record{Owner: "A", Meta: m1, TxHash: "t1"}},
		{Cursor: "2"}, // registers nothing
		{Cursor: "3", Name: "alice", Record: Record{Owner: "B", Meta: m3, TxHash: "t3"}}, // taken
		{Cursor: "4", Name: "bob", Record: Record{Owner: "B", Meta: m3, TxHash: "t4"}},
		{Cursor: "5", Name: "bob", Record: Record{Owner: "B", Meta: m2, TxHash: "t5"}}, // the owner replaces it
	}}
	x := &Index{Store: st, Names: "names", Meta: "meta", Chain: chains.Solana, Scheme: edstealth.Solana, Page: h.page}

	if got, err := x.Resolve(ctx, "alice.veil"); err != nil || got != s1 {
		t.Fatalf("Resolve(alice) = %q, %v; want the first registration's %q", got, err, s1)
	}
	if got, err := x.Resolve(ctx, "bob"); err != nil || got != s2 {
		t.Fatalf("Resolve(bob) = %q, %v; want the owner's latest %q", got, err, s2)
	}
	if _, err := x.Resolve(ctx, "carol"); !errors.Is(err, chains.ErrNotFound) {
		t.Fatalf("Resolve(carol) = %v; want ErrNotFound", err)
	}
	if _, err := x.Check(ctx, "alice", "B", m3); !errors.Is(err, chains.ErrNameTaken) {
		t.Fatalf("Check(alice by B) = %v; want ErrNameTaken", err)
	}
	if h, err := x.Check(ctx, "alice", "A", m1); err != nil || h != "t1" {
		t.Fatalf("Check(alice again) = %q, %v; want the registration t1", h, err)
	}
	if h, err := x.Check(ctx, "alice", "A", m2); err != nil || h != "" {
		t.Fatalf("Check(alice, new meta) = %q, %v; want a new registration", h, err)
	}
	// The cursor is stored: a later sync reads only what is new.
	reads := h.reads
	if err := x.Sync(ctx); err != nil || h.reads != reads+1 {
		t.Fatalf("Sync: %v after %d page reads; want one read from the stored cursor", err, h.reads-reads)
	}
}

func TestValid(t *testing.T) {
	m, _ := newMeta(t)
	raw, _ := hex.DecodeString(m)
	for _, tc := range []struct {
		name string
		raw  []byte
		want bool
	}{
		{"alice", raw, true},
		{"Alice", raw, false},      // not as ParseName leaves it
		{"alice.veil", raw, false}, // the suffix is not part of the name
		{"alice", raw[:63], false},
		{"alice", make([]byte, 64), false}, // not valid keys
	} {
		if got := Valid(tc.name, tc.raw, edstealth.Solana); got != tc.want {
			t.Errorf("Valid(%q, %d bytes) = %v, want %v", tc.name, len(tc.raw), got, tc.want)
		}
	}
}
