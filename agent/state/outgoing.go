package state

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Tables of the outgoing payment records (docs/payments.md).
const (
	// TableOutgoing: <agentID>/<paymentID> → tools.OutgoingPayment. Ids are
	// UUIDv7, so an agent's keys sort oldest to newest.
	TableOutgoing = "outgoing_payments"
	// TableOutgoingKeys: <chain>/<idempotency key> → <agentID>/<paymentID>,
	// the record a key's payment is in (the connectors' intent ledgers
	// are keyed the same way, so the settlement of a chain's intent finds
	// its record without knowing the agent).
	TableOutgoingKeys = "outgoing_keys"
	// TableOutgoingOpen: <agentID>/<paymentID> → nothing, present while
	// the record is pending or broadcast (what is still on its way).
	TableOutgoingOpen = "outgoing_open"
)

// Paging bounds of Outgoing.List.
const (
	DefaultPaymentPage = 50
	MaxPaymentPage     = 200
)

// settleGrace bounds how long before FindRecent's window a payment that
// was confirmed within the window may have been created: FindRecent walks
// the records by creation time and stops there.
const settleGrace = time.Hour

// Outgoing is one agent's outgoing payment records: a record per payment,
// written pending before the payment's signing request and moved forward
// (tools.PaymentStatus.CanBecome, checked here only) as the chain answers.
// It implements tools.OutgoingPayments; the agent actor writes with Open
// and Advance (or Transition, to commit the move with its own writes).
type Outgoing struct {
	store   persistence.Store
	agentID string
	now     func() time.Time
}

var _ tools.OutgoingPayments = (*Outgoing)(nil)

// NewOutgoing serves the outgoing payment records of agentID.
func NewOutgoing(store persistence.Store, agentID string, now func() time.Time) *Outgoing {
	return &Outgoing{store: store, agentID: agentID, now: clock(now)}
}

func (s *Outgoing) key(id string) string { return s.agentID + "/" + id }

func outgoingKeyKey(c chains.ID, key string) string { return string(c) + "/" + key }

// Open records the payment p is about to make, as pending, before its
// signing request (docs/payments.md says why nothing is lost that way).
// It sets ID, AgentID, Status and the times. A payment whose idempotency
// key already has an open or confirmed record is that record (a retry
// resumes it, and its answer is the chain's recorded one); one whose
// record failed or was refused gets a new record, as the connector then
// makes a new attempt. A key already used for another payment (chain,
// asset, amount, recipient) is refused with chains.ErrIdempotencyConflict
// and nothing is written.
func (s *Outgoing) Open(ctx context.Context, p tools.OutgoingPayment) (tools.OutgoingPayment, error) {
	if err := s.validate(p); err != nil {
		return tools.OutgoingPayment{}, err
	}
	kk := outgoingKeyKey(p.Chain, p.IdempotencyKey)
	var out tools.OutgoingPayment
	err := retry(ctx, func() error {
		rec, err := s.store.Get(ctx, TableOutgoingKeys, kk)
		var kv uint64
		switch {
		case errors.Is(err, persistence.ErrNotFound):
		case err != nil:
			return err
		default:
			kv = rec.Version
			prior, _, err := s.load(ctx, string(rec.Value))
			if err != nil {
				return err
			}
			if !samePayment(prior, p) {
				return fmt.Errorf("%w: key %q already paid %s %s to %s on %s (payment %s)", chains.ErrIdempotencyConflict, p.IdempotencyKey,
					prior.Amount, prior.Asset, prior.Recipient.Address, prior.Chain, prior.ID)
			}
			if prior.Status != tools.PaymentFailed && prior.Status != tools.PaymentRefused {
				out = prior
				return nil
			}
		}
		now := s.now().UTC()
		last, err := s.store.List(ctx, TableOutgoing, persistence.Query{Prefix: s.agentID + "/", Reverse: true, Limit: 1})
		if err != nil {
			return err
		}
		after := ""
		if len(last) == 1 {
			after = strings.TrimPrefix(last[0].Key, s.agentID+"/")
		}
		id, err := timeOrderedID(now, after)
		if err != nil {
			return err
		}
		n := p
		n.ID, n.AgentID, n.Status = id, s.agentID, tools.PaymentPending
		n.TxHash, n.TxHashes, n.Confirmations, n.Reason = "", nil, 0, ""
		n.CreatedAt, n.UpdatedAt, n.BroadcastAt, n.SettledAt = now, now, nil, nil
		if _, err := s.store.Apply(ctx,
			persistence.Put(TableOutgoing, s.key(id), mustJSON(n), persistence.Absent()),
			persistence.Put(TableOutgoingKeys, kk, []byte(s.key(id)), expectVersion(kv)),
			persistence.Put(TableOutgoingOpen, s.key(id), nil, persistence.Any())); err != nil {
			return err
		}
		out = n
		return nil
	})
	return out, err
}

