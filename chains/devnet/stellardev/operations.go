//go:build !nodevnet

package stellardev

// The operations of a transaction: applyOp applies one to the ledger view
// of its transaction and answers its XDR result, as stellar-core would
// (the subset Veil uses); the result codes of transactions and operations.

import (
	"crypto/sha256"

	"github.com/stellar/go-stellar-sdk/xdr"
)

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
	case xdr.TransactionResultCodeTxBadSponsorship:
		return "tx_bad_sponsorship"
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
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		tr, err = xdr.NewOperationResultTr(t, xdr.BeginSponsoringFutureReservesResult{Code: xdr.BeginSponsoringFutureReservesResultCode(c)})
	case xdr.OperationTypeEndSponsoringFutureReserves:
		tr, err = xdr.NewOperationResultTr(t, xdr.EndSponsoringFutureReservesResult{Code: xdr.EndSponsoringFutureReservesResultCode(c)})
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
		sponsorID, sponsored := v.sponsoring[dest]
		switch {
		case amt < 0 || dest == srcID:
			return fail(-1, "op_malformed")
		case v.account(dest) != nil:
			return fail(-4, "op_already_exists")
		case amt < 2*baseReserve && !sponsored:
			return fail(-3, "op_low_reserve")
		}
		created := &account{ID: dest, Balance: amt, Seq: int64(v.ledger) << 32, SeqLedger: v.ledger, Data: map[string][]byte{}, Lines: map[string]*trustline{}}
		if sponsored {
			// CAP-33: the sponsor pays the new account's two base reserves,
			// so it may start with nothing.
			sp := v.account(sponsorID)
			sp.Sponsoring += 2
			if sp.Balance < sp.minBalance() {
				sp.Sponsoring -= 2
				return fail(-3, "op_low_reserve")
			}
			created.Sponsored, created.Sponsor = 2, sponsorID
		}
		if src.available() < amt {
			if sponsored {
				v.account(sponsorID).Sponsoring -= 2
			}
			return fail(-2, "op_underfunded")
		}
		src.Balance -= amt
		v.create(created)
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
		if src.Sponsor != "" {
			// The account's sponsor gets its two reserves back.
			if sp := v.account(src.Sponsor); sp != nil {
				sp.Sponsoring -= 2
			}
		}
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
			if l.Sponsor != "" {
				// The trustline's sponsor gets its reserve back.
				if sp := v.account(l.Sponsor); sp != nil {
					sp.Sponsoring--
				}
				src.Sponsored--
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
		line := &trustline{Limit: limit}
		if sponsorID, sponsored := v.sponsoring[srcID]; sponsored {
			// CAP-33: the sponsor pays the trustline's reserve.
			sp := v.account(sponsorID)
			sp.Sponsoring++
			if sp.Balance < sp.minBalance() {
				sp.Sponsoring--
				return fail(-4, "op_low_reserve")
			}
			src.Subentries++
			src.Sponsored++
			line.Sponsor = sponsorID
		} else {
			src.Subentries++
			if src.Balance < src.minBalance() {
				src.Subentries--
				return fail(-4, "op_low_reserve")
			}
		}
		if src.Lines == nil {
			src.Lines = map[string]*trustline{}
		}
		src.Lines[key] = line
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
		v.claimables.set(id, &claimable{ID: id, Asset: key, Amount: amt, Claimants: claimants, Sponsor: srcID})
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
		v.claimables.set(id, nil)
		return ok(t)

	case xdr.OperationTypeBeginSponsoringFutureReserves:
		o := op.Body.MustBeginSponsoringFutureReservesOp()
		sponsored := o.SponsoredId.Address()
		participants[sponsored] = true
		recursive := false
		for s, sp := range v.sponsoring {
			recursive = recursive || s == srcID || sp == sponsored
		}
		switch {
		case sponsored == srcID:
			return fail(-1, "op_malformed")
		case v.sponsoring[sponsored] != "":
			return fail(-2, "op_already_sponsored")
		case recursive:
			return fail(-3, "op_recursive")
		}
		v.sponsoring[sponsored] = srcID
		return ok(t)

	case xdr.OperationTypeEndSponsoringFutureReserves:
		if v.sponsoring[srcID] == "" {
			return fail(-1, "op_not_sponsored")
		}
		delete(v.sponsoring, srcID)
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
