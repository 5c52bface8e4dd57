package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"

	"github.com/veilhq/veil/runtime/host"
)

// Fencing: money is a CP system, so a member that may be on the wrong side
// of a partition serves nothing (keep-majority, as Akka's split brain
// resolver). A member is fenced while any of these holds:
//
//   - quorum: its topology has fewer than a majority of Config.Expected;
//   - dropped: the members that answer its health polls do not list it in
//     their topologies (they dropped it while it was paused or cut off);
//   - paused: its own clock jumped (the process was stopped: SIGSTOP, a
//     frozen VM, a long GC), until a whole health poll round that started
//     after the jump has confirmed its place;
//   - lease: it does not hold its store lease (SetLease).
//
// While fenced it answers every agent request with host.ErrFenced
// (a 503 with Retry-After), refuses forwarded requests unprocessed, and has
// passivated every agent. A member the others dropped for good (protoactor
// blocks it by system id) calls Config.Rejoin to restart with a fresh id.

// Tunables of the watchdog.
const (
	// tick is the watchdog's period for noticing that the process was
	// paused; a gap above pauseGap between two ticks is a pause.
	tick     = 100 * time.Millisecond
	pauseGap = 2 * time.Second
)

// fenceState is guarded by Member.mu.
type fenceState struct {
	reasons   map[string]string // why fenced, by condition; empty: serving
	lastTick  time.Time         // the watchdog's last tick (wall clock with monotonic reading)
	pausedAt  time.Time         // when a pause was noticed; zero: none pending
	droppedAt time.Time         // since when the others leave this member out
	counted   bool              // the others have counted this member at least once
	rejoining bool
}

func (f *fenceState) init() { f.reasons = map[string]string{} }

// healthNode is the health endpoint's answer: protoactor's node, plus the
// actor system ids of this member's topology, so that a member learns
// whether the others count it.
type healthNode struct {
	*automanaged.NodeModel
	Members []string `json:"veil_members"`
	// BlocksAsker says that the answering member has blocked the asking
	// member's actor system id (the poll's ?member= parameter): protoactor
	// never admits that id again, so only a new process of the asker can
	// be counted by it.
	BlocksAsker bool `json:"veil_blocks_asker,omitempty"`
}

// Fenced says why this member serves no agent now ("" when it serves).
func (m *Member) Fenced() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.fencedLocked(time.Now())
}

func (m *Member) fencedLocked(now time.Time) string {
	if !m.fence.lastTick.IsZero() && now.Sub(m.fence.lastTick) > pauseGap {
		// The watchdog has not run: this process was stopped, and this
		// request may have waited in a buffer while its sender gave up.
		return "this process was paused"
	}
	if len(m.fence.reasons) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m.fence.reasons))
	for k := range m.fence.reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, m.fence.reasons[k])
	}
	return strings.Join(out, "; ")
}

// fencedErr is the error for a request refused because of fencing.
func (m *Member) fencedErr() error {
	if why := m.Fenced(); why != "" {
		return fmt.Errorf("%w: %s", host.ErrFenced, why)
	}
	return nil
}

// setFence sets (why != "") or clears one fencing condition. Becoming
// fenced passivates every agent at once: another member may be about to
// serve them.
func (m *Member) setFence(cond, why string) {
	m.mu.Lock()
	was := len(m.fence.reasons) > 0
	if why == "" {
		delete(m.fence.reasons, cond)
	} else {
		m.fence.reasons[cond] = why
	}
	is := len(m.fence.reasons) > 0
	now := m.fencedLocked(time.Now())
	m.mu.Unlock()
	m.fenceChanged(was, is, now)
}

// fenceChanged logs a change between serving and fenced, and passivates
// every agent when the member becomes fenced.
func (m *Member) fenceChanged(was, is bool, reason string) {
	switch {
	case is && !was:
		m.cfg.Log.Warn("cluster member fenced: serving no agent, passivating them all", slog.String("reason", reason))
		m.cfg.Host.PassivateWhere(func(string) bool { return true })
	case was && !is:
		m.cfg.Log.Info("cluster member serving again")
	}
}

// SetLease reports whether this member holds its store lease; without it
// the member is fenced. A member that is given no lease is not fenced by
// this condition.
func (m *Member) SetLease(held bool) {
	if held {
		m.setFence("lease", "")
	} else {
		m.setFence("lease", "it does not hold its store lease")
	}
}

// checkQuorum fences this member when its topology is not a majority.
func (m *Member) checkQuorum() {
	if m.cfg.Expected <= 0 {
		return
	}
	m.mu.RLock()
	n := len(m.members)
	m.mu.RUnlock()
	if need := m.cfg.Expected/2 + 1; n < need {
		m.setFence("quorum", fmt.Sprintf("it sees %d of %d members, fewer than the majority of %d", n, m.cfg.Expected, need))
	} else {
		m.setFence("quorum", "")
	}
}

