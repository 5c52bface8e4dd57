package stellar

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

func amountString(v *big.Int) string { return chains.FormatAmount(v, Decimals) }

// indexOp is the operation that puts the index account id (announcements
// or names) in a transaction: a payment of AnnouncementStroops, or its
// creation with 1 XLM when it does not exist yet (a real network where no
// one announced before).
func (c *Connector) indexOp(ctx context.Context, id string) (txnbuild.Operation, error) {
	c.indexMu.Lock()
	known := c.indexExists[id]
	c.indexMu.Unlock()
	if !known {
		_, found, err := c.account(ctx, id)
		if err != nil {
			return nil, err
		}
		if !found {
			return &txnbuild.CreateAccount{Destination: id, Amount: "1"}, nil
		}
		c.indexMu.Lock()
		c.indexExists[id] = true
		c.indexMu.Unlock()
	}
	return &txnbuild.Payment{Destination: id, Amount: amountString(big.NewInt(AnnouncementStroops)), Asset: txnbuild.NativeAsset{}}, nil
}

// claimOps are the operations that let addr hold asset a: a trustline when
// it has none, and the claim of every claimable balance of a it can claim
// alone (at most 20 per transaction). It returns what they add to the
// trustline.
func (c *Connector) claimOps(ctx context.Context, addr string, a asset) ([]txnbuild.Operation, *big.Int, bool, error) {
	acc, _, err := c.account(ctx, addr)
	if err != nil {
		return nil, nil, false, err
	}
	bal, hasLine := lineBalance(acc, a)
	var ops []txnbuild.Operation
	if !hasLine {
		ops = append(ops, &txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: a.txn().(txnbuild.CreditAsset)}, Limit: "922337203685.4775807"})
	}
	cbs, err := c.claimableOf(ctx, addr, a)
	if err != nil {
		return nil, nil, false, err
	}
	added := new(big.Int)
	for i, cb := range cbs {
		if i == 20 {
			break
		}
		ops = append(ops, &txnbuild.ClaimClaimableBalance{BalanceID: cb.BalanceID})
		added.Add(added, stroops(cb.Amount))
	}
	return ops, new(big.Int).Add(bal, added), hasLine, nil
}

// SendStealth pays req.To (a meta-address) req.Amount of req.Asset from fromAddress (signed
// with from) in one transaction that creates the one-time account and
// announces the payment (docs/stealth.md, "Stellar and Solana"):
//
//	XLM:  createAccount(P, amount)
//	USDC: [changeTrust + claims of the sender's pending USDC]
//	      createAccount(P, 2 XLM), createClaimableBalance(USDC, amount, [P])
//	then: payment(announcement account, 1 stroop)
//	      manageData("veil.stealth.v1", view tag ‖ R), manageData("veil.stealth.v1", delete)
//
// An XLM payment must be at least 1 XLM (a new account's reserve).
func (c *Connector) SendStealth(ctx context.Context, from chains.KeyRef, fromAddress string, req chains.SendRequest) (chains.TxResult, error) {
	r, err := c.reqs.Send(fromAddress, req)
	if err != nil {
		return chains.TxResult{}, err
	}
	src, meta, a, amt := r.From, r.To, r.Asset, r.Units
	key := intents.KeyOr(req.IdempotencyKey, c.opts.Rand)
	fp := intents.Fingerprint("send", src, meta.String(), a.key(), amt.String())
	if it, _, err := c.ledger.Prior(ctx, key, fp); err != nil {
		return chains.TxResult{}, err
	} else if it != nil {
		return c.run(ctx, key, it, c.sendBuilder(it))
	}
	ann, err := edstealth.Generate(meta, c.opts.Rand)
	if err != nil {
		return chains.TxResult{}, fmt.Errorf("stellar: derive stealth address: %w", err)
	}
	payload := ann.Payload()
	it := &intent{Op: "send", Fingerprint: fp, Source: src, KeyRef: from, Params: map[string]string{
		"stealthAddress": edstealth.StellarAddress(ann.OneTimePub), "payload": hex.EncodeToString(payload[:]),
		"asset": a.key(), "amount": amt.String(), "recipient": meta.String(),
	}, Spend: spendOf(req.Asset.Spend(key, from.AgentID, chains.NewAmount(amt, Decimals), meta.String()))}
	return c.run(ctx, key, it, c.sendBuilder(it))
}

