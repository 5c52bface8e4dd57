//go:build !nodevnet

package stellardev

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Ledger constants (the public network's).
const (
	baseReserve = 5_000_000
	baseFee     = 100
	maxOps      = 100
)

// account is one ledger account.
type account struct {
	ID         string `json:"id"`
	Balance    int64  `json:"balance"`
	Seq        int64  `json:"seq"`
	Subentries int32  `json:"subentries"`
	Sponsoring uint32 `json:"sponsoring"`
	// Sponsored counts the reserves of this account that another account
	// pays (CAP-33): 2 for a sponsored account itself, 1 per sponsored
	// trustline. Sponsor is who sponsors the account entry ("": itself).
	Sponsored uint32                `json:"sponsored,omitempty"`
	Sponsor   string                `json:"sponsor,omitempty"`
	Data      map[string][]byte     `json:"data,omitempty"`
	Lines     map[string]*trustline `json:"lines,omitempty"` // key "CODE:ISSUER"
	Modified  uint32                `json:"modified"`
	SeqLedger uint32                `json:"seqLedger"`
}

type trustline struct {
	Balance int64 `json:"balance"`
	Limit   int64 `json:"limit"`
	// Sponsor pays the trustline's reserve ("": the account itself).
	Sponsor string `json:"sponsor,omitempty"`
}

func (a *account) clone() *account {
	b := *a
	b.Data = maps.Clone(a.Data)
	b.Lines = make(map[string]*trustline, len(a.Lines))
	for k, v := range a.Lines {
		l := *v
		b.Lines[k] = &l
	}
	return &b
}

func (a *account) touch(ledger uint32) { a.Modified = ledger }

func (a *account) minBalance() int64 {
	return (2 + int64(a.Subentries) + int64(a.Sponsoring) - int64(a.Sponsored)) * baseReserve
}

func (a *account) available() int64 { return a.Balance - a.minBalance() }

// claimable is one claimable balance.
type claimable struct {
	ID        string   `json:"id"` // hex of the XDR ClaimableBalanceId
	Asset     string   `json:"asset"`
	Amount    int64    `json:"amount"`
	Claimants []string `json:"claimants"`
	Sponsor   string   `json:"sponsor"`
	Modified  uint32   `json:"modified"`
}

func (c *claimable) clone() *claimable {
	d := *c
	d.Claimants = append([]string(nil), c.Claimants...)
	return &d
}

func (c *claimable) touch(ledger uint32) { c.Modified = ledger }

// txRecord is one transaction in the history.
type txRecord struct {
	Hash         string    `json:"hash"`
	Ledger       uint32    `json:"ledger"`
	PT           int64     `json:"pt"`
	Created      time.Time `json:"created"`
	Source       string    `json:"source"`
	Seq          int64     `json:"seq"`
	MaxFee       int64     `json:"maxFee"`
	FeeCharged   int64     `json:"feeCharged"`
	OpCount      int32     `json:"opCount"`
	Envelope     string    `json:"envelope"`
	Result       string    `json:"result"`
	Successful   bool      `json:"successful"`
	Participants []string  `json:"participants"`
	MemoType     string    `json:"memoType"`
	Memo         string    `json:"memo,omitempty"`
	ResultCodes  []string  `json:"resultCodes,omitempty"` // tx code then op codes (failed only)
}

// rejection is a transaction the network refused. Included is true for
// tx_failed (fee charged, sequence consumed, recorded as unsuccessful).
type rejection struct {
	TxCode   string
	OpCodes  []string
	Result   xdr.TransactionResult
	Included bool
}

func (r *rejection) Error() string {
	return fmt.Sprintf("transaction rejected: %s %v", r.TxCode, r.OpCodes)
}

// state is the ledger: accounts and claimable balances.
type state struct {
	accounts   map[string]*account
	claimables map[string]*claimable
	ledger     uint32
}

// entry is what the ledger keeps per id (an account, a claimable
// balance): a transaction changes a clone of it, stamped with the ledger
// that last modified it.
type entry[E any] interface {
	*E
	clone() *E
	touch(ledger uint32)
}

// overlay is a copy-on-write layer over one map of the state: an entry is
// cloned into it when a transaction first reads it; a nil entry is one the
// transaction deleted.
type overlay[E any, P entry[E]] struct {
	base    map[string]*E
	changed map[string]*E
}

func newOverlay[E any, P entry[E]](base map[string]*E) overlay[E, P] {
	return overlay[E, P]{base: base, changed: map[string]*E{}}
}

// get answers the transaction's copy of id's entry (nil: there is none).
func (o overlay[E, P]) get(id string) *E {
	if e, ok := o.changed[id]; ok {
		return e
	}
	e, ok := o.base[id]
	if !ok {
		return nil
	}
	c := P(e).clone()
	o.changed[id] = c
	return c
}

// set makes e id's entry (nil: deletes it).
func (o overlay[E, P]) set(id string, e *E) { o.changed[id] = e }

// commit applies the layer to the base map, stamping what it writes with
// ledger, and returns the ids it changed, sorted.
func (o overlay[E, P]) commit(ledger uint32) []string {
	var ids []string
	for id, e := range o.changed {
		if e == nil {
			delete(o.base, id)
		} else {
			P(e).touch(ledger)
			o.base[id] = e
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// view is a copy-on-write overlay of state for one transaction.
type view struct {
	accounts   overlay[account, *account]
	claimables overlay[claimable, *claimable]
	ledger     uint32
	// sponsoring maps a sponsored account to its sponsor between
	// beginSponsoringFutureReserves and endSponsoringFutureReserves (CAP-33);
	// it must be empty when the transaction ends (else tx_bad_sponsorship).
	sponsoring map[string]string
}

func newView(s *state) *view {
	return &view{accounts: newOverlay[account](s.accounts), claimables: newOverlay[claimable](s.claimables), ledger: s.ledger, sponsoring: map[string]string{}}
}

func (v *view) account(id string) *account     { return v.accounts.get(id) }
func (v *view) create(a *account)              { v.accounts.set(a.ID, a) }
func (v *view) remove(id string)               { v.accounts.set(id, nil) }
func (v *view) claimable(id string) *claimable { return v.claimables.get(id) }

// commit applies the overlay to the base state and returns what changed.
func (v *view) commit() (accts []string, cbs []string) {
	return v.accounts.commit(v.ledger), v.claimables.commit(v.ledger)
}

func assetKey(a xdr.Asset) string {
	if a.Type == xdr.AssetTypeAssetTypeNative {
		return "native"
	}
	return a.StringCanonical()
}

func assetIssuer(a xdr.Asset) string {
	if a.Type == xdr.AssetTypeAssetTypeNative {
		return ""
	}
	return a.GetIssuer()
}

// applied is the outcome of a transaction that entered the ledger.
type applied struct {
	rec      txRecord
	accounts []string
	cbs      []string
}

// apply validates and applies one envelope at ledger seq `ledger` and time
// now. It returns a rejection for what the network refuses; a tx_failed
// rejection still changed the state (fee and sequence) and carries the
// record in applied.
func (s *state) apply(envB64, passphrase string, now time.Time) (*applied, *rejection) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(envB64, &env); err != nil {
		return nil, txReject(xdr.TransactionResultCodeTxMalformed, 0)
	}
	if env.IsFeeBump() {
		return nil, txReject(xdr.TransactionResultCodeTxNotSupported, 0)
	}
	ops := env.Operations()
	if len(ops) == 0 {
		return nil, txReject(xdr.TransactionResultCodeTxMissingOperation, 0)
	}
	if len(ops) > maxOps {
		return nil, txReject(xdr.TransactionResultCodeTxMalformed, 0)
	}
	if tb := env.TimeBounds(); tb != nil {
		t := uint64(now.Unix())
		if uint64(tb.MinTime) > t {
			return nil, txReject(xdr.TransactionResultCodeTxTooEarly, 0)
		}
		if tb.MaxTime != 0 && uint64(tb.MaxTime) < t {
			return nil, txReject(xdr.TransactionResultCodeTxTooLate, 0)
		}
	}
	fee := int64(env.Fee())
	if fee < baseFee*int64(len(ops)) {
		return nil, txReject(xdr.TransactionResultCodeTxInsufficientFee, baseFee*int64(len(ops)))
	}
	srcMux := env.SourceAccount()
	srcID := srcMux.ToAccountId()
	src := srcID.Address()
	srcAcct := s.accounts[src]
	if srcAcct == nil {
		return nil, txReject(xdr.TransactionResultCodeTxNoAccount, 0)
	}
	if env.SeqNum() != srcAcct.Seq+1 {
		return nil, txReject(xdr.TransactionResultCodeTxBadSeq, 0)
	}
	hash, err := network.HashTransactionInEnvelope(env, passphrase)
	if err != nil {
		return nil, txReject(xdr.TransactionResultCodeTxMalformed, 0)
	}
	// Signatures: every signature must verify for one of the accounts
	// whose authority the transaction needs, and each of them must have
	// signed (master key, weight 1, thresholds 0: the network's default).
	need := map[string]bool{src: true}
	for _, op := range ops {
		if op.SourceAccount != nil {
			need[op.SourceAccount.ToAccountId().Address()] = true
		}
	}
	signed := map[string]bool{}
	for _, sig := range env.Signatures() {
		matched := false
		for id := range need {
			pub := rawKey(id)
			if pub == nil || !bytes.Equal(pub[28:], sig.Hint[:]) {
				continue
			}
			if ed25519.Verify(pub, hash[:], sig.Signature) {
				signed[id], matched = true, true
				break
			}
		}
		if !matched {
			if !signed[src] {
				return nil, txReject(xdr.TransactionResultCodeTxBadAuth, 0)
			}
			return nil, txReject(xdr.TransactionResultCodeTxBadAuthExtra, 0)
		}
	}
	if !signed[src] {
		return nil, txReject(xdr.TransactionResultCodeTxBadAuth, 0)
	}
	if srcAcct.Balance-fee < 0 || srcAcct.available() < fee {
		return nil, txReject(xdr.TransactionResultCodeTxInsufficientBalance, 0)
	}

	// The transaction enters the ledger: fee and sequence first; they stay
	// when an operation fails.
	ledger := s.ledger + 1
	s.ledger = ledger
	charge := baseFee * int64(len(ops))
	feeView := newView(s)
	fa := feeView.account(src)
	fa.Balance -= charge
	fa.Seq = env.SeqNum()
	fa.SeqLedger = ledger
	feeAccts, _ := feeView.commit()
	opv := newView(s)

	results := make([]xdr.OperationResult, len(ops))
	codes := make([]string, len(ops))
	participants := map[string]bool{src: true}
	failed := false
	for i, op := range ops {
		opSrc := src
		if op.SourceAccount != nil {
			opSrc = op.SourceAccount.ToAccountId().Address()
			participants[opSrc] = true
		}
		var res xdr.OperationResult
		var code string
		if !signed[opSrc] {
			res, code = xdr.OperationResult{Code: xdr.OperationResultCodeOpBadAuth}, "op_bad_auth"
		} else if opv.account(opSrc) == nil {
			res, code = xdr.OperationResult{Code: xdr.OperationResultCodeOpNoAccount}, "op_no_source_account"
		} else {
			res, code = applyOp(opv, op, opSrc, i, srcID, env.SeqNum(), participants)
		}
		results[i], codes[i] = res, code
		if code != "op_success" {
			failed = true
		}
	}
	// A sponsorship begun and never ended fails the transaction
	// (txBAD_SPONSORSHIP), its fee charged.
	badSponsorship := !failed && len(opv.sponsoring) > 0
	failed = failed || badSponsorship
	memoType, memo := memoOf(env.Memo())
	rec := txRecord{
		Hash: hex.EncodeToString(hash[:]), Ledger: ledger, PT: int64(ledger)<<32 | 1<<12,
		Created: now.UTC().Truncate(time.Second), Source: src, Seq: env.SeqNum(), MaxFee: fee,
		FeeCharged: charge, OpCount: int32(len(ops)), Envelope: envB64, Successful: !failed,
		MemoType: memoType, Memo: memo,
	}
	var result xdr.TransactionResult
	result.FeeCharged = xdr.Int64(charge)
	result.Result.Results = &results
	if badSponsorship {
		result.Result.Code = xdr.TransactionResultCodeTxBadSponsorship
	} else if failed {
		result.Result.Code = xdr.TransactionResultCodeTxFailed
	} else {
		result.Result.Code = xdr.TransactionResultCodeTxSuccess
	}
	rb, _ := xdr.MarshalBase64(result)
	rec.Result = rb
	for p := range participants {
		rec.Participants = append(rec.Participants, p)
	}
	sort.Strings(rec.Participants)

	out := &applied{rec: rec, accounts: feeAccts}
	if failed {
		txCode := txCodeString(result.Result.Code)
		out.rec.ResultCodes = append([]string{txCode}, codes...)
		return out, &rejection{TxCode: txCode, OpCodes: codes, Result: result, Included: true}
	}
	a2, c2 := opv.commit()
	out.accounts = dedupe(append(out.accounts, a2...))
	out.cbs = c2
	return out, nil
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func memoOf(m xdr.Memo) (string, string) {
	switch m.Type {
	case xdr.MemoTypeMemoText:
		return "text", m.MustText()
	case xdr.MemoTypeMemoId:
		return "id", fmt.Sprint(m.MustId())
	case xdr.MemoTypeMemoHash:
		h := m.MustHash()
		return "hash", b64(h[:])
	case xdr.MemoTypeMemoReturn:
		h := m.MustRetHash()
		return "return", b64(h[:])
	}
	return "none", ""
}

func rawKey(id string) ed25519.PublicKey {
	var aid xdr.AccountId
	if err := aid.SetAddress(id); err != nil || aid.Ed25519 == nil {
		return nil
	}
	k := *aid.Ed25519
	return ed25519.PublicKey(k[:])
}