func (s *Outgoing) validate(p tools.OutgoingPayment) error {
	if err := checkAgentID(s.agentID); err != nil {
		return err
	}
	// The chain is not parsed here: a record is built from a typed
	// chains.ID (tools.PaymentRequest.Record, a connector's spend) and a
	// stored one is parsed where it is decoded (OutgoingPayment's
	// UnmarshalJSON). Only its absence is a caller's mistake to catch.
	switch {
	case p.Chain == "":
		return fmt.Errorf("%w: payment without a chain", ErrInvalid)
	case p.Kind == "":
		return fmt.Errorf("%w: payment without a kind", ErrInvalid)
	case p.Source.Type == "":
		return fmt.Errorf("%w: payment without a source", ErrInvalid)
	case strings.TrimSpace(p.Asset) == "":
		return fmt.Errorf("%w: payment without an asset", ErrInvalid)
	case p.All && p.Amount.Sign() != 0, !p.All && p.Amount.Sign() <= 0:
		return fmt.Errorf("%w: amount %s (all: %t)", ErrInvalid, p.Amount, p.All)
	case p.Recipient.Address == "":
		return fmt.Errorf("%w: payment without a recipient address", ErrInvalid)
	case strings.TrimSpace(p.IdempotencyKey) == "":
		return fmt.Errorf("%w: payment without an idempotency key", ErrInvalid)
	}
	return nil
}

// samePayment says whether two records state the same spend.
func samePayment(a, b tools.OutgoingPayment) bool {
	return a.Chain == b.Chain && strings.EqualFold(a.Asset, b.Asset) && a.All == b.All &&
		a.Amount.Rat().Cmp(b.Amount.Rat()) == 0 && sameAddr(a.Chain, a.Recipient.Address, b.Recipient.Address) && a.From == b.From
}

