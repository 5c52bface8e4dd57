// Package scanner is the background payment scanner of one chain. It reads
// the chain's stealth announcements from a persisted cursor, matches each
// page against the viewing keys of every agent deployed on the chain at once
// (the batch scanners of chains/stealth), and hands each agent its payments
// through its actor (agent.DeliverPayments), which records them once, raises
// payment_received and settles invoices. Where the connector can list plain
// transfers (chains.TransferScanner), it also watches for payments to
// invoices' one-time addresses that nobody announced (a wallet paying the
// address shown on the pay page).
//
// In a cluster every member runs a scanner for the agents it owns (the
// placement requests use, Options.Placement), with its own cursors per view
// of the cluster (shard.go): a new view's shard starts from the cursors of
// the older views' shards, so an agent that moved resumes no later than
// where its last owner stopped, and the older shards are deleted once every
// member of the new view has its shard.
//
// A cursor is written only after the agents accepted the page, so a crash
// re-reads the page instead of skipping it, and redelivery is harmless: the
// agent records a payment once (state.Payments.Record) and notifies once (a
// marker written with the notification). See docs/scanner.md.
package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/veilhq/veil/actors/agent"
	chainactor "github.com/veilhq/veil/actors/chain"
	"github.com/veilhq/veil/actors/internal/background"
	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// Consumer names of the scanner's cursors (actors/chain's cursor table,
// keys "<chain>/<consumer>"). The announcements' cursors are the shards'
// ("<chain>/scanner-shard/<view>/<member>"); "<chain>/scanner" is the one
// cursor from before sharding, read once as the start of the first shards.
const (
	ConsumerAnnouncements = "scanner"
	ConsumerTransfers     = "scanner-transfers"
)

// Agents delivers messages to agent actors (host.Host).
type Agents interface {
	Request(ctx context.Context, id string, msg any) (any, error)
}

// Keys gives an agent's scanning keys (agent.Keys; the enclave).
type Keys interface {
	ScanKeys(ctx context.Context, agentID string, chain chains.ID) (enclave.ScanKeys, error)
}

// Options configure a Scanner. Store, Chain, Agents and Keys are required.
type Options struct {
	Store  persistence.Store
	Chain  *chainactor.Ref
	Agents Agents
	Keys   Keys
	// Interval between passes of the background loop (default 2s).
	Interval time.Duration
	// PageSize: announcements per page (default 256); transfers per page
	// (about, whole blocks) likewise.
	PageSize int
	// Parallel bounds the agents delivered to at once (default 8).
	Parallel int
	// DeliverTimeout bounds one agent's delivery (default 30s).
	DeliverTimeout time.Duration
	Log            *slog.Logger
	// OnPass, when set, is told each background pass's report (metrics),
	// after Health has recorded the pass.
	OnPass func(chain chains.ID, rep Report, took time.Duration, err error)
	// MaxBackoff caps the wait before retrying a failed pass (default
	// 1 min, at least Interval): failed passes are retried after
	// Interval, 2·Interval, 4·… (Kick retries at once).
	MaxBackoff time.Duration
	// Board, when set, is told the scanner's health after every pass
	// (what /readyz reads; one Board for the process's scanners).
	Board *Board
	// Now is the clock of Health's times (default time.Now).
	Now func() time.Time
	// Placement, when set, makes this scanner one member's shard of a
	// cluster: each pass takes the member's current View and scans for the
	// agents it owns there. Nil: a single node that owns every agent.
	Placement func() View
	// Topology, when set with Placement, answers a channel that is closed
	// at the next change of the cluster's member list
	// (runtime/cluster.Member.Changed): the background loop then runs a
	// pass at once, so a member takes over the agents it gained (and
	// leaves those it lost) without waiting for Interval.
	Topology func() <-chan struct{}
	// Watch selects what the scanner watches (default both).
	Watch Watch
}

// Watch selects a scanner's work.
type Watch uint8

const (
	// WatchAnnouncements scans the stealth announcements (sharded by
	// Placement: every member runs it for its own agents).
	WatchAnnouncements Watch = 1 << iota
	// WatchTransfers watches plain transfers to invoice addresses (one
	// member per chain runs it; a point read per transfer, no keys).
	WatchTransfers
	watchAll = WatchAnnouncements | WatchTransfers
)

