package state

import (
	"context"
	"fmt"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// Filters of ReceivedFilter.Status: a received payment still holds some
// of its money (ReceivedHeld) or was withdrawn to the last unit
// (ReceivedWithdrawn).
const (
	ReceivedHeld      = "held"
	ReceivedWithdrawn = "withdrawn"
)

// ReceivedFilter selects one page of an agent's received payments (GET
// /agent/:id/payments/received). Zero fields select all.
type ReceivedFilter struct {
	// Chain keeps one chain's payments.
	Chain chains.ID `json:"chain,omitempty"`
	// Status: "", ReceivedHeld or ReceivedWithdrawn.
	Status string `json:"status,omitempty"`
	// Since keeps payments received at or after it.
	Since time.Time `json:"since,omitzero"`
	// After is where the page starts (the zero Cursor: the newest).
	After Cursor `json:"after,omitzero"`
	// Limit caps the page (0: DefaultPageLimit).
	Limit int `json:"limit,omitempty"`
}

// CheckReceivedStatus says whether s is a status ReceivedFilter knows.
func CheckReceivedStatus(s string) error {
	switch s {
	case "", ReceivedHeld, ReceivedWithdrawn:
		return nil
	}
	return fmt.Errorf("%w: status %q is not one of held, withdrawn", ErrInvalid, s)
}

// ReceivedPage is one page of received payments, newest first.
// NextCursor is empty on the last page.
type ReceivedPage struct {
	Payments   []PaymentRecord `json:"payments"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

// ReceivedCursor is a received payment's place in the newest-first list:
// when it was first received, then its chain and one-time address (one
// record per address and chain).
func ReceivedCursor(p PaymentRecord) Cursor {
	return Cursor{At: p.ReceivedAt, ID: string(p.Chain) + ":" + p.StealthAddress}
}

// Page lists one page of the agent's received payments (the scanner's and
// the invoice claims' durable records, one per one-time address), newest
// first, as f selects.
func (s *Payments) Page(ctx context.Context, f ReceivedFilter) (ReceivedPage, error) {
	if err := checkAgentID(s.agentID); err != nil {
		return ReceivedPage{}, err
	}
	if err := CheckReceivedStatus(f.Status); err != nil {
		return ReceivedPage{}, err
	}
	if f.Limit < 0 || f.Limit > MaxPageLimit {
		return ReceivedPage{}, fmt.Errorf("%w: limit %d is not from 1 to %d", ErrInvalid, f.Limit, MaxPageLimit)
	}
	prefix := s.agentID + "/"
	if f.Chain != "" {
		c, err := chains.Parse(string(f.Chain))
		if err != nil {
			return ReceivedPage{}, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		prefix += string(c) + "/"
	}
	recs, err := jsonrec.List[PaymentRecord](ctx, s.store, TablePayments, persistence.Query{Prefix: prefix})
	if err != nil {
		return ReceivedPage{}, err
	}
	out := make([]PaymentRecord, 0, len(recs))
	for _, rec := range recs {
		switch {
		case rec.ReceivedAt.Before(f.Since),
			f.Status == ReceivedHeld && rec.Withdrawn,
			f.Status == ReceivedWithdrawn && !rec.Withdrawn:
			continue
		}
		if len(rec.TxHashes) == 0 && rec.TxHash != "" {
			rec.TxHashes = []string{rec.TxHash}
		}
		out = append(out, rec)
	}
	page, next := pageOf(out, ReceivedCursor, f.After, f.Limit)
	return ReceivedPage{Payments: page, NextCursor: next}, nil
}