func sameAddr(c chains.ID, a, b string) bool {
	if c.Family() == chains.FamilyEVM {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// timeOrderedID is a UUIDv7 of now, greater than the id after (the
// agent's newest; "" for none): ids sort by creation, also within one
// millisecond or when the clock steps back, so that newest first is the
// keys' order.
func timeOrderedID(now time.Time, after string) (string, error) {
	var u uuid.UUID
	if _, err := rand.Read(u[6:]); err != nil {
		return "", err
	}
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(u[:6], ms[2:])
	u[6] = 0x70 | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f
	if prev, err := uuid.Parse(after); err == nil && u.String() <= prev.String() {
		// The previous id plus one in its random tail (bytes 9-15).
		u = prev
		for i := 15; i >= 9; i-- {
			u[i]++
			if u[i] != 0 {
				break
			}
		}
	}
	return u.String(), nil
}

func (s *Outgoing) load(ctx context.Context, key string) (tools.OutgoingPayment, uint64, error) {
	var p tools.OutgoingPayment
	v, err := getJSON(ctx, s.store, TableOutgoing, key, &p)
	if errors.Is(err, ErrNotFound) {
		return p, 0, fmt.Errorf("%w: %w %s", ErrNotFound, tools.ErrNoPaymentRecord, key)
	}
	return p, v, err
}

// Get returns the record id (ErrNotFound, also matching
// tools.ErrNoPaymentRecord, when this agent has none by that id).
func (s *Outgoing) Get(ctx context.Context, id string) (tools.OutgoingPayment, error) {
	if _, err := uuid.Parse(id); err != nil || strings.ContainsAny(id, "/{}:") {
		return tools.OutgoingPayment{}, fmt.Errorf("%w: %w %q", ErrNotFound, tools.ErrNoPaymentRecord, id)
	}
	p, _, err := s.load(ctx, s.key(id))
	return p, err
}

// ByKey returns the latest record of the payment sent under the
// idempotency key on chain (tools.OutgoingPayments).
func (s *Outgoing) ByKey(ctx context.Context, chain chains.ID, key string) (tools.OutgoingPayment, error) {
	p, err := PaymentByKey(ctx, s.store, chain, key)
	if err == nil && p.AgentID != s.agentID {
		err = fmt.Errorf("%w: %w under key %q on %s", ErrNotFound, tools.ErrNoPaymentRecord, key, chain)
	}
	return p, err
}

// PaymentByKey finds, across agents, the latest record of the payment
// sent under the idempotency key on chain: what a connector's settlement
// (chain, key, tx hash, outcome) names. ErrNotFound when there is none.
func PaymentByKey(ctx context.Context, st persistence.Store, chain chains.ID, key string) (tools.OutgoingPayment, error) {
	rec, err := st.Get(ctx, TableOutgoingKeys, outgoingKeyKey(chain, key))
	if errors.Is(err, persistence.ErrNotFound) {
		return tools.OutgoingPayment{}, fmt.Errorf("%w: %w under key %q on %s", ErrNotFound, tools.ErrNoPaymentRecord, key, chain)
	}
	if err != nil {
		return tools.OutgoingPayment{}, err
	}
	var p tools.OutgoingPayment
	if _, err := getJSON(ctx, st, TableOutgoing, string(rec.Value), &p); err != nil {
		return p, err
	}
	return p, nil
}

// Transition computes the move of record id by u without applying it: the
// record as it would be, and the writes that make it (none when u changes
// nothing). The writes are guarded by the record's version, so of two
// racing moves one applies and the other fails with a conflict; a caller
// that commits a notification with the writes therefore notifies once.
// A move CanBecome refuses fails with ErrInvalidTransition.
func (s *Outgoing) Transition(ctx context.Context, id string, u tools.PaymentUpdate) (tools.OutgoingPayment, []persistence.Op, error) {
	_, next, ops, err := s.transition(ctx, id, u)
	return next, ops, err
}

func (s *Outgoing) transition(ctx context.Context, id string, u tools.PaymentUpdate) (cur, next tools.OutgoingPayment, ops []persistence.Op, err error) {
	cur, v, err := s.load(ctx, s.key(id))
	if err != nil {
		return cur, cur, nil, err
	}
	next, changed, err := advance(cur, u, s.now().UTC())
	if err != nil || !changed {
		return cur, next, nil, err
	}
	ops = []persistence.Op{persistence.Put(TableOutgoing, s.key(id), mustJSON(next), persistence.AtVersion(v))}
	if next.Status.Final() {
		ops = append(ops, persistence.Delete(TableOutgoingOpen, s.key(id), persistence.Any()))
	}
	return cur, next, ops, nil
}

// Advance applies u to record id (Transition, then its writes, re-read
// and retried on a concurrent change). moved says whether this call
// changed the status: the caller that saw moved tells the user, once.
func (s *Outgoing) Advance(ctx context.Context, id string, u tools.PaymentUpdate) (out tools.OutgoingPayment, moved bool, err error) {
	err = retry(ctx, func() error {
		cur, next, ops, err := s.transition(ctx, id, u)
		if err != nil {
			return err
		}
		out, moved = next, false
		if len(ops) == 0 {
			return nil
		}
		if _, err := s.store.Apply(ctx, ops...); err != nil {
			return err
		}
		moved = next.Status != cur.Status
		return nil
	})
	return out, moved, err
}

// advance is cur moved by u at now: the one place the forward-only rule
// (tools.PaymentStatus.CanBecome) is applied to a record.
func advance(cur tools.OutgoingPayment, u tools.PaymentUpdate, now time.Time) (tools.OutgoingPayment, bool, error) {
	if u.Status == "" || behind(u.Status, cur.Status) {
		// News the record is already past (the call's own answer after its
		// settlement came): it may add a hash, never move the status back.
		u.Status = cur.Status
	}
	if !cur.Status.CanBecome(u.Status) {
		return cur, false, fmt.Errorf("%w: payment %s is %s and cannot become %s", ErrInvalidTransition, cur.ID, cur.Status, u.Status)
	}
	if u.Status == tools.PaymentRefused && (cur.TxHash != "" || u.TxHash != "") {
		return cur, false, fmt.Errorf("%w: payment %s has a signed transaction and cannot be refused", ErrInvalidTransition, cur.ID)
	}
	next, changed := cur, false
	next.TxHashes = append([]string(nil), cur.TxHashes...)
	if u.Status != cur.Status {
		next.Status, changed = u.Status, true
	}
	if h := u.TxHash; h != "" && h != cur.TxHash {
		next.TxHash, changed = h, true
		if !slices.Contains(next.TxHashes, h) {
			next.TxHashes = append(next.TxHashes, h)
		}
	}
	if u.Confirmations > cur.Confirmations {
		next.Confirmations, changed = u.Confirmations, true
	}
	if u.Reason != "" && u.Reason != cur.Reason && !cur.Status.Final() {
		next.Reason, changed = u.Reason, true
	}
	if !changed {
		return cur, false, nil
	}
	next.UpdatedAt = now
	if next.BroadcastAt == nil && (next.Status == tools.PaymentBroadcast || next.Status == tools.PaymentConfirmed) {
		next.BroadcastAt = &now
	}
	if next.SettledAt == nil && next.Status.Final() {
		next.SettledAt = &now
	}
	return next, true, nil
}

// behind reports whether a record at status cur is already past news of
// status u: pending or broadcast news for a record further on.
func behind(u, cur tools.PaymentStatus) bool {
	switch u {
	case tools.PaymentPending:
		return cur != tools.PaymentPending
	case tools.PaymentBroadcast:
		return cur.Final() && cur != tools.PaymentRefused
	}
	return false
}

// PaymentFilter selects Outgoing.List's records. Zero fields select all.
type PaymentFilter struct {
	Status tools.PaymentStatus
	Chain  chains.ID
	// Since keeps the records created at or after it.
	Since time.Time
	// Cursor is the Next of the previous page ("" = the newest).
	Cursor string
	// Limit is the page size: 0 means DefaultPaymentPage; at most
	// MaxPaymentPage.
	Limit int
}

// PaymentPage is one page of records, newest first. Next is the cursor of
// the following page; "" when this is the last.
type PaymentPage struct {
	Payments []tools.OutgoingPayment
	Next     string
}

// List returns the agent's records that match f, newest first, one page
// at a time. A malformed cursor, status or chain is ErrInvalid.
func (s *Outgoing) List(ctx context.Context, f PaymentFilter) (PaymentPage, error) {
	if err := checkAgentID(s.agentID); err != nil {
		return PaymentPage{}, err
	}
	switch {
	case f.Status != "" && !f.Status.Valid():
		return PaymentPage{}, fmt.Errorf("%w: status %q: use pending, broadcast, confirmed, failed or refused", ErrInvalid, f.Status)
	case f.Limit < 0 || f.Limit > MaxPaymentPage:
		return PaymentPage{}, fmt.Errorf("%w: limit %d: from 1 to %d", ErrInvalid, f.Limit, MaxPaymentPage)
	}
	if f.Chain != "" {
		if _, err := chains.Parse(string(f.Chain)); err != nil {
			return PaymentPage{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
	if f.Cursor != "" {
		if _, err := uuid.Parse(f.Cursor); err != nil || strings.ContainsAny(f.Cursor, "/{}:") {
			return PaymentPage{}, fmt.Errorf("%w: cursor %q", ErrInvalid, clipStr(f.Cursor, 64))
		}
	}
	limit := f.Limit
	if limit == 0 {
		limit = DefaultPaymentPage
	}
	var page PaymentPage
	err := s.walk(ctx, f.Cursor, func(p tools.OutgoingPayment) bool {
		if !f.Since.IsZero() && p.CreatedAt.Before(f.Since) {
			return false
		}
		if (f.Status == "" || p.Status == f.Status) && (f.Chain == "" || p.Chain == f.Chain) {
			if len(page.Payments) == limit {
				page.Next = page.Payments[limit-1].ID
				return false
			}
			page.Payments = append(page.Payments, p)
		}
		return true
	})
	return page, err
}

// walk calls fn with the agent's records, newest first, after the record
// cursor ("" = from the newest), until fn answers false.
func (s *Outgoing) walk(ctx context.Context, cursor string, fn func(tools.OutgoingPayment) bool) error {
	q := persistence.Query{Prefix: s.agentID + "/", Reverse: true, Limit: 100}
	if cursor != "" {
		q.After = s.key(cursor)
	}
	for {
		recs, err := s.store.List(ctx, TableOutgoing, q)
		if err != nil {
			return err
		}
		ps, err := jsonrec.Decode[tools.OutgoingPayment](TableOutgoing, recs)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if !fn(p) {
				return nil
			}
		}
		if len(recs) < q.Limit {
			return nil
		}
		q.After = recs[len(recs)-1].Key
	}
}

// FindRecent lists the payments of amount asset on chain to address that
// are pending (however old: nobody knows where they stand), broadcast and
// last heard of within window, or confirmed within window, newest first:
// what a new request for the same payment must be asked about
// (docs/payments.md, "A second request").
func (s *Outgoing) FindRecent(ctx context.Context, chain chains.ID, address, asset string, amount chains.Amount, window time.Duration) ([]tools.OutgoingPayment, error) {
	match := func(p tools.OutgoingPayment) bool {
		return p.Chain == chain && strings.EqualFold(p.Asset, asset) && !p.All &&
			p.Amount.Rat().Cmp(amount.Rat()) == 0 && sameAddr(chain, p.Recipient.Address, address)
	}
	var out []tools.OutgoingPayment
	open, err := s.store.List(ctx, TableOutgoingOpen, persistence.Query{Prefix: s.agentID + "/", Reverse: true})
	if err != nil {
		return nil, err
	}
	for _, r := range open {
		p, _, err := s.load(ctx, r.Key)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		recent := p.Status == tools.PaymentPending || !p.UpdatedAt.Before(s.now().Add(-window))
		if p.Status.Open() && recent && match(p) {
			out = append(out, p)
		}
	}
	now := s.now()
	from := now.Add(-window - settleGrace)
	err = s.walk(ctx, "", func(p tools.OutgoingPayment) bool {
		if p.CreatedAt.Before(from) {
			return false
		}
		if p.Status == tools.PaymentConfirmed && p.SettledAt != nil && !p.SettledAt.Before(now.Add(-window)) && match(p) {
			out = append(out, p)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	// Both walks are newest first; merge them by id (time-ordered).
	sortByIDDesc(out)
	return out, nil
}

// OpenOn lists the payments on chain that are still on their way
// (pending or broadcast), newest first: what a balance mentions beside
// what the chain holds (docs/payments.md, "Balances"). It reads the open
// index (TableOutgoingOpen), so it costs the payments on their way, not
// the agent's history.
func (s *Outgoing) OpenOn(ctx context.Context, chain chains.ID) ([]tools.OutgoingPayment, error) {
	open, err := s.store.List(ctx, TableOutgoingOpen, persistence.Query{Prefix: s.agentID + "/", Reverse: true})
	if err != nil {
		return nil, err
	}
	out := []tools.OutgoingPayment{}
	for _, r := range open {
		p, _, err := s.load(ctx, r.Key)
		if errors.Is(err, ErrNotFound) {
			continue // the index outlived its record: nothing on its way
		}
		if err != nil {
			return nil, err
		}
		if p.Status.Open() && p.Chain == chain {
			out = append(out, p)
		}
	}
	return out, nil
}

func sortByIDDesc(ps []tools.OutgoingPayment) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID > ps[j].ID })
}

func clipStr(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
