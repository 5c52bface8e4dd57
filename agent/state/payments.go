package state

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/persistence/jsonrec"
)

// PaymentRecord is a received payment as stored.
type PaymentRecord struct {
	tools.Payment
	// TxHashes lists every transaction that paid this address (a one-time
	// address is normally paid once; a second payment adds up).
	TxHashes    []string          `json:"txHashes"`
	Withdrawals []WithdrawalEntry `json:"withdrawals,omitempty"`
}

// WithdrawalEntry is one recorded withdrawal.
type WithdrawalEntry struct {
	TxHash string    `json:"txHash"`
	To     string    `json:"to"`
	Amount string    `json:"amount"` // "" = everything
	At     time.Time `json:"at"`
}

// Payments is one agent's received stealth payments. It implements
// tools.Payments; the scanner records with Record.
type Payments struct {
	store   persistence.Store
	agentID string
	now     func() time.Time
}

var _ tools.Payments = (*Payments)(nil)

// NewPayments serves the received payments of agentID.
func NewPayments(store persistence.Store, agentID string, now func() time.Time) *Payments {
	return &Payments{store: store, agentID: agentID, now: clock(now)}
}

func (s *Payments) key(c chains.ID, addr string) string {
	if c.Family() == chains.FamilyEVM {
		addr = strings.ToLower(addr)
	}
	return s.agentID + "/" + string(c) + "/" + addr
}

