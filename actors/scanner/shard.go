package scanner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/persistence"
)

// View is one member's view of the cluster at one moment: the members
// (their addresses, the same list request placement uses), itself, and
// which agents it owns in exactly that list. A pass takes one View and
// keeps it to the end, so that a shard's cursor always means "delivered to
// the agents this member owns in this view".
type View struct {
	Members []string
	Self    string
	// Place is the placement requests use (cmd/veild wires
	// runtime/cluster.Place): the member of members that owns the agent.
	// The scanner also asks it about the member lists of older views.
	Place func(members []string, agentID string) string
}

// Owns reports whether Self owns the agent in this view.
func (v View) Owns(agentID string) bool { return v.Place(v.Members, agentID) == v.Self }

// singleNode is the view of a scanner without Placement: one member that
// owns every agent.
func singleNode() View {
	return View{Members: []string{"local"}, Self: "local", Place: func([]string, string) string { return "local" }}
}

// id names the member list: equal lists, equal ids.
func (v View) id() string {
	ms := slices.Clone(v.Members)
	slices.Sort(ms)
	h := sha256.Sum256([]byte(strings.Join(ms, "\n")))
	return hex.EncodeToString(h[:8])
}

// shardPrefix is where a chain's shard records live in the cursor table
// (actors/chain.TableScanCursors): "<chain>/scanner-shard/<view id>/<member>".
func shardPrefix(chain string) string { return chain + "/" + ConsumerAnnouncements + "-shard/" }

func shardKey(chain, view, member string) string { return shardPrefix(chain) + view + "/" + member }

// shard is one member's cursors under one view. Each lane is a cursor of
// the chain's announcements (the connector's format, which need not be
// ordered) from which this member scans for every agent it owns; a new
// shard starts with the lanes of every shard of other views, so an agent
// that moved here resumes from no later than where its last owner stopped,
// whichever that was (see docs/scanner.md, "Sharding").
type shard struct {
	Members []string `json:"members"`
	Self    string   `json:"self"`
	Lanes   []lane   `json:"lanes"`
	// Gen is one more than the highest Gen of the shards this one was
	// made from: views come and go in no order of their own, and a member
	// collecting old shards must not delete newer ones.
	Gen uint64 `json:"gen"`

	key     string
	version uint64
}

// lane is one cursor of a shard and the agents it is the cursor of: those
// placed, along one of Paths, on each member the path names in that
// member's view (the shards the lane was copied from). No paths: every
// agent the shard owns. A lane delivers only to its agents, so a shard
// made from lanes at different cursors does not deliver a payment again
// to an agent whose old shard had already delivered it.
type lane struct {
	Cursor string   `json:"cursor"`
	Paths  [][]hold `json:"paths,omitempty"`
}

// hold is one step of a lane's path: the agents member owned in members.
type hold struct {
	Members []string `json:"members"`
	Member  string   `json:"member"`
}

// has reports whether the agent is one of the lane's (place is the
// placement).
func (l *lane) has(place func([]string, string) string, id string) bool {
	if len(l.Paths) == 0 {
		return true
	}
	for _, p := range l.Paths {
		on := true
		for _, h := range p {
			if place(h.Members, id) != h.Member {
				on = false
				break
			}
		}
		if on {
			return true
		}
	}
	return false
}

// from is the lane l of the shard held by member in members, as a lane of
// another shard: the same cursor, for the agents that member owned in
// members. The agents are a superset of those l had there (l's own paths
// are dropped): the copy may deliver again what l's shard had delivered
// (delivery is idempotent) but misses nothing, and its paths stay one hold
// long however many views the lane went through (docs/scanner.md, "Bound").
func (l lane) from(members []string, member string) lane {
	return lane{Cursor: l.Cursor, Paths: [][]hold{{{Members: slices.Sorted(slices.Values(members)), Member: member}}}}
}

