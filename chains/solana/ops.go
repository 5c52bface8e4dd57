package solana

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"strconv"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/stealth/edstealth"
)

// transferWithIndex is a system transfer that also lists index (the
// announcement account) as a read-only account, so that the index's
// signature history lists the transaction. The system program reads only
// its first two accounts.
func transferWithIndex(lamports uint64, from, to, index solanago.PublicKey) solanago.Instruction {
	t := system.NewTransferInstruction(lamports, from, to).Build()
	data, _ := t.Data()
	return solanago.NewInstruction(solanago.SystemProgramID, solanago.AccountMetaSlice{
		solanago.Meta(from).WRITE().SIGNER(), solanago.Meta(to).WRITE(), solanago.Meta(index),
	}, data)
}

func memo(signer solanago.PublicKey, text string) solanago.Instruction {
	return solanago.NewInstruction(solanago.MemoProgramID, solanago.AccountMetaSlice{solanago.Meta(signer).SIGNER().WRITE()}, []byte(text))
}

// createATAIdempotent is the associated token account program's
// CreateIdempotent instruction.
func createATAIdempotent(payer, wallet, mint solanago.PublicKey) solanago.Instruction {
	return solanago.NewInstruction(solanago.SPLAssociatedTokenAccountProgramID, solanago.AccountMetaSlice{
		solanago.Meta(payer).WRITE().SIGNER(), solanago.Meta(ata(wallet, mint)).WRITE(), solanago.Meta(wallet), solanago.Meta(mint),
		solanago.Meta(solanago.SystemProgramID), solanago.Meta(solanago.TokenProgramID),
	}, []byte{1})
}

func u64(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

// baseUnits is v (base units of the SPL or native asset) as the uint64 the
// programs take.
func baseUnits(v *big.Int) (uint64, error) {
	if !v.IsUint64() {
		return 0, fmt.Errorf("%w: %s base units is too large", chains.ErrInvalidAmount, v)
	}
	return v.Uint64(), nil
}

func format(v uint64, decimals int) string {
	return chains.FormatAmount(new(big.Int).SetUint64(v), decimals)
}

// SendStealth pays req.To (a meta-address) req.Amount of req.Asset from fromAddress (signed
// with from) in one transaction that funds the one-time address and
// announces the payment (docs/stealth.md, "Stellar and Solana"):
//
//	SOL:  transfer(from → P, amount; accounts + announcement account, read-only)
//	USDC: transfer(from → P, stipend; + announcement account),
//	      ATA CreateIdempotent(P, mint), TransferChecked(from's ATA → P's ATA, amount)
//	then: memo "veil:stealth:1:<hex view tag ‖ R>", signed by the sender
//
// A SOL payment must leave P rent-exempt (at least 0.00089088 SOL).
func (c *Connector) SendStealth(ctx context.Context, from chains.KeyRef, fromAddress string, req chains.SendRequest) (chains.TxResult, error) {
	r, err := c.reqs.Send(fromAddress, req)
	if err != nil {
		return chains.TxResult{}, err
	}
	src, meta, a := r.From, r.To, r.Asset
	amt, err := baseUnits(r.Units)
	if err != nil {
		return chains.TxResult{}, err
	}
	key := intents.KeyOr(req.IdempotencyKey, c.opts.Rand)
	fp := intents.Fingerprint("send", src.String(), meta.String(), a.Symbol, strconv.FormatUint(amt, 10))
	it, _, err := c.ledger.Prior(ctx, key, fp)
	if err != nil {
		return chains.TxResult{}, err
	}
	if it == nil {
		ann, err := edstealth.Generate(meta, c.opts.Rand)
		if err != nil {
			return chains.TxResult{}, fmt.Errorf("solana: derive stealth address: %w", err)
		}
		payload := ann.Payload()
		it = &intent{Op: "send", Fingerprint: fp, Source: src.String(), KeyRef: from, Params: map[string]string{
			"stealthAddress": edstealth.SolanaAddress(ann.OneTimePub), "payload": hex.EncodeToString(payload[:]),
			"asset": a.Symbol, "amount": strconv.FormatUint(amt, 10), "recipient": meta.String(),
		}, Spend: spendOf(a.Spend(key, from.AgentID, chains.NewAmount(new(big.Int).SetUint64(amt), a.Decimals), meta.String()))}
	}
	p := it.Params
	stealth := solanago.MustPublicKeyFromBase58(p["stealthAddress"])
	return c.run(ctx, key, it, func(ctx context.Context) ([]solanago.Instruction, error) {
		var ixs []solanago.Instruction
		if a.Native() {
			ixs = append(ixs, transferWithIndex(amt, src, stealth, c.ann))
		} else {
			have, _, err := c.tokenAmount(ctx, ata(src, a.mint))
			if err != nil {
				return nil, err
			}
			if have < amt {
				return nil, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, src, format(have, a.Decimals), a.Symbol)
			}
			r0, err := c.rentExempt(ctx, 0)
			if err != nil {
				return nil, err
			}
			r165, err := c.rentExempt(ctx, 165)
			if err != nil {
				return nil, err
			}
			ixs = append(ixs,
				transferWithIndex(r0+r165+TokenStipendFees, src, stealth, c.ann),
				createATAIdempotent(src, stealth, a.mint),
				token.NewTransferCheckedInstruction(amt, uint8(a.Decimals), ata(src, a.mint), a.mint, ata(stealth, a.mint), src, nil).Build(),
			)
		}
		return append(ixs, memo(src, AnnouncementMemo+p["payload"])), nil
	})
}