// Record stores a payment the scanner found. Delivering the same payment
// again (same chain, stealth address and transaction) changes nothing and
// returns ErrAlreadyKnown, so the caller notifies once. A different
// transaction to the same address in the same asset adds to it. Balance
// defaults to Amount and ReceivedAt to now.
func (s *Payments) Record(ctx context.Context, p tools.Payment) (tools.Payment, error) {
	if err := checkAgentID(s.agentID); err != nil {
		return tools.Payment{}, err
	}
	c, err := chains.Parse(string(p.Chain))
	if err != nil {
		return tools.Payment{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	p.Chain = c
	switch {
	case p.StealthAddress == "" || strings.Contains(p.StealthAddress, "/"):
		return tools.Payment{}, fmt.Errorf("%w: stealth address %q", ErrInvalid, p.StealthAddress)
	case p.TxHash == "":
		return tools.Payment{}, fmt.Errorf("%w: payment without a transaction hash", ErrInvalid)
	case p.Asset == "":
		return tools.Payment{}, fmt.Errorf("%w: payment without an asset", ErrInvalid)
	case !isDecimal(p.Amount):
		return tools.Payment{}, fmt.Errorf("%w: amount %q", ErrInvalid, p.Amount)
	}
	if p.Balance == "" {
		p.Balance = p.Amount
	}
	if p.ReceivedAt.IsZero() {
		p.ReceivedAt = s.now().UTC()
	}
	p.Withdrawn = false
	p.WithdrawnTo = nil
	key := s.key(c, p.StealthAddress)
	var out tools.Payment
	err = retry(ctx, func() error {
		var rec PaymentRecord
		v, err := getJSON(ctx, s.store, TablePayments, key, &rec)
		switch {
		case errors.Is(err, ErrNotFound):
			rec = PaymentRecord{Payment: p, TxHashes: []string{p.TxHash}}
		case err != nil:
			return err
		case slices.Contains(rec.TxHashes, p.TxHash) || rec.TxHash == p.TxHash:
			out = rec.Payment
			return ErrAlreadyKnown
		case rec.Asset != p.Asset:
			return fmt.Errorf("%w: %s on %s already holds a payment in %s, not %s", ErrInvalid, p.StealthAddress, c, rec.Asset, p.Asset)
		default:
			rec.Amount = addDec(rec.Amount, p.Amount)
			rec.Balance = addDec(rec.Balance, p.Amount)
			rec.Withdrawn = false
			rec.TxHashes = append(rec.TxHashes, p.TxHash)
		}
		if _, err := s.store.Apply(ctx, persistence.Put(TablePayments, key, mustJSON(rec), expectVersion(v))); err != nil {
			return err
		}
		out = rec.Payment
		return nil
	})
	return out, err
}

// Received lists the payments received on chain ("" = every chain),
// oldest first.
func (s *Payments) Received(ctx context.Context, chain chains.ID) ([]tools.Payment, error) {
	prefix := s.agentID + "/"
	if chain != "" {
		prefix += string(chain) + "/"
	}
	recs, err := jsonrec.List[PaymentRecord](ctx, s.store, TablePayments, persistence.Query{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	out := make([]tools.Payment, len(recs))
	for i, rec := range recs {
		out[i] = rec.Payment
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ReceivedAt.Before(out[j].ReceivedAt) })
	return out, nil
}

// Get returns one payment by chain and stealth address.
func (s *Payments) Get(ctx context.Context, chain chains.ID, stealthAddress string) (PaymentRecord, error) {
	var rec PaymentRecord
	_, err := getJSON(ctx, s.store, TablePayments, s.key(chain, stealthAddress), &rec)
	if errors.Is(err, ErrNotFound) {
		return rec, fmt.Errorf("%w: no payment at %s on %s", ErrNotFound, stealthAddress, chain)
	}
	return rec, err
}

// MarkWithdrawn records a withdrawal. An empty Amount empties the payment
// (Withdrawn, Balance "0"); otherwise Balance goes down by Amount (not
// below zero; fees are not tracked) and the payment counts as withdrawn
// when nothing is left. Recording the same TxHash twice changes nothing.
func (s *Payments) MarkWithdrawn(ctx context.Context, w tools.Withdrawal) error {
	if w.TxHash == "" {
		return fmt.Errorf("%w: withdrawal without a transaction hash", ErrInvalid)
	}
	if w.Amount != "" && !isDecimal(w.Amount) {
		return fmt.Errorf("%w: amount %q", ErrInvalid, w.Amount)
	}
	key := s.key(w.Chain, w.StealthAddress)
	return retry(ctx, func() error {
		var rec PaymentRecord
		v, err := getJSON(ctx, s.store, TablePayments, key, &rec)
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("%w: no payment at %s on %s", ErrNotFound, w.StealthAddress, w.Chain)
		}
		if err != nil {
			return err
		}
		for _, e := range rec.Withdrawals {
			if e.TxHash == w.TxHash {
				return nil
			}
		}
		if w.Amount == "" {
			rec.Balance = "0"
		} else {
			rec.Balance = subDec(rec.Balance, w.Amount)
		}
		rec.Withdrawn = isZeroDec(rec.Balance)
		if w.To != "" && !slices.Contains(rec.WithdrawnTo, w.To) {
			rec.WithdrawnTo = append(rec.WithdrawnTo, w.To)
		}
		rec.Withdrawals = append(rec.Withdrawals, WithdrawalEntry{TxHash: w.TxHash, To: w.To, Amount: w.Amount, At: s.now().UTC()})
		_, err = s.store.Apply(ctx, persistence.Put(TablePayments, key, mustJSON(rec), persistence.AtVersion(v)))
		return err
	})
}

func isDecimal(s string) bool {
	if s == "" || strings.ContainsAny(s, "eE+-/ ") {
		return false
	}
	_, ok := new(big.Rat).SetString(s)
	return ok
}

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok || s == "" {
		return new(big.Rat)
	}
	return r
}

func fmtDec(r *big.Rat, prec int) string {
	s := r.FloatString(prec)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func fracLen(s string) int {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return len(s) - i - 1
	}
	return 0
}

func addDec(a, b string) string {
	return fmtDec(new(big.Rat).Add(rat(a), rat(b)), max(fracLen(a), fracLen(b)))
}

// subDec is a - b, not below zero.
func subDec(a, b string) string {
	d := new(big.Rat).Sub(rat(a), rat(b))
	if d.Sign() < 0 {
		return "0"
	}
	return fmtDec(d, max(fracLen(a), fracLen(b)))
}

func isZeroDec(s string) bool { return rat(s).Sign() == 0 }
