package intents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

type attempt struct {
	Tx string `json:"tx"`
}

func TestSettleResumesOnlyPendingIntentsWithAnAttempt(t *testing.T) {
	ctx := context.Background()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "i.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for key, it := range map[string]*Intent[attempt]{
		"pending":     {Op: "send", Source: "a", State: Pending, Attempts: []attempt{{Tx: "1"}}},
		"unreachable": {Op: "send", Source: "b", State: Pending, Attempts: []attempt{{Tx: "2"}}},
		"done":        {Op: "send", Source: "a", State: Done, Attempts: []attempt{{Tx: "3"}}},
		"unsent":      {Op: "send", Source: "a", State: Pending},
	} {
		if _, err := Save(ctx, st, "t", key, it, 0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	locked := map[string]bool{}
	var resumed []string
	lock := func(src string) func() {
		mu.Lock()
		locked[src] = true
		mu.Unlock()
		return func() { mu.Lock(); locked[src] = false; mu.Unlock() }
	}
	err = Settle(ctx, st, "t", slog.New(slog.NewTextHandler(io.Discard, nil)), lock,
		func(_ context.Context, key string, it *Intent[attempt], ver uint64) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			if !locked[it.Source] || ver == 0 {
				t.Errorf("resume %s: source locked %v, version %d", key, locked[it.Source], ver)
			}
			resumed = append(resumed, key)
			if key == "unreachable" {
				return false, fmt.Errorf("rpc down: %w", chains.ErrUnavailable)
			}
			return true, errors.New("logged, not returned")
		})
	sort.Strings(resumed)
	if got := strings.Join(resumed, ","); got != "pending,unreachable" {
		t.Errorf("resumed %s, want pending,unreachable", got)
	}
	if !errors.Is(err, chains.ErrUnavailable) || strings.Contains(err.Error(), "logged") {
		t.Errorf("Settle = %v, want only the unavailable error", err)
	}
}

func TestFingerprintAndNewKey(t *testing.T) {
	for _, tc := range []struct {
		a, b []string
		same bool
	}{
		{[]string{"send", "x", "1"}, []string{"send", "x", "1"}, true},
		{[]string{"send", "x", "1"}, []string{"send", "x", "2"}, false},
		{[]string{"ab", "c"}, []string{"a", "bc"}, false}, // parts are separated
	} {
		if got := Fingerprint(tc.a...) == Fingerprint(tc.b...); got != tc.same {
			t.Errorf("Fingerprint(%q) == Fingerprint(%q): %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
	k := NewKey(bytes.NewReader(bytes.Repeat([]byte{0xab}, 16)))
	if k != "auto-"+strings.Repeat("ab", 16) {
		t.Errorf("NewKey = %q", k)
	}
}
