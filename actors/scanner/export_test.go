package scanner

import (
	"context"

	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/persistence"
)

// ForgetCursors deletes every announcement cursor of chain (the shards and
// the cursor from before sharding): the next pass starts from genesis, as
// after a lost cursor table.
func ForgetCursors(ctx context.Context, st persistence.Store, chain string) error {
	_, err := st.Apply(ctx, persistence.DeletePrefix(chainactor.TableScanCursors, shardPrefix(chain)),
		persistence.Delete(chainactor.TableScanCursors, legacyKey(chain), persistence.Any()))
	return err
}

// Shards lists chain's shard records as "<view id>/<member>" → lanes.
func (s *Scanner) Shards(ctx context.Context) (map[string][]string, error) {
	recs, err := s.shards(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, r := range recs {
		for _, l := range r.Lanes {
			out[r.view+"/"+r.Self] = append(out[r.view+"/"+r.Self], l.Cursor)
		}
	}
	return out, nil
}

// Drain waits for the deliveries Sent started (they run on their own).
func (n *Instant) Drain() { n.wg.Wait() }

// ShardRecordSizes lists the encoded size of each of chain's shard records
// ("<view id>/<member>" → bytes) and their lanes' paths, as stored.
func ShardRecordSizes(ctx context.Context, st persistence.Store, chain string) (map[string]int, error) {
	recs, err := st.List(ctx, chainactor.TableScanCursors, persistence.Query{Prefix: shardPrefix(chain)})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, r := range recs {
		out[r.Key[len(shardPrefix(chain)):]] = len(r.Value)
	}
	return out, nil
}

// PutRawShard writes a shard record as is (a record from an older version).
func PutRawShard(ctx context.Context, st persistence.Store, chain, view, member string, raw []byte) error {
	_, err := st.Apply(ctx, persistence.Put(chainactor.TableScanCursors, shardKey(chain, view, member), raw, persistence.Any()))
	return err
}

// ViewID is the view id of a member list.
func ViewID(members []string) string { return View{Members: members}.id() }