// Scanner scans one chain for every agent on it.
type Scanner struct {
	opts  Options
	chain chains.ID

	pass sync.Mutex // one pass at a time
	keys keySet

	healthMu sync.Mutex
	health   Health

	loop *background.Loop
	kick chan struct{}

	// seen: the transactions scanReferences read (references.go).
	seen refSeen
	// reclaimedAt: the last pass that read the destinations (reclaim.go).
	reclaimedAt time.Time
}

// New builds the scanner of opts.Chain; Start runs it in the background.
func New(opts Options) *Scanner {
	if opts.Interval <= 0 {
		opts.Interval = 2 * time.Second
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 256
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 8
	}
	if opts.DeliverTimeout <= 0 {
		opts.DeliverTimeout = 30 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = time.Minute
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.Interval)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Watch == 0 {
		opts.Watch = watchAll
	}
	id := opts.Chain.Chain()
	return &Scanner{opts: opts, chain: id, keys: keySet{chain: id, known: map[string]bool{}},
		loop: background.New(), kick: make(chan struct{}, 1), health: Health{Chain: id}}
}

// Report is what one pass did.
type Report struct {
	Agents        int // agents whose keys were checked
	Announcements int // announcements read
	Matches       int // (announcement, agent) matches
	Transfers     int // plain transfers read
	InvoiceHits   int // transfers to invoice addresses
	New           int // payments the agents had not seen
	InvoicesPaid  int
	// Reclaimed: prepared invoice destinations closed (reclaim.go).
	Reclaimed int
}

// Start runs a pass every Interval, on Kick and when the topology changes
// (Options.Topology), until Stop.
func (s *Scanner) Start() {
	s.loop.Go(func(ctx context.Context) {
		// Go ≥ 1.23 timers: Reset needs no draining.
		t := time.NewTimer(s.opts.Interval)
		defer t.Stop()
		for {
			// Taken before the pass: a change while it runs (with the view
			// it took) makes the next pass start at once.
			var moved <-chan struct{}
			if s.opts.Topology != nil {
				moved = s.opts.Topology()
			}
			start := time.Now()
			rep, err := s.ScanOnce(ctx)
			if ctx.Err() != nil {
				return
			}
			wait := s.record(err)
			if s.opts.OnPass != nil {
				s.opts.OnPass(s.chain, rep, time.Since(start), err)
			}
			if err == nil && (rep.New > 0 || rep.InvoicesPaid > 0) {
				s.opts.Log.Info("scanner: payments delivered", "chain", s.chain, "new", rep.New, "invoices_paid", rep.InvoicesPaid)
			}
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.kick:
			case <-moved:
			}
		}
	})
}

// record notes a pass's outcome in the scanner's health (and its Board),
// logs every failed pass (retries back off, so this is not a flood) and a
// recovery, and returns how long to wait before the next pass.
func (s *Scanner) record(err error) time.Duration {
	s.healthMu.Lock()
	h := &s.health
	now := s.opts.Now()
	h.LastAttempt = now
	var wait time.Duration
	if err == nil {
		if h.Failures > 0 {
			s.opts.Log.Info("scanner: recovered", "chain", s.chain, "failed_passes", h.Failures)
		}
		h.Failures, h.LastError, h.RetryIn, h.LastSuccess = 0, "", 0, now
		wait = s.opts.Interval
	} else {
		h.Failures++
		h.LastError = err.Error()
		wait = Backoff(s.opts.Interval, s.opts.MaxBackoff, h.Failures)
		h.RetryIn = wait
		s.opts.Log.Warn("scanner: pass failed; payments on this chain are not being found until it succeeds",
			"chain", s.chain, "failed_passes", h.Failures, "retry_in", wait, "err", err)
	}
	snap := *h
	s.healthMu.Unlock()
	if s.opts.Board != nil {
		s.opts.Board.set(snap)
	}
	return wait
}

