package state

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Tables of the prepared invoice destinations (docs/invoices.md, "Stellar
// destinations": what the sponsor locks in them comes back).
const (
	// TableInvoiceDestinations: <chain>/<agentID>/<address> → Destination,
	// written before the address is activated, removed once it is closed.
	TableInvoiceDestinations = "invoice_destination"
	// TableInvoiceDestinationKeys: <agentID>/<create's idempotency key> →
	// <chain>/<agentID>/<address>: a retried create_invoice reuses the
	// address its failed attempt activated.
	TableInvoiceDestinationKeys = "invoice_destination_keys"
)

// Destination is an invoice's one-time address that the chain prepared
// (activated) before the invoice was stored — on Stellar an account whose
// reserves the server's sponsor locks until it is closed. It is recorded
// before the activation is sent, so no activated address is ever unknown:
// one whose create_invoice failed afterwards is reused by the retry (same
// idempotency key) or reclaimed (ReclaimDue).
type Destination struct {
	AgentID string    `json:"agentId"`
	Chain   chains.ID `json:"chain"`
	Address string    `json:"address"`
	// EphemeralPubKey (hex) derives the address's key in the enclave.
	EphemeralPubKey string `json:"ephemeralPubKey"`
	Asset           string `json:"asset"`
	// Key is the create's idempotency key ("" none).
	Key string `json:"key,omitempty"`
	// InvoiceID is set in the batch that stores the invoice ("" while
	// none was stored: the create failed or is running).
	InvoiceID string    `json:"invoiceId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// Reclaiming is set before the reclaim is sent: an invoice can no
	// longer be stored for the address (Create's batch conflicts).
	Reclaiming bool `json:"reclaiming,omitempty"`
	// NextAt is when the maintenance looks at it again (zero: at once).
	NextAt time.Time `json:"nextAt,omitzero"`
	// Tries and LastError: the reclaims refused or failed so far.
	Tries     int    `json:"tries,omitempty"`
	LastError string `json:"lastError,omitempty"`
}

func destinationKey(c chains.ID, agentID, addr string) string {
	return string(c) + "/" + agentID + "/" + addr
}

// Key is the record's key in TableInvoiceDestinations.
func (d Destination) key() string { return destinationKey(d.Chain, d.AgentID, d.Address) }

// Ephemeral decodes EphemeralPubKey.
func (d Destination) Ephemeral() ([]byte, error) { return hex.DecodeString(d.EphemeralPubKey) }

// WithPrepares says on which chains the prep of WithPrep activates the
// address (chains.DestinationPreparer): there Create records the
// destination before the activation (Destination) and reuses it on a
// retry of the same key. Nil: no chain.
func (s *Invoices) WithPrepares(prepares func(chains.ID) bool) *Invoices {
	s.prepares = prepares
	return s
}

// destination answers the one-time address of a new invoice on chain c,
// prepared for asset: the address a failed create with the same key
// recorded and never stored an invoice for (reused: its activation is
// exactly once per address), or a fresh one, recorded before it is
// activated.
func (s *Invoices) destination(ctx context.Context, c chains.ID, asset, key string) (string, []byte, *Destination, uint64, error) {
	if key != "" {
		ref, err := s.store.Get(ctx, TableInvoiceDestinationKeys, s.key(key))
		switch {
		case err == nil:
			var d Destination
			v, err := getJSON(ctx, s.store, TableInvoiceDestinations, string(ref.Value), &d)
			if err == nil && d.InvoiceID == "" && !d.Reclaiming && d.Chain == c && d.Asset == asset {
				eph, err := d.Ephemeral()
				if err != nil {
					return "", nil, nil, 0, fmt.Errorf("destination %s: %w", d.Address, err)
				}
				return d.Address, eph, &d, v, nil
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				return "", nil, nil, 0, err
			}
		case !errors.Is(err, persistence.ErrNotFound):
			return "", nil, nil, 0, err
		}
	}
	addr, eph, err := s.gen(ctx, c)
	if err != nil {
		return "", nil, nil, 0, fmt.Errorf("one-time address for the invoice on %s: %w", c, err)
	}
	// Not due before it could be an orphan: the maintenance leaves the
	// record alone while its create_invoice is activating the address, so
	// that create's write (AtVersion) does not conflict with a pass.
	now := s.now().UTC()
	d := &Destination{AgentID: s.agentID, Chain: c, Address: addr, EphemeralPubKey: hex.EncodeToString(eph), Asset: asset, Key: key,
		CreatedAt: now, NextAt: now.Add(OrphanAfter)}
	ops := []persistence.Op{persistence.Put(TableInvoiceDestinations, d.key(), mustJSON(d), persistence.Absent())}
	if key != "" {
		ops = append(ops, persistence.Put(TableInvoiceDestinationKeys, s.key(key), []byte(d.key()), persistence.Any()))
	}
	vs, err := s.store.Apply(ctx, ops...)
	if err != nil {
		return "", nil, nil, 0, fmt.Errorf("record the invoice's destination: %w", err)
	}
	return addr, eph, d, vs[0], nil
}

// Due reports whether the maintenance looks at d at now (its NextAt has
// come). A destination is recorded not due until OrphanAfter, and due at
// once when its invoice is stored (Create): its reclaim then follows the
// invoice (Reclaim).
func (d Destination) Due(now time.Time) bool { return !now.Before(d.NextAt) }

// Destinations lists the prepared destinations recorded on chain.
func Destinations(ctx context.Context, store persistence.Store, chain chains.ID) ([]Destination, error) {
	return jsonrec.List[Destination](ctx, store, TableInvoiceDestinations, persistence.Query{Prefix: string(chain) + "/"})
}

// OrphanAfter is how long a destination whose create_invoice stored no
// invoice is kept for a retry of the same key before it is reclaimed.
const OrphanAfter = time.Hour

// RecheckAfter is how long the maintenance waits before it looks again at
// a destination that cannot be reclaimed yet (it holds money, the
// invoice never expires) or whose reclaim failed.
const RecheckAfter = time.Hour

// Reclaim says whether d is to be reclaimed at now, and otherwise when to
// look again: an orphan (no invoice stored) after OrphanAfter; an
// invoice's destination once the invoice is closed — paid (the reclaim
// waits until its money was withdrawn: the connector refuses an address
// that holds value), or expired or cancelled unpaid. A pending invoice is
// looked at again at its expiry (or after RecheckAfter: it may be
// cancelled meanwhile).
func Reclaim(ctx context.Context, store persistence.Store, d Destination, now time.Time) (bool, time.Time, error) {
	if d.Reclaiming {
		return true, time.Time{}, nil
	}
	if d.InvoiceID == "" {
		at := d.CreatedAt.Add(OrphanAfter)
		return !now.Before(at), at, nil
	}
	inv, err := NewInvoices(store, d.AgentID, nil, "", "", nil).Record(ctx, d.InvoiceID)
	if errors.Is(err, ErrNotFound) {
		return true, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, err
	}
	if inv.Status == InvoicePaid || inv.Expired(now) {
		return true, time.Time{}, nil
	}
	next := now.Add(RecheckAfter)
	if inv.ExpiresAt != nil && inv.ExpiresAt.Before(next) {
		next = *inv.ExpiresAt
	}
	return false, next, nil
}

// MarkReclaiming sets d's Reclaiming before its reclaim is sent; it fails
// (persistence.ErrConflict) when the record changed since it was read —
// an invoice was stored for it meanwhile: read it again.
func MarkReclaiming(ctx context.Context, store persistence.Store, d Destination) (Destination, error) {
	var cur Destination
	v, err := getJSON(ctx, store, TableInvoiceDestinations, d.key(), &cur)
	if err != nil {
		return d, err
	}
	if cur.InvoiceID != d.InvoiceID {
		return cur, fmt.Errorf("%w: destination %s changed", persistence.ErrConflict, d.Address)
	}
	if cur.Reclaiming {
		return cur, nil
	}
	cur.Reclaiming = true
	_, err = store.Apply(ctx, persistence.Put(TableInvoiceDestinations, cur.key(), mustJSON(cur), persistence.AtVersion(v)))
	return cur, err
}

// DestinationLater records that d is looked at again at next (why: the
// refusal or failure of its reclaim, "" none).
func DestinationLater(ctx context.Context, store persistence.Store, d Destination, next time.Time, why string) error {
	return retry(ctx, func() error {
		var cur Destination
		v, err := getJSON(ctx, store, TableInvoiceDestinations, d.key(), &cur)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		cur.NextAt = next.UTC()
		if why != "" {
			cur.Tries++
			cur.LastError = why
		}
		_, err = store.Apply(ctx, persistence.Put(TableInvoiceDestinations, cur.key(), mustJSON(cur), persistence.AtVersion(v)))
		return err
	})
}

// DestinationReclaimed removes d (closed: the sponsor's reserves are
// back), with its idempotency key's entry when that still names it.
func DestinationReclaimed(ctx context.Context, store persistence.Store, d Destination) error {
	ops := []persistence.Op{persistence.Delete(TableInvoiceDestinations, d.key(), persistence.Any())}
	if d.Key != "" {
		k := d.AgentID + "/" + d.Key
		if rec, err := store.Get(ctx, TableInvoiceDestinationKeys, k); err == nil && string(rec.Value) == d.key() {
			ops = append(ops, persistence.Delete(TableInvoiceDestinationKeys, k, persistence.AtVersion(rec.Version)))
		}
	}
	_, err := store.Apply(ctx, ops...)
	if errors.Is(err, persistence.ErrConflict) {
		_, err = store.Apply(ctx, ops[0])
	}
	return err
}