// Withdraw moves req.Amount of req.Asset from the one-time address req.From
// (signed with from, whose EphemeralPub selects the one-time key; the
// address pays its own fee) to req.To. req.All empties
// the address: for SOL a transfer of the balance less the fee; for a token
// the whole token balance, the token account closed and every lamport then
// transferred, so that nothing but the fee (and the destination's token
// account rent, when it had none) is spent.
func (c *Connector) Withdraw(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest) (chains.TxResult, error) {
	w, err := c.reqs.Withdraw(req)
	if err != nil {
		return chains.TxResult{}, err
	}
	src, dst, a, all := w.From, w.To, w.Asset, w.All
	if src.Equals(dst) {
		return chains.TxResult{}, fmt.Errorf("%w: withdrawal to the same address", chains.ErrInvalidAddress)
	}
	amtStr := "all"
	var amt uint64
	if !all {
		if amt, err = baseUnits(w.Units); err != nil {
			return chains.TxResult{}, err
		}
		amtStr = strconv.FormatUint(amt, 10)
	}
	key := intents.KeyOr(req.IdempotencyKey, c.opts.Rand)
	if c.relayed(from, a) {
		return c.withdrawRelayed(ctx, from, src, dst, a, amt, all, key, req.Sides)
	}
	it := &intent{Op: "withdrawal", Fingerprint: intents.Fingerprint("withdraw", src.String(), dst.String(), a.Symbol, amtStr), Source: src.String(), KeyRef: from,
		Params: map[string]string{"to": dst.String(), "asset": a.Symbol, "amount": amtStr},
		Spend:  spendOf(a.Spend(key, from.AgentID, chains.NewAmount(new(big.Int).SetUint64(amt), a.Decimals), dst.String()))}
	it.Spend.All = all
	return c.run(ctx, key, it, func(ctx context.Context) ([]solanago.Instruction, error) {
		bal, err := c.lamports(ctx, src)
		if err != nil {
			return nil, err
		}
		if bal <= LamportsPerSignature {
			return nil, fmt.Errorf("%w: %s holds %s SOL, not enough for the fee", chains.ErrInsufficientFunds, src, format(bal, Decimals))
		}
		if a.Native() {
			move := amt
			if all {
				for _, t := range c.cfg.Tokens {
					held, exists, err := c.tokenAmount(ctx, ata(src, solanago.MustPublicKeyFromBase58(t.Mint)))
					if err != nil {
						return nil, err
					}
					if exists {
						return nil, fmt.Errorf("%w: %s still has a %s account (%s); withdraw the %s first, which closes it", chains.ErrInvalidAmount, src, t.Symbol, format(held, t.Decimals), t.Symbol)
					}
				}
				move = bal - LamportsPerSignature
			} else if bal < amt+LamportsPerSignature {
				return nil, fmt.Errorf("%w: %s holds %s SOL, needs %s with the fee", chains.ErrInsufficientFunds, src, format(bal, Decimals), format(amt+LamportsPerSignature, Decimals))
			}
			return []solanago.Instruction{system.NewTransferInstruction(move, src, dst).Build()}, nil
		}
		srcATA, dstATA := ata(src, a.mint), ata(dst, a.mint)
		have, exists, err := c.tokenAmount(ctx, srcATA)
		if err != nil {
			return nil, err
		}
		move := amt
		if all {
			move = have
		}
		if !exists || move == 0 || have < move {
			return nil, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, src, format(have, a.Decimals), a.Symbol)
		}
		var ixs []solanago.Instruction
		_, dstExists, err := c.tokenAmount(ctx, dstATA)
		if err != nil {
			return nil, err
		}
		spend := uint64(LamportsPerSignature)
		if !dstExists {
			r165, err := c.rentExempt(ctx, 165)
			if err != nil {
				return nil, err
			}
			spend += r165
			ixs = append(ixs, createATAIdempotent(src, dst, a.mint))
		}
		ixs = append(ixs, token.NewTransferCheckedInstruction(move, uint8(a.Decimals), srcATA, a.mint, dstATA, src, nil).Build())
		if all {
			ataLamports, err := c.lamports(ctx, srcATA)
			if err != nil {
				return nil, err
			}
			if bal < spend {
				return nil, fmt.Errorf("%w: %s holds %s SOL, the withdrawal needs %s", chains.ErrInsufficientFunds, src, format(bal, Decimals), format(spend, Decimals))
			}
			ixs = append(ixs, token.NewCloseAccountInstruction(srcATA, src, src, nil).Build())
			if rest := bal - spend + ataLamports; rest > 0 {
				ixs = append(ixs, system.NewTransferInstruction(rest, src, dst).Build())
			}
		}
		return ixs, nil
	})
}

func spendOf(s chains.Spend) *chains.Spend { return &s }
