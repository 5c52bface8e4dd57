package audit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veilhq/veil/persistence"
)

func openStore(t *testing.T) persistence.Store {
	t.Helper()
	st, err := persistence.OpenBolt(filepath.Join(t.TempDir(), "veil.db"), persistence.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestAppendListPrune(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, acc := range []string{"a", "a", "b", "a", "a"} {
		if _, err := Append(ctx, st, Record{AccountID: acc, Time: t0.Add(time.Duration(i) * time.Hour), Action: "x", Outcome: OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Append(ctx, st, Record{Action: "x"}); err == nil {
		t.Fatal("a record without an account was written")
	}
	recs, next, err := List(ctx, st, "a", Filter{})
	if err != nil || len(recs) != 4 || next != "" || !recs[0].Time.Equal(t0.Add(4*time.Hour)) {
		t.Fatalf("list a: %d %q %v", len(recs), next, err)
	}
	recs, _, _ = List(ctx, st, "a", Filter{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)})
	if len(recs) != 2 {
		t.Fatalf("window: %d records", len(recs))
	}
	// Prune keeps what is newer than the cut, of every account named.
	n, err := Prune(ctx, st, []string{"a", "b"}, t0.Add(150*time.Minute))
	if err != nil || n != 3 {
		t.Fatalf("prune: %d %v", n, err)
	}
	recs, _, _ = List(ctx, st, "a", Filter{})
	b, _, _ := List(ctx, st, "b", Filter{})
	if len(recs) != 2 || len(b) != 0 {
		t.Fatalf("after prune: a %d, b %d", len(recs), len(b))
	}
}

func TestCSVKeepsFormulasInert(t *testing.T) {
	var sb strings.Builder
	if err := WriteCSV(&sb, []Record{{ID: "1", Detail: "=HYPERLINK(\"x\")", PaymentIDs: []string{"p1", "p2"}}}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), `'=HYPERLINK`) || !strings.Contains(sb.String(), "p1 p2") {
		t.Fatalf("csv: %s", sb.String())
	}
}