// memberIDs lists the actor system ids of this member's topology.
func (m *Member) memberIDs() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.ids))
	for id := range m.ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// watch is the watchdog: it notices pauses and, with the automanaged
// provider, polls the seeds to learn whether the others count this member.
// The polls run in a goroutine of their own: a round waits up to the HTTP
// client's timeout for a seed that does not answer (2 s during a
// partition), and a ticker that waited with it saw every such round as a
// pause of the process, fencing the majority side for the whole partition.
func (m *Member) watch() {
	t := time.NewTicker(tick)
	defer t.Stop()
	m.checkQuorum()
	if m.client != nil {
		go m.pollEvery(m.cfg.RefreshEvery)
	}
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		now := time.Now()
		m.tick(now)
		if m.cl.Remote != nil && m.cl.Remote.BlockList().IsBlocked(m.system.ID) {
			m.rejoin("the other members blocked this member's id")
			continue
		}
		if m.client == nil {
			// No seeds to poll (k8s): a pause is confirmed once the
			// provider has had two periods to deliver a topology.
			m.mu.Lock()
			confirmed := !m.fence.pausedAt.IsZero() && now.Sub(m.fence.pausedAt) > 2*m.cfg.RefreshEvery
			if confirmed {
				m.fence.pausedAt = time.Time{}
			}
			m.mu.Unlock()
			if confirmed {
				m.setFence("paused", "")
			}
		}
	}
}

// pollEvery runs a poll round every period (or right after the previous
// one, when a round took longer) until the member stops.
func (m *Member) pollEvery(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-t.C:
		}
		m.poll(time.Now())
	}
}

// tick records one watchdog tick at now. A gap since the last tick longer
// than pauseGap means this process was stopped: the member is fenced
// ("paused") in the same critical section that records the tick. Fenced
// reads the gap until the tick is recorded and the reason after it, so a
// request taken off the wire on resume (one that waited in a socket
// buffer while its sender gave up) is refused whichever goroutine runs
// first; fencing after recording the tick left a window in which such a
// request ran.
func (m *Member) tick(now time.Time) {
	m.mu.Lock()
	gap := now.Sub(m.fence.lastTick)
	paused := !m.fence.lastTick.IsZero() && gap > pauseGap
	was := len(m.fence.reasons) > 0
	if paused {
		m.fence.pausedAt = now
		m.fence.reasons["paused"] = fmt.Sprintf("this process was paused for %v; waiting for the others to confirm its place", gap.Round(time.Millisecond))
	}
	m.fence.lastTick = now
	why := m.fencedLocked(now)
	m.mu.Unlock()
	if paused {
		m.cfg.Log.Warn("cluster member was paused: fenced until the others confirm its place", slog.Duration("pause", gap))
		m.fenceChanged(was, true, why)
	}
}

// poll asks every seed whom it counts, and fences or restarts this member
// when the others do not count it.
func (m *Member) poll(started time.Time) {
	answers := m.pollSeeds()
	m.mu.RLock()
	mine := m.ids
	m.mu.RUnlock()
	v := judge(m.system.ID, mine, answers, m.cfg.Name, m.cfg.Expected)
	now := time.Now()
	m.mu.Lock()
	if v.why == "" {
		m.fence.droppedAt = time.Time{}
		if v.counted {
			m.fence.counted = true
		}
	} else if m.fence.droppedAt.IsZero() {
		m.fence.droppedAt = now
	}
	since, counted := m.fence.droppedAt, m.fence.counted
	confirmed := v.why == "" && !m.fence.pausedAt.IsZero() && started.After(m.fence.pausedAt)
	if confirmed {
		m.fence.pausedAt = time.Time{}
	}
	m.mu.Unlock()
	m.setFence("dropped", v.why)
	if confirmed {
		m.cfg.Log.Info("cluster member's place confirmed after a pause")
		m.setFence("paused", "")
	}
	if v.blocked {
		// Blocked by id for good by a member the cluster counts: waiting
		// cannot help, only a new process is admitted.
		m.rejoin(v.why)
		return
	}
	// A member that was counted and is not any more was dropped: protoactor
	// never admits its id again. One that has never been counted may still
	// be joining: it gets longer.
	wait := m.cfg.DroppedFor
	if !counted {
		wait = m.cfg.JoinFor
	}
	if v.why != "" && now.Sub(since) >= wait {
		m.rejoin(fmt.Sprintf("%s, for %v", v.why, now.Sub(since).Round(time.Second)))
	}
}

