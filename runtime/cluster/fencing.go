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
//   - lease: it does not hold its store lease (SetLease), or the hold's
//     end on its own clock (SetLeaseUntil) has passed, whether or not the
//     lease's goroutine has noticed yet.
//
// While fenced it answers every agent request with host.ErrFenced
// (a 503 with Retry-After), refuses forwarded requests unprocessed, and has
// passivated every agent. A member the others dropped for good (protoactor
// blocks it by system id) calls Config.Rejoin to restart with a fresh id.
//
// A stall is not a fence. When the watchdog's ticks are more than
// pauseGap apart, the process was stopped (SIGSTOP, a frozen VM, a long
// GC) or only starved of CPU: from inside, the two look the same. Either
// way the others may have dropped it meanwhile and failed the requests
// they had sent it, and those may still wait in its socket buffers. So it
// refuses every request, unprocessed (senders route them again), until a
// health poll round that started after the stall confirms its place:
// every other member of its topology answers, counts it and has not
// blocked it (blocks are for good, so none of them dropped it during the
// stall). It passivates nothing meanwhile; the lease condition is checked
// at every tick on its own (a stall past the hold's end fences). If the round shows that it was dropped or blocked,
// or its lease ended, it is fenced by those conditions (and rejoins):
// the decision rests on what the others and the store say after the
// stall, not on the stall's length (docs/cluster.md, "Stalls").

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
	pausedAt  time.Time         // when a stall was noticed; zero: none awaiting confirmation
	stall     time.Duration     // that stall's length, for the refusals
	lease     leaseState
	droppedAt time.Time // since when the others leave this member out
	counted   bool      // the others have counted this member at least once
	rejoining bool
}

func (f *fenceState) init() { f.reasons = map[string]string{} }

// leaseState is the member lease as SetLease and SetLeaseUntil report it.
type leaseState struct {
	used  bool // SetLease was called: this member runs under a lease
	held  bool
	until time.Time // the hold's end on this clock; zero: not reported
}

// why says why the lease does not cover now ("" when it does, or when the
// member runs without a lease).
func (l leaseState) why(now time.Time) string {
	switch {
	case !l.used:
		return ""
	case !l.held:
		return "it does not hold its store lease"
	case !l.until.IsZero() && !now.Before(l.until):
		return fmt.Sprintf("its store lease ended %v ago on its own clock, without a renewal", now.Sub(l.until).Round(time.Millisecond))
	}
	return ""
}

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

// now is the watchdog's clock: the wall clock with its monotonic reading,
// or the fake one of a test (Member.clock).
func (m *Member) now() time.Time {
	if m.clock != nil {
		return m.clock()
	}
	return time.Now()
}

// Fenced says why this member serves no agent now ("" when it serves).
func (m *Member) Fenced() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.fencedLocked(m.now())
}

func (m *Member) fencedLocked(now time.Time) string {
	if !m.fence.lastTick.IsZero() && now.Sub(m.fence.lastTick) > pauseGap {
		// The watchdog has not run: this process was stopped or starved,
		// and this request may have waited in a buffer while its sender
		// gave up.
		return "this process was paused"
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
	if !m.fence.pausedAt.IsZero() {
		out = append(out, fmt.Sprintf("this process stalled for %v (paused or starved of CPU); waiting for the others to confirm its place", m.fence.stall.Round(time.Millisecond)))
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
	m.changeFence(func(time.Time) { m.setReasonLocked(cond, why) })
}

// changeFence runs update (which may set or clear conditions) under
// Member.mu with the current time, then logs and passivates as the change
// requires. Conditions computed from state (the lease) are computed and
// set in the same critical section, so two updates never apply a stale
// reading over a newer one.
func (m *Member) changeFence(update func(now time.Time)) {
	m.mu.Lock()
	was := len(m.fence.reasons) > 0
	now := m.now()
	update(now)
	is := len(m.fence.reasons) > 0
	why := m.fencedLocked(now)
	m.mu.Unlock()
	m.fenceChanged(was, is, why)
}

// setReasonLocked sets (why != "") or clears one condition; Member.mu is
// held.
func (m *Member) setReasonLocked(cond, why string) {
	if why == "" {
		delete(m.fence.reasons, cond)
	} else {
		m.fence.reasons[cond] = why
	}
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
	m.changeFence(func(now time.Time) {
		m.fence.lease.used, m.fence.lease.held = true, held
		m.setReasonLocked("lease", m.fence.lease.why(now))
	})
}

// SetLeaseUntil reports the end of the member lease's hold on this
// process's clock (lease.Options.OnRenew): the watchdog fences the member
// once it has passed, even before the lease's own goroutine has noticed
// (after a pause, whichever runs first), and until a renewal moves it.
func (m *Member) SetLeaseUntil(until time.Time) {
	m.changeFence(func(now time.Time) {
		m.fence.lease.until = until
		m.setReasonLocked("lease", m.fence.lease.why(now))
	})
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
		now := m.now()
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
				m.servingAgain()
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
		case <-m.kick:
			// A stall was just noticed: confirm at once rather than at
			// the next period.
		}
		m.poll(m.now())
	}
}

