//go:build !nodevnet

package stellardev

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
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
	ID         string                `json:"id"`
	Balance    int64                 `json:"balance"`
	Seq        int64                 `json:"seq"`
	Subentries int32                 `json:"subentries"`
	Sponsoring uint32                `json:"sponsoring"`
	Data       map[string][]byte     `json:"data,omitempty"`
	Lines      map[string]*trustline `json:"lines,omitempty"` // key "CODE:ISSUER"
	Modified   uint32                `json:"modified"`
	SeqLedger  uint32                `json:"seqLedger"`
}

type trustline struct {
	Balance int64 `json:"balance"`
	Limit   int64 `json:"limit"`
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

func (a *account) minBalance() int64 {
	return (2 + int64(a.Subentries) + int64(a.Sponsoring)) * baseReserve
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

// view is a copy-on-write overlay of state for one transaction.
type view struct {
	base       *state
	accounts   map[string]*account // nil value: deleted
	claimables map[string]*claimable
	ledger     uint32
}

func newView(s *state) *view {
	return &view{base: s, accounts: map[string]*account{}, claimables: map[string]*claimable{}, ledger: s.ledger}
}

func (v *view) account(id string) *account {
	if a, ok := v.accounts[id]; ok {
		return a
	}
	a, ok := v.base.accounts[id]
	if !ok {
		return nil
	}
	c := a.clone()
	v.accounts[id] = c
	return c
}

func (v *view) create(a *account) { v.accounts[a.ID] = a }
func (v *view) remove(id string)  { v.accounts[id] = nil }

func (v *view) claimable(id string) *claimable {
	if c, ok := v.claimables[id]; ok {
		return c
	}
	c, ok := v.base.claimables[id]
	if !ok {
		return nil
	}
	d := c.clone()
	v.claimables[id] = d
	return d
}

// commit applies the overlay to the base state and returns what changed.
func (v *view) commit() (accts []string, cbs []string) {
	for id, a := range v.accounts {
		if a == nil {
			delete(v.base.accounts, id)
		} else {
			a.Modified = v.ledger
			v.base.accounts[id] = a
		}
		accts = append(accts, id)
	}
	for id, c := range v.claimables {
		if c == nil {
			delete(v.base.claimables, id)
		} else {
			c.Modified = v.ledger
			v.base.claimables[id] = c
		}
		cbs = append(cbs, id)
	}
	sort.Strings(accts)
	sort.Strings(cbs)
	return accts, cbs
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
	if failed {
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
		out.rec.ResultCodes = append([]string{"tx_failed"}, codes...)
		return out, &rejection{TxCode: "tx_failed", OpCodes: codes, Result: result, Included: true}
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

func txReject(code xdr.TransactionResultCode, fee int64) *rejection {
	var r xdr.TransactionResult
	r.FeeCharged = xdr.Int64(fee)
	r.Result.Code = code
	return &rejection{TxCode: txCodeString(code), Result: r}
}

func txCodeString(c xdr.TransactionResultCode) string {
	switch c {
	case xdr.TransactionResultCodeTxSuccess:
		return "tx_success"
	case xdr.TransactionResultCodeTxFailed:
		return "tx_failed"
	case xdr.TransactionResultCodeTxTooEarly:
		return "tx_too_early"
	case xdr.TransactionResultCodeTxTooLate:
		return "tx_too_late"
	case xdr.TransactionResultCodeTxMissingOperation:
		return "tx_missing_operation"
	case xdr.TransactionResultCodeTxBadSeq:
		return "tx_bad_seq"
	case xdr.TransactionResultCodeTxBadAuth:
		return "tx_bad_auth"
	case xdr.TransactionResultCodeTxInsufficientBalance:
		return "tx_insufficient_balance"
	case xdr.TransactionResultCodeTxNoAccount:
		return "tx_no_source_account"
	case xdr.TransactionResultCodeTxInsufficientFee:
		return "tx_insufficient_fee"
	case xdr.TransactionResultCodeTxBadAuthExtra:
		return "tx_bad_auth_extra"
	case xdr.TransactionResultCodeTxNotSupported:
		return "tx_not_supported"
	}
	return "tx_malformed"
}

// opResult builds the result of an operation of type t with inner code c
// (0 = success) and its Horizon name.
func opResult(t xdr.OperationType, c int32, name string, extra func(*xdr.OperationResultTr)) (xdr.OperationResult, string) {
	var tr xdr.OperationResultTr
	var err error
	switch t {
	case xdr.OperationTypeCreateAccount:
		tr, err = xdr.NewOperationResultTr(t, xdr.CreateAccountResult{Code: xdr.CreateAccountResultCode(c)})
	case xdr.OperationTypePayment:
		tr, err = xdr.NewOperationResultTr(t, xdr.PaymentResult{Code: xdr.PaymentResultCode(c)})
	case xdr.OperationTypeManageData:
		tr, err = xdr.NewOperationResultTr(t, xdr.ManageDataResult{Code: xdr.ManageDataResultCode(c)})
	case xdr.OperationTypeAccountMerge:
		tr, err = xdr.NewOperationResultTr(t, xdr.AccountMergeResult{Code: xdr.AccountMergeResultCode(c)})
	case xdr.OperationTypeChangeTrust:
		tr, err = xdr.NewOperationResultTr(t, xdr.ChangeTrustResult{Code: xdr.ChangeTrustResultCode(c)})
	case xdr.OperationTypeCreateClaimableBalance:
		tr, err = xdr.NewOperationResultTr(t, xdr.CreateClaimableBalanceResult{Code: xdr.CreateClaimableBalanceResultCode(c)})
	case xdr.OperationTypeClaimClaimableBalance:
		tr, err = xdr.NewOperationResultTr(t, xdr.ClaimClaimableBalanceResult{Code: xdr.ClaimClaimableBalanceResultCode(c)})
	case xdr.OperationTypeBumpSequence:
		tr, err = xdr.NewOperationResultTr(t, xdr.BumpSequenceResult{Code: xdr.BumpSequenceResultCode(c)})
	default:
		return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, "op_not_supported"
	}
	if err != nil {
		panic(err)
	}
	if extra != nil && c == 0 {
		extra(&tr)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &tr}, name
}

func ok(t xdr.OperationType) (xdr.OperationResult, string) { return opResult(t, 0, "op_success", nil) }

// applyOp applies one operation to v; participants collects the accounts
// the history of which lists the transaction.
func applyOp(v *view, op xdr.Operation, srcID string, index int, txSource xdr.AccountId, seq int64, participants map[string]bool) (xdr.OperationResult, string) {
	t := op.Body.Type
	fail := func(c int32, name string) (xdr.OperationResult, string) { return opResult(t, c, name, nil) }
	src := v.account(srcID)
	switch t {
	case xdr.OperationTypeCreateAccount:
		o := op.Body.MustCreateAccountOp()
		dest := o.Destination.Address()
		participants[dest] = true
		amt := int64(o.StartingBalance)
		switch {
		case amt <= 0 || dest == srcID:
			return fail(-1, "op_malformed")
		case v.account(dest) != nil:
			return fail(-4, "op_already_exists")
		case amt < 2*baseReserve:
			return fail(-3, "op_low_reserve")
		case src.available() < amt:
			return fail(-2, "op_underfunded")
		}
		src.Balance -= amt
		v.create(&account{ID: dest, Balance: amt, Seq: int64(v.ledger) << 32, SeqLedger: v.ledger, Data: map[string][]byte{}, Lines: map[string]*trustline{}})
		return ok(t)

	case xdr.OperationTypePayment:
		o := op.Body.MustPaymentOp()
		dest := o.Destination.ToAccountId().Address()
		participants[dest] = true
		amt := int64(o.Amount)
		if amt <= 0 {
			return fail(-1, "op_malformed")
		}
		d := v.account(dest)
		if d == nil {
			return fail(-5, "op_no_destination")
		}
		if o.Asset.Type == xdr.AssetTypeAssetTypeNative {
			if src.available() < amt {
				return fail(-2, "op_underfunded")
			}
			src.Balance -= amt
			d = v.account(dest) // same pointer when dest == src
			d.Balance += amt
			return ok(t)
		}
		key, issuer := assetKey(o.Asset), assetIssuer(o.Asset)
		if v.account(issuer) == nil {
			return fail(-9, "op_no_issuer")
		}
		if srcID != issuer {
			l := src.Lines[key]
			if l == nil {
				return fail(-3, "op_src_no_trust")
			}
			if l.Balance < amt {
				return fail(-2, "op_underfunded")
			}
		}
		if dest != issuer {
			l := d.Lines[key]
			if l == nil {
				return fail(-6, "op_no_trust")
			}
			if l.Balance+amt > l.Limit {
				return fail(-8, "op_line_full")
			}
		}
		if srcID != issuer {
			src.Lines[key].Balance -= amt
		}
		if dest != issuer {
			d.Lines[key].Balance += amt
		}
		return ok(t)

	case xdr.OperationTypeManageData:
		o := op.Body.MustManageDataOp()
		name := string(o.DataName)
		if name == "" || len(name) > 64 {
			return fail(-4, "op_data_invalid_name")
		}
		if o.DataValue == nil {
			if _, has := src.Data[name]; !has {
				return fail(-2, "op_data_name_not_found")
			}
			delete(src.Data, name)
			src.Subentries--
			return ok(t)
		}
		if _, has := src.Data[name]; !has {
			src.Subentries++
			if src.Balance < src.minBalance() {
				src.Subentries--
				return fail(-3, "op_low_reserve")
			}
		}
		if src.Data == nil {
			src.Data = map[string][]byte{}
		}
		src.Data[name] = append([]byte(nil), (*o.DataValue)...)
		return ok(t)

	case xdr.OperationTypeAccountMerge:
		dm := op.Body.MustDestination()
		dest := dm.ToAccountId().Address()
		participants[dest] = true
		switch {
		case dest == srcID:
			return fail(-1, "op_malformed")
		case v.account(dest) == nil:
			return fail(-2, "op_no_account")
		case src.Subentries > 0:
			return fail(-4, "op_has_sub_entries")
		case src.Sponsoring > 0:
			return fail(-7, "op_is_sponsor")
		}
		bal := src.Balance
		v.account(dest).Balance += bal
		v.remove(srcID)
		return opResult(t, 0, "op_success", func(tr *xdr.OperationResultTr) {
			b := xdr.Int64(bal)
			tr.AccountMergeResult.SourceAccountBalance = &b
		})

	case xdr.OperationTypeChangeTrust:
		o := op.Body.MustChangeTrustOp()
		if o.Line.Type == xdr.AssetTypeAssetTypeNative || o.Line.Type == xdr.AssetTypeAssetTypePoolShare || o.Limit < 0 {
			return fail(-1, "op_malformed")
		}
		a := o.Line.ToAsset()
		key, issuer := assetKey(a), assetIssuer(a)
		if issuer == srcID {
			return fail(-5, "op_self_not_allowed")
		}
		if v.account(issuer) == nil {
			return fail(-2, "op_no_issuer")
		}
		l := src.Lines[key]
		limit := int64(o.Limit)
		if limit == 0 {
			if l == nil {
				return fail(-3, "op_invalid_limit")
			}
			if l.Balance > 0 {
				return fail(-3, "op_invalid_limit")
			}
			delete(src.Lines, key)
			src.Subentries--
			return ok(t)
		}
		if l != nil {
			if limit < l.Balance {
				return fail(-3, "op_invalid_limit")
			}
			l.Limit = limit
			return ok(t)
		}
		src.Subentries++
		if src.Balance < src.minBalance() {
			src.Subentries--
			return fail(-4, "op_low_reserve")
		}
		if src.Lines == nil {
			src.Lines = map[string]*trustline{}
		}
		src.Lines[key] = &trustline{Limit: limit}
		return ok(t)

	case xdr.OperationTypeCreateClaimableBalance:
		o := op.Body.MustCreateClaimableBalanceOp()
		amt := int64(o.Amount)
		if amt <= 0 || len(o.Claimants) == 0 || len(o.Claimants) > 10 {
			return fail(-1, "op_malformed")
		}
		var claimants []string
		for _, c := range o.Claimants {
			c0 := c.MustV0()
			if c0.Predicate.Type != xdr.ClaimPredicateTypeClaimPredicateUnconditional {
				return fail(-1, "op_malformed") // only unconditional claims on the devnet
			}
			claimants = append(claimants, c0.Destination.Address())
			participants[c0.Destination.Address()] = true
		}
		src.Sponsoring += uint32(len(claimants))
		if src.Balance < src.minBalance() {
			src.Sponsoring -= uint32(len(claimants))
			return fail(-2, "op_low_reserve")
		}
		key, issuer := assetKey(o.Asset), assetIssuer(o.Asset)
		if o.Asset.Type == xdr.AssetTypeAssetTypeNative {
			if src.available() < amt {
				src.Sponsoring -= uint32(len(claimants))
				return fail(-5, "op_underfunded")
			}
			src.Balance -= amt
		} else if srcID != issuer {
			l := src.Lines[key]
			if l == nil {
				src.Sponsoring -= uint32(len(claimants))
				return fail(-3, "op_no_trust")
			}
			if l.Balance < amt {
				src.Sponsoring -= uint32(len(claimants))
				return fail(-5, "op_underfunded")
			}
			l.Balance -= amt
		}
		id := balanceID(txSource, seq, index)
		v.claimables[id] = &claimable{ID: id, Asset: key, Amount: amt, Claimants: claimants, Sponsor: srcID}
		return opResult(t, 0, "op_success", func(tr *xdr.OperationResultTr) {
			var cid xdr.ClaimableBalanceId
			_ = xdr.SafeUnmarshalHex(id, &cid)
			tr.CreateClaimableBalanceResult.BalanceId = &cid
		})

	case xdr.OperationTypeClaimClaimableBalance:
		o := op.Body.MustClaimClaimableBalanceOp()
		id, _ := xdr.MarshalHex(o.BalanceId)
		cb := v.claimable(id)
		if cb == nil {
			return fail(-1, "op_does_not_exist")
		}
		isClaimant := false
		for _, c := range cb.Claimants {
			isClaimant = isClaimant || c == srcID
		}
		if !isClaimant {
			return fail(-2, "op_cannot_claim")
		}
		if cb.Asset == "native" {
			src.Balance += cb.Amount
		} else if issuerOf(cb.Asset) != srcID {
			l := src.Lines[cb.Asset]
			if l == nil {
				return fail(-4, "op_no_trust")
			}
			if l.Balance+cb.Amount > l.Limit {
				return fail(-3, "op_line_full")
			}
			l.Balance += cb.Amount
		}
		if sp := v.account(cb.Sponsor); sp != nil {
			sp.Sponsoring -= uint32(len(cb.Claimants))
		}
		v.claimables[id] = nil
		return ok(t)

	case xdr.OperationTypeBumpSequence:
		o := op.Body.MustBumpSequenceOp()
		if int64(o.BumpTo) < 0 {
			return fail(-1, "op_bad_seq")
		}
		if int64(o.BumpTo) > src.Seq {
			src.Seq = int64(o.BumpTo)
			src.SeqLedger = v.ledger
		}
		return ok(t)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, "op_not_supported"
}

func issuerOf(assetKey string) string {
	for i := len(assetKey) - 1; i >= 0; i-- {
		if assetKey[i] == ':' {
			return assetKey[i+1:]
		}
	}
	return ""
}

// balanceID is the claimable balance id of operation index of the
// transaction with source and seq: SHA-256 of the XDR HashIdPreimage
// (ENVELOPE_TYPE_OP_ID), as hex of the XDR ClaimableBalanceId.
func balanceID(source xdr.AccountId, seq int64, index int) string {
	pre := xdr.HashIdPreimage{Type: xdr.EnvelopeTypeEnvelopeTypeOpId, OperationId: &xdr.HashIdPreimageOperationId{
		SourceAccount: source, SeqNum: xdr.SequenceNumber(seq), OpNum: xdr.Uint32(index),
	}}
	raw, err := pre.MarshalBinary()
	if err != nil {
		panic(err)
	}
	h := xdr.Hash(sha256.Sum256(raw))
	id := xdr.ClaimableBalanceId{Type: xdr.ClaimableBalanceIdTypeClaimableBalanceIdTypeV0, V0: &h}
	s, err := xdr.MarshalHex(id)
	if err != nil {
		panic(err)
	}
	return s
}
