// Package policy is an agent's spending policy: an optional cap per
// payment and budget per UTC day for each asset, and an optional allowlist
// of recipients. The owner sets it with a fresh signature (an API key
// alone cannot loosen it); the enclave checks every payment signature
// against it and counts what it allowed, durably, before it signs.
package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/enclave"
	"github.com/veilhq/veil/persistence"
)

// Tables.
const (
	TablePolicies  = "policies"          // agent id → Policy
	TableSpent     = "policy_spent"      // agent id/YYYY-MM-DD/ASSET → total spent that UTC day
	TableSpendKeys = "policy_spend_keys" // agent id/spend key → the spend, counted once
)

// Limits of a policy.
const (
	MaxAssets    = 32
	MaxAllowlist = 100
	maxEntry     = 200
)

// ErrInvalid reports a malformed policy (400).
var ErrInvalid = errors.New("invalid spending policy")

// Policy is what the owner sets. Empty means no limit.
type Policy struct {
	// PerTransaction caps one payment, by asset symbol.
	PerTransaction map[string]string `json:"perTransaction,omitempty"`
	// Daily caps what the agent pays per UTC day, by asset symbol.
	Daily map[string]string `json:"daily,omitempty"`
	// Allowlist, when not empty, is the only recipients the agent may pay:
	// agent names (with or without .veil), meta-addresses, plain addresses.
	Allowlist []string `json:"allowlist,omitempty"`
	// Resolved holds the meta-addresses of the Veil agents named in the
	// allowlist, filled in by the server when the policy is set (payments
	// go to meta-addresses). Not part of what the owner signs.
	Resolved []string `json:"resolved,omitempty"`
	// ConfirmAbove makes a payment the agent makes in chat of more than
	// this amount of the asset wait for the user's "yes" in the
	// conversation (tools.ErrNeedsConfirmation), by asset symbol. Empty
	// (the default): no such question. Unlike ApprovalAbove it asks the
	// person chatting, not the owner's wallet.
	ConfirmAbove map[string]string `json:"confirmAbove,omitempty"`
	// Approval rules (approvals.go, docs/approvals.md).
	Approvals
}

var assetRE = regexp.MustCompile(`^[A-Z0-9]{2,12}$`)

// Normalize validates p and returns its canonical form: asset symbols
// upper-case, amounts as given (validated), allowlist trimmed, lower-cased
// for 0x addresses, without ".veil", deduplicated and sorted.
func Normalize(p Policy) (out Policy, err error) {
	for name, m := range map[string]map[string]string{"perTransaction": p.PerTransaction, "daily": p.Daily, "confirmAbove": p.ConfirmAbove} {
		if len(m) > MaxAssets {
			return Policy{}, fmt.Errorf("%w: %s names %d assets; at most %d", ErrInvalid, name, len(m), MaxAssets)
		}
		norm := map[string]string{}
		for asset, amount := range m {
			a := strings.ToUpper(strings.TrimSpace(asset))
			if !assetRE.MatchString(a) {
				return Policy{}, fmt.Errorf("%w: %s: %q is not an asset symbol (2-12 letters or digits, e.g. USDC)", ErrInvalid, name, asset)
			}
			if _, err := amountOf(amount); err != nil {
				return Policy{}, fmt.Errorf("%w: %s.%s: %v", ErrInvalid, name, a, err)
			}
			norm[a] = amount
		}
		if len(norm) > 0 {
			switch name {
			case "daily":
				out.Daily = norm
			case "confirmAbove":
				out.ConfirmAbove = norm
			default:
				out.PerTransaction = norm
			}
		}
	}
	if len(p.Allowlist) > MaxAllowlist {
		return Policy{}, fmt.Errorf("%w: allowlist has %d entries; at most %d", ErrInvalid, len(p.Allowlist), MaxAllowlist)
	}
	seen := map[string]bool{}
	for _, e := range p.Allowlist {
		r := recipientKey(e)
		if r == "" || len(r) > maxEntry {
			return Policy{}, fmt.Errorf("%w: allowlist entry %q: give a name, a meta-address or an address of at most %d characters", ErrInvalid, truncate(e), maxEntry)
		}
		if !seen[r] {
			seen[r] = true
			out.Allowlist = append(out.Allowlist, r)
		}
	}
	sort.Strings(out.Allowlist)
	for _, r := range p.Resolved {
		out.Resolved = append(out.Resolved, recipientKey(r))
	}
	sort.Strings(out.Resolved)
	if out.Approvals, err = normalizeApprovals(p.Approvals); err != nil {
		return Policy{}, err
	}
	return out, nil
}