// verdict is what one poll round says about this member's place.
type verdict struct {
	why     string // why the others do not count this member ("": they do)
	blocked bool   // a member the cluster counts has blocked its id for good
	counted bool   // at least one other member counts it
}

// judge reads one poll round's answers (including this member's own, if
// it answered) against this member's view mine (the ids of its topology).
// expected is the configured cluster size (0: unknown). The rules, first
// match wins:
//
//   - blocked: a member that a majority counts (its own view included;
//     see support) has blocked this member's id. That is for good, so one disagreement is
//     enough: with three members, one that dropped this one after a poll
//     that timed out under load while the third still counts it is a tie
//     the majority rule below never sees, and the cluster would never
//     converge. When the two block each other and both are counted by a
//     majority, the one with the greater id restarts, not both;
//   - most of the other members that answer do not count it;
//   - it is in a minority while members it does not count answer (it
//     blocked them: their heartbeats expired while it was cut off).
func judge(self string, mine map[string]bool, answers []healthNode, name string, expected int) verdict {
	var others []healthNode
	for _, a := range answers {
		if a.ID != self && a.ClusterName == name {
			others = append(others, a)
		}
	}
	views := 1 + len(others) // this member's view and each other's
	// counts holds each view: this member's own (mine) and each answer's.
	counts := map[string]map[string]bool{self: mine}
	for _, a := range others {
		v := make(map[string]bool, len(a.Members))
		for _, id := range a.Members {
			v[id] = true
		}
		counts[a.ID] = v
	}
	// support is the number of views that count id while id counts their
	// owner back. In one topology every member counts every other, so the
	// rule takes nothing from a consistent round; what it leaves out is a
	// view read before its owner dropped id, mixed with an answer of id
	// read after. A partition's minority answer is held by the cut until
	// the partition heals, seconds after the majority member's answer in
	// the same round, which may still count the minority: its block of the
	// asker (for good: it dropped the asker during the cut) then looked
	// established, and a member of the majority restarted (issue 25).
	support := func(id string) int {
		n := 0
		for owner, view := range counts {
			if view[id] && counts[id][owner] {
				n++
			}
		}
		return n
	}
	established := func(id string) bool {
		if expected > 0 {
			return support(id)*2 > expected
		}
		return support(id)*2 > views
	}
	var v verdict
	var countMe, unknown int
	for _, a := range others {
		if slices.Contains(a.Members, self) {
			countMe++
		}
		if !mine[a.ID] {
			unknown++
		}
	}
	v.counted = countMe > 0
	for _, a := range others {
		if !a.BlocksAsker || !established(a.ID) {
			continue
		}
		if !mine[a.ID] && established(self) && self < a.ID {
			continue // mutual: the other one (greater id) restarts
		}
		v.why = fmt.Sprintf("member %s:%d, counted by %d of %d views, blocked its id", a.Address, a.Port, support(a.ID), views)
		v.blocked = true
		return v
	}
	switch {
	case len(others) > 0 && countMe*2 < len(others):
		// Most of the members that answer leave this one out.
		v.why = fmt.Sprintf("%d of the %d other members that answer do not count it", len(others)-countMe, len(others))
	case unknown > 0 && expected > 0 && len(mine)*2 <= expected:
		// In a minority, while members it does not count answer: it
		// blocked them (their heartbeats expired while it was cut off).
		v.why = fmt.Sprintf("%d members answer that its own topology does not hold", unknown)
	}
	return v
}

// pollSeeds reads every seed's health answer; seeds that do not answer
// are left out.
func (m *Member) pollSeeds() []healthNode {
	var (
		mu  sync.Mutex
		out []healthNode
		wg  sync.WaitGroup
	)
	for _, seed := range m.cfg.Seeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+seed+"/_health?member="+url.QueryEscape(m.system.ID), nil)
			if err != nil {
				return
			}
			resp, err := m.client.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return
			}
			var n healthNode
			if json.NewDecoder(resp.Body).Decode(&n) != nil || n.NodeModel == nil {
				return
			}
			mu.Lock()
			out = append(out, n)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// rejoin hands the member to Config.Rejoin, once.
func (m *Member) rejoin(why string) {
	m.setFence("rejoin", "it is restarting to rejoin the cluster")
	m.mu.Lock()
	first := !m.fence.rejoining
	m.fence.rejoining = true
	m.mu.Unlock()
	if !first {
		return
	}
	if m.cfg.Rejoin == nil {
		m.cfg.Log.Error("cluster member dropped by the others for good; it stays fenced until restarted", slog.String("reason", why))
		return
	}
	m.cfg.Log.Error("cluster member dropped by the others for good: restarting to rejoin with a fresh identity", slog.String("reason", why))
	go m.cfg.Rejoin(why)
}
