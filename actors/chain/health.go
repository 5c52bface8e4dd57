package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// A chain fails on its own (docs/operations.md, "When a chain is down"):
//
//   - degraded: its node did not answer when veild started. The actor runs
//     without a connector (StartPending), every operation answers the
//     chain's *chains.DownError at once, and a background loop connects
//     with a growing backoff; the chain serves as soon as it does, with no
//     restart. The other chains and every agent serve meanwhile.
//   - reset: its node serves another chain than the one recorded (the
//     genesis changed: Hardhat restarted with the same chain id). Every
//     operation answers the DownError; nothing is signed, rebroadcast or
//     read on it (a balance read on the new chain would show 0 where the
//     agent's money is on the old one). It serves again only if the node
//     comes back with the recorded genesis.

// GenesisReader is a connector that names its chain's genesis: a value
// that changes when the chain is reset (EVM: block 0's hash; Solana:
// getGenesisHash; Stellar: ledger 1's hash). "" means the node cannot say
// now: nothing is recorded or compared.
type GenesisReader interface {
	Genesis(ctx context.Context) (string, error)
}

// TableGenesis holds each chain's genesis as first seen by this Veil:
// chain id → GenesisRecord (JSON).
const TableGenesis = "chain_genesis"

// GenesisRecord is a chain's recorded genesis.
type GenesisRecord struct {
	Hash       string    `json:"hash"`
	RecordedAt time.Time `json:"recordedAt"`
}

// State is a chain's state on this node.
type State string

// The states of a chain.
const (
	Serving  State = "serving"
	Degraded State = State(chains.DownDegraded)
	Reset    State = State(chains.DownReset)
)

// StateObserver is an Observer that is also told each change of a
// chain's state (a State, for metrics and alerts).
type StateObserver interface {
	ChainState(chain chains.ID, state string)
}

// health is a Ref's state: nil down while the chain serves.
type health struct {
	mu       sync.Mutex
	down     *chains.DownError
	nextTry  time.Time // a degraded chain's next connection attempt
	recorded string    // the recorded genesis, once read or written
	verified time.Time // the last genesis check that matched
}

// freshGenesis is verifyGenesis unless one matched within the last few
// seconds: a balance read checks that the chain is still the recorded one
// (a reset chain's zero is not the agent's balance) without doubling the
// round trips of a busy status page.
func (r *Ref) freshGenesis(ctx context.Context) error {
	r.health.mu.Lock()
	fresh := time.Since(r.health.verified) < 5*time.Second
	r.health.mu.Unlock()
	if fresh {
		return nil
	}
	return r.verifyGenesis(ctx)
}

// Err is the chain's *chains.DownError while it serves nothing on this
// node, else nil.
func (r *Ref) Err() error {
	r.health.mu.Lock()
	defer r.health.mu.Unlock()
	if r.health.down == nil {
		return nil
	}
	e := *r.health.down
	switch {
	case e.Kind != chains.DownDegraded:
	case r.health.nextTry.IsZero():
		e.RetryAfter = time.Minute // no connection attempt is due
	default:
		e.RetryAfter = max(time.Until(r.health.nextTry).Round(time.Second), time.Second)
	}
	return &e
}

// State is the chain's state now.
func (r *Ref) State() State {
	var de *chains.DownError
	if errors.As(r.Err(), &de) {
		return State(de.Kind)
	}
	return Serving
}

// setDown records why the chain serves nothing (nil: it serves) and tells
// the observer when the state changed.
func (r *Ref) setDown(e *chains.DownError) {
	r.health.mu.Lock()
	before := Serving
	if r.health.down != nil {
		before = State(r.health.down.Kind)
	}
	r.health.down = e
	after := Serving
	if e != nil {
		after = State(e.Kind)
	}
	r.health.mu.Unlock()
	if so, ok := r.opts.Observer.(StateObserver); ok && (before != after || e == nil) {
		so.ChainState(r.id, string(after))
	}
}