// tick records one watchdog tick at now. A gap since the last tick longer
// than pauseGap means this process was stopped or starved: the member
// refuses requests until a poll round confirms its place (pausedAt), set
// in the same critical section that records the tick. Fenced reads the gap
// until the tick is recorded and pausedAt after it, so a request taken off
// the wire on resume (one that waited in a socket buffer while its sender
// gave up) is refused whichever goroutine runs first; recording the tick
// first left a window in which such a request ran. The stall alone
// passivates nothing. The tick also ends the lease condition's cover at
// the hold's end on this clock (SetLeaseUntil), which after a pause past
// it may come before the lease's own goroutine runs.
func (m *Member) tick(now time.Time) {
	m.mu.Lock()
	gap := now.Sub(m.fence.lastTick)
	stalled := !m.fence.lastTick.IsZero() && gap > pauseGap
	was := len(m.fence.reasons) > 0
	if stalled {
		m.fence.pausedAt, m.fence.stall = now, gap
	}
	m.setReasonLocked("lease", m.fence.lease.why(now))
	m.fence.lastTick = now
	is := len(m.fence.reasons) > 0
	why := m.fencedLocked(now)
	m.mu.Unlock()
	if stalled {
		m.cfg.Log.Warn("cluster member was paused or starved: refusing requests until the others confirm its place", slog.Duration("pause", gap))
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	m.fenceChanged(was, is, why)
}

// servingAgain logs that a stall was confirmed and, when no condition
// fences the member, that it serves again.
func (m *Member) servingAgain() {
	if why := m.Fenced(); why != "" {
		m.cfg.Log.Info("cluster member's place confirmed after a stall; still fenced", slog.String("reason", why))
		return
	}
	m.cfg.Log.Info("cluster member serving again", slog.String("after", "a stall, its place confirmed by every member of its topology"))
}

// poll asks every seed whom it counts, and fences or restarts this member
// when the others do not count it.
func (m *Member) poll(started time.Time) {
	answers := m.pollSeeds()
	m.judgeRound(started, m.now(), answers)
}

// judgeRound acts on one poll round's answers: a round that started at
// started and ended at now.
func (m *Member) judgeRound(started, now time.Time, answers []healthNode) {
	m.mu.RLock()
	mine := m.ids
	m.mu.RUnlock()
	v := judge(m.system.ID, mine, answers, m.cfg.Name, m.cfg.Expected)
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
	confirmed := v.why == "" && !m.fence.pausedAt.IsZero() && started.After(m.fence.pausedAt) &&
		placeKept(m.system.ID, mine, answers, m.cfg.Name)
	if confirmed {
		m.fence.pausedAt = time.Time{}
	}
	m.mu.Unlock()
	m.setFence("dropped", v.why)
	if confirmed {
		m.servingAgain()
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

// placeKept reports whether one poll round's answers show that no member
// of this member's topology (mine, the ids) dropped it: each of them
// answered, lists it and has not blocked it. protoactor blocks a member it
// drops by id for good, and a sender fails its requests in flight to a
// member it drops, so a round that started after a stall and holds such
// an answer from every member this one takes requests from (it refuses
// senders outside its topology) proves that none of the requests waiting
// in its buffers was given up because of the stall. A member of the
// topology that does not answer leaves the question open: the next round
// asks again (or the topology drops it).
func placeKept(self string, mine map[string]bool, answers []healthNode, name string) bool {
	for id := range mine {
		if id == self {
			continue
		}
		i := slices.IndexFunc(answers, func(a healthNode) bool { return a.ID == id && a.ClusterName == name })
		if i < 0 || answers[i].BlocksAsker || !slices.Contains(answers[i].Members, self) {
			return false
		}
	}
	return true
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