func (c *Connector) sendBuilder(it *intent) builder {
	return func(ctx context.Context) ([]txnbuild.Operation, txnbuild.Memo, error) {
		p := it.Params
		payload, err := hex.DecodeString(p["payload"])
		if err != nil || len(payload) != edstealth.PayloadSize {
			return nil, nil, fmt.Errorf("stellar: intent payload %q", p["payload"])
		}
		amt, ok := new(big.Int).SetString(p["amount"], 10)
		if !ok {
			return nil, nil, fmt.Errorf("stellar: intent amount %q", p["amount"])
		}
		var ops []txnbuild.Operation
		if p["asset"] == "native" {
			ops = append(ops, &txnbuild.CreateAccount{Destination: p["stealthAddress"], Amount: amountString(amt)})
		} else {
			code, issuer, _ := strings.Cut(p["asset"], ":")
			a := asset{code: code, issuer: issuer}
			claims, have, _, err := c.claimOps(ctx, it.Source, a)
			if err != nil {
				return nil, nil, err
			}
			if have.Cmp(amt) < 0 {
				return nil, nil, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, it.Source, amountString(have), code)
			}
			ops = append(ops, claims...)
			ops = append(ops,
				&txnbuild.CreateAccount{Destination: p["stealthAddress"], Amount: amountString(big.NewInt(TokenStartingBalance))},
				&txnbuild.CreateClaimableBalance{Amount: amountString(amt), Asset: a.txn(),
					Destinations: []txnbuild.Claimant{txnbuild.NewClaimant(p["stealthAddress"], nil)}})
		}
		idx, err := c.indexOp(ctx, c.cfg.AnnouncementAccount)
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, idx,
			&txnbuild.ManageData{Name: AnnouncementData, Value: payload},
			&txnbuild.ManageData{Name: AnnouncementData})
		return ops, nil, nil
	}
}

// Withdraw moves req.Amount of req.Asset from the one-time account req.From
// (signed with from, whose EphemeralPub selects the one-time key) to req.To.
// req.All withdraws everything and closes the account:
//
//	XLM:  [changeTrust(limit 0) of empty trustlines], accountMerge(to)
//	USDC: [changeTrust + claims], payment(to, USDC, all), changeTrust(limit 0), accountMerge(to)
//
// so nothing but the fee stays behind. A partial XLM amount is a payment
// (createAccount when `to` does not exist); a USDC destination needs a
// trustline.
func (c *Connector) Withdraw(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest) (chains.TxResult, error) {
	w, err := c.reqs.Withdraw(req)
	if err != nil {
		return chains.TxResult{}, err
	}
	src, dst, a, amt, all := w.From, w.To, w.Asset, w.Units, w.All
	if src == dst {
		return chains.TxResult{}, fmt.Errorf("%w: withdrawal to the same account", chains.ErrInvalidAddress)
	}
	amtStr := "all"
	if !all {
		amtStr = amt.String()
	}
	key := intents.KeyOr(req.IdempotencyKey, c.opts.Rand)
	it := &intent{Op: "withdrawal", Fingerprint: intents.Fingerprint("withdraw", src, dst, a.key(), amtStr), Source: src, KeyRef: from,
		Params: map[string]string{"to": dst, "asset": a.key(), "amount": amtStr},
		Spend:  spendOf(req.Asset.Spend(key, from.AgentID, chains.NewAmount(amt, Decimals), dst))}
	it.Spend.All = all
	// A one-time account the server's sponsor activated (an invoice's) may
	// hold no XLM: the sponsor is the transaction's source and pays the
	// fee; the account's key signs its operations (the spend).
	feeSrc, err := c.sponsoredBy(ctx, src)
	if err != nil {
		return chains.TxResult{}, err
	}
	// The relayer, when it is the sponsor, takes its fee for the asset out
	// of the amount moved (relayer.go: a payment to it in the same
	// transaction, the agent's second spend).
	fee := new(big.Int)
	if feeSrc != "" {
		if fee, err = c.relayerFee(a); err != nil {
			return chains.TxResult{}, err
		}
	}
	if fee.Sign() > 0 {
		if !all && amt.Cmp(fee) <= 0 {
			return chains.TxResult{}, fmt.Errorf("%w: withdrawing %s %s leaves nothing after the relayer's fee of %s %s (docs/chains-stellar.md, \"Relayer fee\"); nothing was moved",
				chains.ErrInsufficientFunds, amountString(amt), a.code, amountString(fee), a.code)
		}
		if !all {
			it.Spend.Amount = chains.NewAmount(new(big.Int).Sub(amt, fee), Decimals)
		}
		it.Params["fee"] = fee.String()
		it.Fee = spendOf(req.Asset.Spend(chains.RelayerFeeKey(key), from.AgentID, chains.NewAmount(fee, Decimals), feeSrc))
	}
	build := c.withdrawBuilder(src, dst, a, amt, all, fee, feeSrc)
	if feeSrc != "" {
		it.Source, it.Params["account"] = feeSrc, src
		inner := build
		build = func(ctx context.Context) ([]txnbuild.Operation, txnbuild.Memo, error) {
			ops, memo, err := inner(ctx)
			if err != nil || fee.Sign() == 0 {
				return withSource(ops, src), memo, err
			}
			// The relayer's own trustline, when it has none yet (source:
			// the transaction's, the relayer), before the fee reaches it.
			pre, err := c.relayerTrust(ctx, feeSrc, a)
			return append(pre, withSource(ops, src)...), memo, err
		}
	}
	// The fee rides in the withdrawal's own transaction: its record (the
	// agent's relayer_fee) shares the withdrawal's hash and settlement.
	return chains.RecordSide(ctx, req.Sides, chains.SideOf(chains.SideRelayerFee, it.Fee, key, true), func(ctx context.Context) (chains.TxResult, error) {
		return c.run(ctx, key, it, build)
	})
}