// StartPending spawns the actor of chain id, whose connector could not be
// made at start (connect failed with chains.ErrUnavailable): the chain is
// degraded, and connect is retried in the background, with a backoff
// from Options.RetryMin to RetryMax, until it succeeds (then the chain is
// Start'ed on what it made) or Stop. A nil connect never succeeds: the
// chain stays degraded for reason (an embedded devnet that could not
// start); reason "" says the node did not answer.
func StartPending(system *actor.ActorSystem, id chains.ID, reason string, connect func(context.Context) (chains.Connector, error), opts Options) (*Ref, error) {
	r, err := spawn(system, id, opts)
	if err != nil {
		return nil, err
	}
	if reason == "" {
		reason = "its node did not answer when the server started; the server keeps trying to connect and serves the chain as soon as it answers"
	}
	r.setDown(&chains.DownError{Chain: id, Kind: chains.DownDegraded, Reason: reason})
	if connect != nil {
		r.health.mu.Lock()
		r.health.nextTry = time.Now().Add(r.opts.RetryMin)
		r.health.mu.Unlock()
		r.watch(connect)
	}
	return r, nil
}

// watch runs the chain's background health loop: connect (a pending
// chain) until it succeeds, then check the genesis every HealthEvery, so
// that a reset is found without a write, and a node back on the recorded
// chain serves again.
func (r *Ref) watch(connect func(context.Context) (chains.Connector, error)) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		if connect != nil && !r.reconnect(connect) {
			return
		}
		t := time.NewTicker(r.opts.HealthEvery)
		defer t.Stop()
		for {
			select {
			case <-r.bgctx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(r.bgctx, r.opts.HealthEvery)
			_ = r.verifyGenesis(ctx)
			cancel()
		}
	}()
}