// compact bounds a lane read from the store: each path keeps only its last
// hold (a superset of its agents, as from does) and equal paths are kept
// once, so a record written before the bound existed, however large, is
// written back small by its next save.
func (l *lane) compact() {
	if len(l.Paths) == 0 {
		return
	}
	seen := map[string]bool{}
	var out [][]hold
	for _, p := range l.Paths {
		if len(p) == 0 {
			// An empty path has every agent: so has the lane.
			l.Paths = nil
			return
		}
		h := p[len(p)-1]
		h.Members = slices.Sorted(slices.Values(h.Members))
		k := h.Member + "\x00" + strings.Join(h.Members, "\n")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, []hold{h})
	}
	slices.SortFunc(out, func(a, b []hold) int {
		return strings.Compare(a[0].Member+"\x00"+strings.Join(a[0].Members, "\n"), b[0].Member+"\x00"+strings.Join(b[0].Members, "\n"))
	})
	l.Paths = out
}

// mergeLanes joins the lanes with equal cursors (their agents together),
// in cursor order.
func mergeLanes(ls []lane) []lane {
	byCursor := map[string]int{}
	var out []lane
	for _, l := range ls {
		i, ok := byCursor[l.Cursor]
		if !ok {
			byCursor[l.Cursor] = len(out)
			out = append(out, l)
			continue
		}
		if len(out[i].Paths) == 0 || len(l.Paths) == 0 {
			out[i].Paths = nil // every agent
		} else {
			out[i].Paths = append(out[i].Paths, l.Paths...)
		}
	}
	for i := range out {
		out[i].compact()
	}
	slices.SortFunc(out, func(a, b lane) int { return strings.Compare(a.Cursor, b.Cursor) })
	return out
}

// loadShard reads this member's shard for v, creating it from the other
// views' shards (and the cursor of a scanner from before sharding) when it
// does not exist yet.
func (s *Scanner) loadShard(ctx context.Context, v View, vid string) (*shard, error) {
	key := shardKey(string(s.chain), vid, v.Self)
	rec, err := s.opts.Store.Get(ctx, chainactor.TableScanCursors, key)
	if err == nil {
		sh := &shard{key: key, version: rec.Version}
		if err := json.Unmarshal(rec.Value, sh); err != nil {
			return nil, fmt.Errorf("scanner: shard %s: %w", key, err)
		}
		if len(sh.Lanes) == 0 {
			sh.Lanes = []lane{{}}
		}
		// A record from before the bound: its next save writes it back
		// compacted.
		sh.Lanes = mergeLanes(sh.Lanes)
		return sh, nil
	}
	if !errors.Is(err, persistence.ErrNotFound) {
		return nil, err
	}
	recs, err := s.shards(ctx)
	if err != nil {
		return nil, err
	}
	var lanes []lane
	gen := uint64(1)
	for _, r := range recs {
		if r.view == vid {
			// A sibling in this view covers only its own agents.
			continue
		}
		gen = max(gen, r.Gen+1)
		for _, l := range r.Lanes {
			if r.view == legacyView {
				lanes = append(lanes, l)
			} else {
				lanes = append(lanes, l.from(r.Members, r.Self))
			}
		}
	}
	var also []persistence.Op
	if len(lanes) == 0 {
		// Nothing was scanned before (or every record but this view's is
		// gone): from genesis, which misses nothing. The other members' agents start
		// from genesis too, and must still do so once this shard exists:
		// the cursor from before sharding, at genesis, says it for every
		// agent until a view's shards cover them all (collect). Without
		// it a view whose members had not all made their shard left the
		// agents of the missing ones in no lane of the next view's shards.
		// Any version: members starting together all write genesis (a
		// member that writes it after a collect only makes the next new
		// shard read again from genesis, which misses nothing).
		// A member alone in its view owns every agent: no other needs it.
		lanes = []lane{{}}
		if len(v.Members) > 1 {
			also = append(also, persistence.Put(chainactor.TableScanCursors, legacyKey(string(s.chain)), []byte{}, persistence.Any()))
		}
	}
	lanes = mergeLanes(lanes)
	sh := &shard{Members: slices.Sorted(slices.Values(v.Members)), Self: v.Self, Lanes: lanes, Gen: gen, key: key}
	if err := s.saveShard(ctx, sh, persistence.Absent(), also...); err != nil {
		return nil, err
	}
	return sh, nil
}