// Backoff is the wait after the n-th consecutive failed pass (n ≥ 1):
// interval·2^(n−1), at most max.
func Backoff(interval, max time.Duration, n int) time.Duration {
	d := interval
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Health is a scanner's state as /readyz and operators see it.
type Health struct {
	Chain chains.ID `json:"chain"`
	// Failures counts consecutive failed passes (0: the last pass
	// succeeded, or none ran yet).
	Failures    int           `json:"failures"`
	LastError   string        `json:"lastError,omitempty"`
	LastSuccess time.Time     `json:"lastSuccess,omitzero"`
	LastAttempt time.Time     `json:"lastAttempt,omitzero"`
	RetryIn     time.Duration `json:"retryIn,omitempty"`
}

// OK reports whether the scanner is finding payments: its last pass
// succeeded (or none has run yet).
func (h Health) OK() bool { return h.Failures == 0 }

// Health returns the scanner's current health.
func (s *Scanner) Health() Health {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	return s.health
}

// Board collects the health of a process's scanners (one per chain; a
// scanner restarted under a new lease replaces its chain's entry). Its
// zero value is not usable; see NewBoard.
type Board struct {
	mu sync.Mutex
	m  map[chains.ID]Health
}

// NewBoard returns an empty Board.
func NewBoard() *Board { return &Board{m: map[chains.ID]Health{}} }

func (b *Board) set(h Health) {
	b.mu.Lock()
	b.m[h.Chain] = h
	b.mu.Unlock()
}

// Snapshot lists every chain's scanner health in canonical chain order.
func (b *Board) Snapshot() []Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Health
	for _, id := range chains.Order() {
		if h, ok := b.m[id]; ok {
			out = append(out, h)
		}
	}
	return out
}

// Err is nil when no scanner that reported has failed minFailures passes
// in a row (at least 1), else an error naming each such chain, its failed
// passes and last error.
func (b *Board) Err(minFailures int) error {
	var errs []error
	for _, h := range b.Snapshot() {
		if h.Failures >= max(minFailures, 1) {
			errs = append(errs, fmt.Errorf("scanner %s: %d failed passes, retrying in %s: %s", h.Chain, h.Failures, h.RetryIn, h.LastError))
		}
	}
	return errors.Join(errs...)
}