// Hash is the canonical hash the owner signs: hex SHA-256 of the JSON of
// the normalized policy (encoding/json writes map keys sorted).
func Hash(p Policy) (string, error) {
	p.Resolved = nil
	n, err := Normalize(p)
	if err != nil {
		return "", err
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// recipientKey is how recipients compare: trimmed, without .veil, and
// lower-case for 0x addresses and EVM meta-addresses (case carries no
// meaning there; Stellar and Solana keys are case-sensitive).
func recipientKey(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), chains.NameSuffix)
	if strings.HasPrefix(strings.ToLower(s), "0x") || strings.HasPrefix(s, "st:eth:") {
		return strings.ToLower(s)
	}
	return s
}

// amountOf parses a positive decimal amount exactly.
func amountOf(s string) (*big.Rat, error) {
	if len(s) == 0 || len(s) > 40 || strings.ContainsAny(s, "eE/+- ") {
		return nil, fmt.Errorf("amount %q must be a positive decimal like 100 or 0.5", truncate(s))
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() <= 0 {
		return nil, fmt.Errorf("amount %q must be a positive decimal like 100 or 0.5", truncate(s))
	}
	return r, nil
}

// Store keeps policies and what they allowed.
type Store struct {
	st  persistence.Store
	now func() time.Time
}

var _ enclave.Authorizer = (*Store)(nil)

// NewStore returns a policy store on st; now is the clock of daily budgets
// (UTC days).
func NewStore(st persistence.Store, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{st: st, now: now}
}

// Get returns the agent's policy; ok is false when it has none.
func (s *Store) Get(ctx context.Context, agentID string) (p Policy, ok bool, err error) {
	rec, err := s.st.Get(ctx, TablePolicies, agentID)
	if errors.Is(err, persistence.ErrNotFound) {
		return Policy{}, false, nil
	}
	if err != nil {
		return Policy{}, false, err
	}
	if err := json.Unmarshal(rec.Value, &p); err != nil {
		return Policy{}, false, fmt.Errorf("policy of %s: %w", agentID, err)
	}
	return p, true, nil
}

// SetOp is the write that sets the agent's policy (normalized), for the
// caller to apply atomically with the owner signature's replay record.
func SetOp(agentID string, p Policy) (persistence.Op, error) {
	n, err := Normalize(p)
	if err != nil {
		return persistence.Op{}, err
	}
	raw, err := json.Marshal(n)
	if err != nil {
		return persistence.Op{}, err
	}
	return persistence.Put(TablePolicies, agentID, raw, persistence.Any()), nil
}

// Payment is one payment as the policy's per-payment rules see it.
type Payment struct {
	// Asset is the asset's symbol (any case).
	Asset string
	// Amount is in whole units; nil means everything the source holds (a
	// withdrawal of the whole balance).
	Amount *big.Rat
	// Recipient is a name (with or without .veil), a meta-address or an
	// address.
	Recipient string
	// ResolvedTo, when set, is the meta-address the named Recipient
	// resolves to now: the allowlist passes when either is on it.
	ResolvedTo string
	// Issuer, when set, is the name of the Veil agent of this server that
	// issued the invoice whose one-time address Recipient is (found by the
	// server in its own invoices, never taken from a caller): an invoice's
	// address is new for each invoice and never on an allowlist, so the
	// allowlist passes when its issuer is on it (Store.withIssuer).
	Issuer string
}

// Check applies the rules that hold for every single payment: the
// allowlist and the cap per payment (a capped asset needs an explicit
// amount). It is the one place these rules live: the enclave's
// Authorize, schedule_payment, schedule resume and the re-check of
// schedules under a new policy all call it. An error matches
// enclave.ErrPolicy and says which rule and what would pass. The daily
// budget is Authorize's: it depends on what was already paid today.
func (p Policy) Check(pay Payment) error {
	if len(p.Allowlist) > 0 {
		allowed := false
		for _, who := range []string{pay.Recipient, pay.ResolvedTo, pay.Issuer} {
			r := recipientKey(who)
			if r == "" {
				continue
			}
			for _, e := range p.Allowlist {
				allowed = allowed || e == r
			}
			for _, e := range p.Resolved {
				allowed = allowed || e == r
			}
		}
		switch {
		case allowed:
		case pay.Issuer != "":
			return fmt.Errorf("%w: %s is the one-time address of an invoice issued by %s%s, which is not on the allowlist; the owner can add %s%s with a new signed policy",
				enclave.ErrPolicy, truncate(pay.Recipient), pay.Issuer, chains.NameSuffix, pay.Issuer, chains.NameSuffix)
		default:
			return fmt.Errorf("%w: %s is not on the allowlist; the owner can add it with a new signed policy (an invoice's one-time address passes only when the invoice was issued by an allowlisted agent of this server)", enclave.ErrPolicy, truncate(pay.Recipient))
		}
	}
	asset := strings.ToUpper(pay.Asset)
	_, hasTx := p.PerTransaction[asset]
	_, hasDay := p.Daily[asset]
	if pay.Amount == nil && (hasTx || hasDay) {
		return fmt.Errorf("%w: %s is capped; withdraw or pay an explicit amount", enclave.ErrPolicy, asset)
	}
	if capTx, ok := p.PerTransaction[asset]; ok {
		limit, _ := amountOf(capTx)
		if pay.Amount.Cmp(limit) > 0 {
			return fmt.Errorf("%w: %s %s is over the cap of %s %s per payment", enclave.ErrPolicy, ratString(pay.Amount), asset, capTx, asset)
		}
	}
	return nil
}

// ratString renders a whole-unit amount without trailing zeros.
func ratString(r *big.Rat) string {
	s := r.FloatString(18)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// CheckPayment applies Check with the agent's current policy (none: every
// payment passes).
func (s *Store) CheckPayment(ctx context.Context, agentID string, pay Payment) error {
	p, ok, err := s.Get(ctx, agentID)
	if err != nil || !ok {
		return err
	}
	return p.Check(pay)
}

// Authorize implements enclave.Authorizer: it refuses a spend that breaks
// the agent's policy (Check, then the daily budget) and counts an allowed
// one against the day's budget, once per spend key. Counting happens
// before the signature, so a payment that then fails still uses budget:
// the safe side for money.
func (s *Store) Authorize(ctx context.Context, sp chains.Spend) error {
	p, ok, err := s.Get(ctx, sp.AgentID)
	if err != nil || !ok {
		return err
	}
	asset := strings.ToUpper(sp.Asset)
	var amount *big.Rat
	if !sp.All {
		amount = sp.Amount.Rat()
	}
	pay, err := s.withIssuer(ctx, p, sp.Chain, Payment{Asset: asset, Amount: amount, Recipient: sp.Recipient})
	if err != nil {
		return err
	}
	if err := p.Check(pay); err != nil {
		return err
	}
	capDay, hasDay := p.Daily[asset]
	if !hasDay {
		return nil
	}
	limit, _ := amountOf(capDay)
	shown := ratString(amount)
	keyRec := sp.AgentID + "/" + sp.Key
	dayKey := sp.AgentID + "/" + s.now().UTC().Format("2006-01-02") + "/" + asset
	for {
		if _, err := s.st.Get(ctx, TableSpendKeys, keyRec); err == nil {
			return nil // this payment was counted already (a second signature of it)
		} else if !errors.Is(err, persistence.ErrNotFound) {
			return err
		}
		spent, version := new(big.Rat), uint64(0)
		rec, err := s.st.Get(ctx, TableSpent, dayKey)
		switch {
		case err == nil:
			if _, ok := spent.SetString(string(rec.Value)); !ok {
				return fmt.Errorf("policy: corrupt spent total at %s", dayKey)
			}
			version = rec.Version
		case !errors.Is(err, persistence.ErrNotFound):
			return err
		}
		total := new(big.Rat).Add(spent, amount)
		if total.Cmp(limit) > 0 {
			return fmt.Errorf("%w: paying %s %s would bring today's total to %s %s, over the daily budget of %s %s (UTC day)",
				enclave.ErrPolicy, shown, asset, ratString(total), asset, capDay, asset)
		}
		expect := persistence.Absent()
		if version > 0 {
			expect = persistence.AtVersion(version)
		}
		_, err = s.st.Apply(ctx,
			persistence.Put(TableSpent, dayKey, []byte(total.RatString()), expect),
			persistence.Put(TableSpendKeys, keyRec, []byte(dayKey+" "+shown), persistence.Absent()),
		)
		if errors.Is(err, persistence.ErrConflict) {
			continue // a concurrent payment counted first: re-read
		}
		return err
	}
}
