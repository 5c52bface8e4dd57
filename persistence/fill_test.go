package persistence

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestAppendedRecordsFillTheirPages: records appended at the end of their
// prefixes' ranges, a few per transaction as chat turns are, leave bbolt's
// leaf pages mostly full, on the log's path and on the path without it.
// With bbolt's default split (half full) they fill ~50%.
func TestAppendedRecordsFillTheirPages(t *testing.T) {
	for _, noLog := range []bool{false, true} {
		t.Run(fmt.Sprintf("nolog=%v", noLog), func(t *testing.T) {
			ctx := context.Background()
			s, err := OpenBolt(filepath.Join(t.TempDir(), "veil.db"), BoltOptions{NoLog: noLog, ApplyDelay: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			value := make([]byte, 200)
			for seq := range 300 {
				var ops []Op
				for agent := range 8 { // eight ranges, each appended to
					ops = append(ops, Put("messages", fmt.Sprintf("agent-%d/%016x", agent, seq), value, Absent()))
				}
				if _, err := s.Apply(ctx, ops...); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.WaitApplied(); err != nil {
				t.Fatal(err)
			}
			var st bolt.BucketStats
			if err := s.db.View(func(tx *bolt.Tx) error { st = tx.Bucket([]byte("messages")).Stats(); return nil }); err != nil {
				t.Fatal(err)
			}
			fill := float64(st.LeafInuse) / float64(st.LeafAlloc)
			t.Logf("%d leaf pages, %.0f%% used", st.LeafPageN, 100*fill)
			if fill < 0.75 {
				t.Errorf("leaf pages %.0f%% used, want at least 75%%: appended records leave their pages half empty", 100*fill)
			}
		})
	}
}