// Kick asks the background loop for a pass now.
func (s *Scanner) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Stop ends the background loop (a running pass is cancelled; its page is
// read again next time) and forgets the viewing keys.
func (s *Scanner) Stop() {
	s.loop.Stop()
	s.pass.Lock()
	s.keys.zero()
	s.pass.Unlock()
}

// ScanOnce runs one pass: announcements, then transfers, each until caught
// up with the chain (as Options.Watch selects).
func (s *Scanner) ScanOnce(ctx context.Context) (Report, error) {
	s.pass.Lock()
	defer s.pass.Unlock()
	var rep Report
	rep.Agents = len(s.keys.ids)
	if s.opts.Watch&WatchAnnouncements != 0 {
		if err := s.scanAnnouncements(ctx, &rep); err != nil {
			return rep, err
		}
	}
	if s.opts.Watch&WatchTransfers != 0 {
		if err := s.scanTransfers(ctx, &rep); err != nil {
			return rep, err
		}
		if err := s.scanReferences(ctx, &rep); err != nil {
			return rep, err
		}
		if err := s.reclaimDestinations(ctx, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// scanAnnouncements scans every lane of this member's shard to the head,
// delivering to the agents it owns in the pass's view, then merges the
// lanes into one and drops the shards of views nobody needs any more.
func (s *Scanner) scanAnnouncements(ctx context.Context, rep *Report) error {
	v := singleNode()
	if s.opts.Placement != nil {
		v = s.opts.Placement()
	}
	if !slices.Contains(v.Members, v.Self) {
		// Not (yet, or no longer) in the cluster: it owns no agent.
		return nil
	}
	vid := v.id()
	if err := s.keys.retain(vid, v.Owns); err != nil {
		return err
	}
	rep.Agents = len(s.keys.ids)
	sh, err := s.loadShard(ctx, v, vid)
	if err != nil {
		return err
	}
	// Lanes overlap (a shard just made from older ones): what one lane
	// delivered in this pass, the next does not deliver again.
	var done map[string]bool
	if len(sh.Lanes) > 1 {
		done = map[string]bool{}
	}
	for i := range sh.Lanes {
		if err := s.scanLane(ctx, v, sh, i, done, rep); err != nil {
			return err
		}
	}
	if len(sh.Lanes) > 1 {
		// Every lane reached the head in this pass, the first one first:
		// each agent has had every announcement up to where the first
		// lane ended, so one lane from there misses nothing.
		sh.Lanes = []lane{{Cursor: sh.Lanes[0].Cursor}}
		if err := s.saveShard(ctx, sh, persistence.AtVersion(sh.version)); err != nil {
			return err
		}
	}
	return s.collect(ctx, v, vid)
}

// scanLane reads lane i of sh from its cursor to the head, page by page;
// a page's cursor is written only after its payments were delivered.
func (s *Scanner) scanLane(ctx context.Context, v View, sh *shard, i int, done map[string]bool, rep *Report) error {
	for {
		cursor := sh.Lanes[i].Cursor
		anns, next, err := s.opts.Chain.Scan(ctx, cursor, s.opts.PageSize)
		if err != nil {
			return fmt.Errorf("scanner: %s scan: %w", s.chain, err)
		}
		if len(anns) > 0 {
			// Keys are refreshed only when there is something to match:
			// agents created since the last page must not miss this one.
			if err := s.keys.refresh(ctx, s.opts.Store, s.opts.Keys, v.Owns); err != nil {
				return err
			}
			rep.Agents = len(s.keys.ids)
			rep.Announcements += len(anns)
			batches := map[string][]agent.Incoming{}
			for _, m := range s.keys.match(anns) {
				rep.Matches++
				a := anns[m.Announcement]
				id := s.keys.ids[m.Key]
				if !sh.Lanes[i].has(v.Place, id) {
					// Another lane (an older shard) is this agent's.
					continue
				}
				if done != nil {
					k := id + "\x00" + a.StealthAddress + "\x00" + a.TxHash
					if done[k] {
						continue
					}
					done[k] = true
				}
				batches[id] = append(batches[id], agent.Incoming{
					StealthAddress: a.StealthAddress, EphemeralPubKey: a.EphemeralPubKey,
					Asset: a.Asset, Amount: a.Amount, TxHash: a.TxHash,
				})
			}
			if err := s.deliver(ctx, batches, rep); err != nil {
				return fmt.Errorf("scanner: %s deliver: %w", s.chain, err)
			}
		}
		if next != cursor {
			sh.Lanes[i].Cursor = next
			if err := s.saveShard(ctx, sh, persistence.AtVersion(sh.version)); err != nil {
				sh.Lanes[i].Cursor = cursor
				return err
			}
		}
		if len(anns) < s.opts.PageSize {
			return nil
		}
	}
}

// scanTransfers watches plain transfers for invoice addresses.
func (s *Scanner) scanTransfers(ctx context.Context, rep *Report) error {
	ts, ok := s.opts.Chain.Connector().(chains.TransferScanner)
	if !ok {
		return nil
	}
	key := string(s.chain) + "/" + ConsumerTransfers
	cursor, version := "", uint64(0)
	if rec, err := s.opts.Store.Get(ctx, chainactor.TableScanCursors, key); err == nil {
		cursor, version = string(rec.Value), rec.Version
	} else if !errors.Is(err, persistence.ErrNotFound) {
		return err
	}
	for {
		page, next, err := ts.ScanTransfers(ctx, cursor, s.opts.PageSize)
		if err != nil {
			return err
		}
		rep.Transfers += len(page)
		batches := map[string][]agent.Incoming{}
		for _, t := range page {
			inv, err := state.InvoiceByAddress(ctx, s.opts.Store, s.chain, t.To)
			if errors.Is(err, state.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			rep.InvoiceHits++
			batches[inv.AgentID] = append(batches[inv.AgentID], agent.Incoming{StealthAddress: inv.PayTo, Asset: t.Asset, Amount: t.Amount, TxHash: t.TxHash})
		}
		if err := s.deliver(ctx, batches, rep); err != nil {
			return err
		}
		if next == cursor {
			return nil
		}
		expect := persistence.Absent()
		if version > 0 {
			expect = persistence.AtVersion(version)
		}
		vs, err := s.opts.Store.Apply(ctx, persistence.Put(chainactor.TableScanCursors, key, []byte(next), expect))
		if err != nil {
			return err
		}
		cursor, version = next, vs[0]
	}
}

// deliver hands each agent its payments, Parallel agents at a time, and
// fails if any agent did not accept them (the page is then read again).
func (s *Scanner) deliver(ctx context.Context, batches map[string][]agent.Incoming, rep *Report) error {
	if len(batches) == 0 {
		return nil
	}
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, s.opts.Parallel)
	var wg sync.WaitGroup
	for id, pays := range batches {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			dctx, cancel := context.WithTimeout(ctx, s.opts.DeliverTimeout)
			defer cancel()
			v, err := s.opts.Agents.Request(dctx, id, &agent.DeliverPayments{Chain: s.chain, Payments: pays})
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, agent.ErrNotFound) {
				// Deleted meanwhile: nobody to pay.
				return
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("agent %s: %w", id, err))
				return
			}
			if r, ok := v.(*agent.DeliverReport); ok {
				rep.New += r.New
				rep.InvoicesPaid += len(r.InvoicesPaid)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
