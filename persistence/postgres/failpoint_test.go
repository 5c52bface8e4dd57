package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/veilhq/veil/persistence"
)

// The group commit calls its failpoints at the two instants that decide a
// crash's outcome: before the group's transaction leaves the process
// (nothing of it is visible to anyone) and after it committed, before any
// caller is answered (all of it is visible). A crash at the first loses
// the group and nothing acknowledged; at the second it keeps writes that
// nobody acknowledged. veild turns these hooks into exits
// (VEIL_FAILPOINTS); here they look at the database from another
// connection instead.
func TestGroupCommitFailpoints(t *testing.T) {
	for _, noGroup := range []bool{false, true} {
		name := "group"
		if noGroup {
			name = "nogroup"
		}
		t.Run(name, func(t *testing.T) {
			dsn := freshDB(t)
			var mu sync.Mutex
			var seen []string
			var s *Store
			s = openStore(t, dsn, Options{NoGroupCommit: noGroup, Failpoint: func(fp string) error {
				// Read through the pool, not the committer's connection:
				// what another member would see at this instant.
				_, err := s.Get(context.Background(), "fp", "k")
				visible := err == nil
				if err != nil && !errors.Is(err, persistence.ErrNotFound) {
					t.Errorf("get at %s: %v", fp, err)
				}
				mu.Lock()
				seen = append(seen, fp+map[bool]string{true: " visible", false: " absent"}[visible])
				mu.Unlock()
				return nil
			}})
			if _, err := s.Apply(context.Background(), persistence.Put("fp", "k", []byte("v"), persistence.Absent())); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string{persistence.FailBeforeCommit + " absent", persistence.FailAfterCommit + " visible"}
			if len(seen) != 2 || seen[0] != want[0] || seen[1] != want[1] {
				t.Fatalf("failpoints %q, want %q", seen, want)
			}
		})
	}
}