// withdrawBuilder builds Withdraw's operations (source: the one-time
// account src). A fee (> 0) is paid to rel out of the amount moved.
func (c *Connector) withdrawBuilder(src, dst string, a asset, amt *big.Int, all bool, fee *big.Int, rel string) builder {
	feeOp := func() []txnbuild.Operation {
		if fee.Sign() == 0 {
			return nil
		}
		return []txnbuild.Operation{&txnbuild.Payment{Destination: rel, Amount: amountString(fee), Asset: a.txn()}}
	}
	return func(ctx context.Context) ([]txnbuild.Operation, txnbuild.Memo, error) {
		acc, _, err := c.account(ctx, src)
		if err != nil {
			return nil, nil, err
		}
		toAcc, toFound, err := c.account(ctx, dst)
		if err != nil {
			return nil, nil, err
		}
		var ops []txnbuild.Operation
		if a.native() {
			if !all {
				net := new(big.Int).Sub(amt, fee)
				if toFound {
					ops = append(ops, &txnbuild.Payment{Destination: dst, Amount: amountString(net), Asset: txnbuild.NativeAsset{}})
				} else {
					if net.Cmp(big.NewInt(2*BaseReserve)) < 0 {
						return nil, nil, fmt.Errorf("%w: %s does not exist, and creating it takes at least 1 XLM (the minimum balance)", chains.ErrInvalidAmount, dst)
					}
					ops = append(ops, &txnbuild.CreateAccount{Destination: dst, Amount: amountString(net)})
				}
				return append(ops, feeOp()...), nil, nil
			}
			if fee.Sign() > 0 {
				if have, _ := lineBalance(acc, a); have.Cmp(fee) <= 0 {
					return nil, nil, fmt.Errorf("%w: %s holds %s XLM, not more than the relayer's fee of %s", chains.ErrInsufficientFunds, src, amountString(have), amountString(fee))
				}
				ops = append(ops, feeOp()...)
			}
			if !toFound {
				return nil, nil, fmt.Errorf("%w: %s does not exist; withdraw an amount to create it, or fund it first", chains.ErrInvalidAddress, dst)
			}
			for _, ca := range c.cfg.Assets {
				cbs, err := c.claimableOf(ctx, src, asset{code: ca.Code, issuer: ca.Issuer})
				if err != nil {
					return nil, nil, err
				}
				if len(cbs) > 0 {
					return nil, nil, fmt.Errorf("%w: %s still has %s to claim; withdraw the %s first (closing the account would strand it)", chains.ErrInvalidAmount, src, ca.Code, ca.Code)
				}
			}
			for _, b := range acc.Balances {
				if b.Type == "native" {
					continue
				}
				if stroops(b.Balance).Sign() > 0 {
					return nil, nil, fmt.Errorf("%w: %s still holds %s %s; withdraw it first", chains.ErrInvalidAmount, src, b.Balance, b.Code)
				}
				ops = append(ops, &txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: txnbuild.CreditAsset{Code: b.Code, Issuer: b.Issuer}}, Limit: "0"})
			}
			ops = append(ops, &txnbuild.AccountMerge{Destination: dst})
			return ops, nil, nil
		}
		if !toFound {
			return nil, nil, fmt.Errorf("%w: %s does not exist", chains.ErrInvalidAddress, dst)
		}
		if _, ok := lineBalance(toAcc, a); !ok && dst != a.issuer {
			return nil, nil, fmt.Errorf("%w: %s has no %s trustline", chains.ErrInvalidAddress, dst, a.code)
		}
		claims, have, _, err := c.claimOps(ctx, src, a)
		if err != nil {
			return nil, nil, err
		}
		var move *big.Int
		if all {
			move = new(big.Int).Sub(have, fee)
		} else {
			move = new(big.Int).Sub(amt, fee)
		}
		if move.Sign() <= 0 || have.Cmp(new(big.Int).Add(move, fee)) < 0 {
			if fee.Sign() > 0 {
				return nil, nil, fmt.Errorf("%w: %s holds %s %s; the withdrawal and the relayer's fee of %s take more", chains.ErrInsufficientFunds, src, amountString(have), a.code, amountString(fee))
			}
			return nil, nil, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, src, amountString(have), a.code)
		}
		ops = append(ops, claims...)
		ops = append(ops, &txnbuild.Payment{Destination: dst, Amount: amountString(move), Asset: a.txn()})
		ops = append(ops, feeOp()...)
		if all {
			ops = append(ops, &txnbuild.ChangeTrust{Line: txnbuild.ChangeTrustAssetWrapper{Asset: a.txn().(txnbuild.CreditAsset)}, Limit: "0"},
				&txnbuild.AccountMerge{Destination: dst})
		}
		return ops, nil, nil
	}
}

func spendOf(s chains.Spend) *chains.Spend { return &s }