// reconnect calls connect with a growing, jittered backoff until it
// succeeds (and attaches what it made: true) or the Ref stops (false).
func (r *Ref) reconnect(connect func(context.Context) (chains.Connector, error)) bool {
	delay := r.opts.RetryMin
	for attempt := 1; ; attempt++ {
		r.health.mu.Lock()
		r.health.nextTry = time.Now().Add(delay)
		r.health.mu.Unlock()
		timer := time.NewTimer(delay)
		select {
		case <-r.bgctx.Done():
			timer.Stop()
			return false
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(r.bgctx, max(r.opts.RetryMax, 10*time.Second))
		conn, err := connect(ctx)
		if err == nil {
			r.attach(ctx, conn)
			cancel()
			r.opts.Log.Info("chain connected: serving", "chain", r.id, "attempts", attempt, "state", r.State())
			return true
		}
		cancel()
		if r.bgctx.Err() != nil {
			return false
		}
		// One line per doubling of the attempts: an outage of hours
		// does not fill the log.
		if attempt&(attempt-1) == 0 {
			r.opts.Log.Warn("chain degraded: still no answer from its node; retrying", "chain", r.id, "attempts", attempt, "err", err)
		}
		delay = min(2*delay, r.opts.RetryMax)
		delay -= time.Duration(rand.Int64N(int64(delay)/5 + 1)) // jitter: members do not retry in step
	}
}

// verifyGenesis compares the chain's genesis with the one recorded (and
// records it on first contact). A mismatch makes the chain reset; a match
// heals a reset. A node that does not answer changes nothing.
func (r *Ref) verifyGenesis(ctx context.Context) error {
	gr, ok := r.conn().(GenesisReader)
	if !ok || r.opts.Store == nil {
		return nil
	}
	got, err := gr.Genesis(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: reading the chain's genesis: %w", chains.ErrUnavailable, r.id, err)
	}
	if got == "" {
		return nil
	}
	rec, err := r.recordedGenesis(ctx, got)
	if err != nil {
		return fmt.Errorf("chain: %s: genesis record: %w", r.id, err)
	}
	r.health.mu.Lock()
	wasReset := r.health.down != nil && r.health.down.Kind == chains.DownReset
	r.health.mu.Unlock()
	if got != rec.Hash {
		if !wasReset {
			r.opts.Log.Error("ALERT chain reset: its node serves another chain than the one recorded; refusing to sign or read on it",
				"chain", r.id, "recorded_genesis", rec.Hash, "recorded_at", rec.RecordedAt, "node_genesis", got)
		}
		r.setDown(&chains.DownError{Chain: r.id, Kind: chains.DownReset, Reason: fmt.Sprintf(
			"its node now serves another chain (genesis %s; recorded %s on %s): the chain was reset, so nothing is signed or read on it until an operator acts",
			short(got), short(rec.Hash), rec.RecordedAt.UTC().Format(time.DateOnly))})
		return r.Err()
	}
	r.health.mu.Lock()
	r.health.verified = time.Now()
	r.health.mu.Unlock()
	if wasReset {
		r.opts.Log.Warn("chain genesis matches the recorded one again: serving", "chain", r.id, "genesis", got)
		r.setDown(nil)
	}
	return nil
}

// recordedGenesis is the chain's recorded genesis, recording got when
// there is none yet (two members racing record one: the loser reads it).
func (r *Ref) recordedGenesis(ctx context.Context, got string) (GenesisRecord, error) {
	r.health.mu.Lock()
	cached := r.health.recorded
	r.health.mu.Unlock()
	if cached != "" {
		return r.readGenesis(ctx, cached)
	}
	for range 2 {
		raw, err := r.opts.Store.Get(ctx, TableGenesis, string(r.id))
		if err == nil {
			var rec GenesisRecord
			if err := json.Unmarshal(raw.Value, &rec); err != nil || rec.Hash == "" {
				return GenesisRecord{}, fmt.Errorf("unreadable record %q: %v", raw.Value, err)
			}
			r.remember(rec.Hash)
			return rec, nil
		}
		if !errors.Is(err, persistence.ErrNotFound) {
			return GenesisRecord{}, err
		}
		rec := GenesisRecord{Hash: got, RecordedAt: time.Now().UTC()}
		val, _ := json.Marshal(rec)
		_, err = r.opts.Store.Apply(ctx, persistence.Put(TableGenesis, string(r.id), val, persistence.Absent()))
		if err == nil {
			r.remember(got)
			r.opts.Log.Info("chain genesis recorded", "chain", r.id, "genesis", got)
			return rec, nil
		}
		if !errors.Is(err, persistence.ErrConflict) {
			return GenesisRecord{}, err
		}
	}
	return GenesisRecord{}, errors.New("the record changed twice while read")
}

// readGenesis is the record when the hash is already known (its date is
// read only for the alert: a failed read keeps the hash).
func (r *Ref) readGenesis(ctx context.Context, hash string) (GenesisRecord, error) {
	rec := GenesisRecord{Hash: hash}
	if raw, err := r.opts.Store.Get(ctx, TableGenesis, string(r.id)); err == nil {
		var stored GenesisRecord
		if json.Unmarshal(raw.Value, &stored) == nil && stored.Hash == hash {
			rec = stored
		}
	}
	return rec, nil
}

func (r *Ref) remember(hash string) {
	r.health.mu.Lock()
	r.health.recorded = hash
	r.health.mu.Unlock()
}

// short is a hash shortened for a message.
func short(h string) string {
	if len(h) > 18 {
		return h[:10] + "…" + h[len(h)-6:]
	}
	return h
}

// standIn is a degraded chain's connector: every operation answers the
// chain's DownError.
type standIn struct{ r *Ref }

func (s standIn) err() error {
	if err := s.r.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s: not connected yet", chains.ErrUnavailable, s.r.id)
}

func (s standIn) Chain() chains.ID       { return s.r.id }
func (s standIn) Assets() []chains.Asset { return nil }
func (s standIn) Balance(context.Context, string) (chains.Balance, error) {
	return chains.Balance{}, s.err()
}
func (s standIn) SendStealth(context.Context, chains.KeyRef, string, chains.SendRequest) (chains.TxResult, error) {
	return chains.TxResult{}, s.err()
}
func (s standIn) Scan(_ context.Context, cursor string, _ int) ([]chains.Announcement, string, error) {
	return nil, cursor, s.err()
}
func (s standIn) Withdraw(context.Context, chains.KeyRef, chains.WithdrawRequest) (chains.TxResult, error) {
	return chains.TxResult{}, s.err()
}
func (s standIn) RegisterName(context.Context, chains.KeyRef, string, string, string) (chains.TxResult, error) {
	return chains.TxResult{}, s.err()
}
func (s standIn) ResolveName(context.Context, string) (string, error) { return "", s.err() }
func (s standIn) Fund(context.Context, string) (chains.TxResult, error) {
	return chains.TxResult{}, s.err()
}
func (s standIn) TxLink(string) string { return "" }

// Ping checks that the chain serves: its DownError, or the genesis check
// of a live connector (readiness calls it, so a probe finds a reset).
func (r *Ref) Ping(ctx context.Context) error {
	if err := r.Err(); err != nil {
		var de *chains.DownError
		if errors.As(err, &de) && de.Kind == chains.DownReset {
			// A reset heals when the node serves the recorded chain again.
			return r.verifyGenesis(ctx)
		}
		return err
	}
	if err := r.verifyGenesis(ctx); err != nil {
		var de *chains.DownError
		if errors.As(err, &de) {
			return err
		}
		// A failed read of the genesis is the node's, not a reset: the
		// readiness check reports the node itself.
	}
	return nil
}