// saveShard writes sh under expect (with the other ops of also, in the
// same batch) and keeps its new version.
func (s *Scanner) saveShard(ctx context.Context, sh *shard, expect persistence.Expect, also ...persistence.Op) error {
	raw, err := json.Marshal(sh)
	if err != nil {
		return err
	}
	vs, err := s.opts.Store.Apply(ctx, append([]persistence.Op{persistence.Put(chainactor.TableScanCursors, sh.key, raw, expect)}, also...)...)
	if err != nil {
		return fmt.Errorf("scanner: write shard %s: %w", sh.key, err)
	}
	sh.version = vs[0]
	return nil
}

// storedShard is a shard record as listed: its view id and version.
type storedShard struct {
	shard
	view string
}

// shards lists the chain's shard records, with the cursor of the scanner
// from before sharding ("<chain>/scanner", one lane) as a view of its own.
func (s *Scanner) shards(ctx context.Context) ([]storedShard, error) {
	prefix := shardPrefix(string(s.chain))
	recs, err := s.opts.Store.List(ctx, chainactor.TableScanCursors, persistence.Query{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	var out []storedShard
	for _, r := range recs {
		view, _, ok := strings.Cut(strings.TrimPrefix(r.Key, prefix), "/")
		if !ok {
			continue
		}
		st := storedShard{view: view}
		if err := json.Unmarshal(r.Value, &st.shard); err != nil {
			return nil, fmt.Errorf("scanner: shard %s: %w", r.Key, err)
		}
		st.key, st.version = r.Key, r.Version
		out = append(out, st)
	}
	legacy := legacyKey(string(s.chain))
	rec, err := s.opts.Store.Get(ctx, chainactor.TableScanCursors, legacy)
	switch {
	case err == nil:
		out = append(out, storedShard{shard: shard{Lanes: []lane{{Cursor: string(rec.Value)}}, key: legacy, version: rec.Version}, view: legacyView})
	case !errors.Is(err, persistence.ErrNotFound):
		return nil, err
	}
	return out, nil
}

// legacyView names the cursor from before sharding as a shard: its one
// lane has every agent.
const legacyView = "legacy"

// legacyKey is the cursor of the one scanner per chain from before
// sharding.
func legacyKey(chain string) string { return chain + "/" + ConsumerAnnouncements }

// collect deletes the shards of older views once every member of v has
// its shard in v: together those cover every agent, so the older cursors
// are not needed to start a new shard any more. Older: a lower Gen than
// every shard of v (a member still on an older view must not delete the
// shards of a newer one, which would make them start again from the old
// cursors). The batch checks that v's shards are still there at the
// versions read, so two members collecting for two different views at
// once cannot delete each other's.
func (s *Scanner) collect(ctx context.Context, v View, vid string) error {
	recs, err := s.shards(ctx)
	if err != nil {
		return err
	}
	mine := map[string]uint64{}
	oldest := uint64(0)
	for _, r := range recs {
		if r.view == vid {
			mine[r.Self] = r.version
			if oldest == 0 || r.Gen < oldest {
				oldest = r.Gen
			}
		}
	}
	var stale []string
	for _, r := range recs {
		if r.view != vid && r.Gen < oldest {
			stale = append(stale, r.key)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	var ops []persistence.Op
	for _, m := range v.Members {
		ver, ok := mine[m]
		if !ok {
			return nil
		}
		ops = append(ops, persistence.Check(chainactor.TableScanCursors, shardKey(string(s.chain), vid, m), persistence.AtVersion(ver)))
	}
	for _, k := range stale {
		ops = append(ops, persistence.Delete(chainactor.TableScanCursors, k, persistence.Any()))
	}
	if _, err := s.opts.Store.Apply(ctx, ops...); err != nil && !errors.Is(err, persistence.ErrConflict) {
		return err
	}
	// A conflict means a shard moved meanwhile: the next pass tries again.
	return nil
}
