package solana

import (
	"context"
	"fmt"
	"math/big"
	"strconv"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/programs/token"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

var _ chains.RelayerUser = (*Connector)(nil)

// UseRelayer implements chains.RelayerUser: from now on the relayer is
// the fee payer of every token withdrawal from a one-time address, so an
// address that holds only USDC can withdraw, and no SOL of the agent's
// main account ever reaches it (docs/chains-solana.md, "Relayer"). Called
// once, before the connector serves.
func (c *Connector) UseRelayer(r *chains.Relayer) { c.relayer = r }

// relayed says whether a withdrawal of a by the key from goes through the
// relayer: a token, from a one-time address, with a relayer set. A SOL
// withdrawal pays its own fee from the SOL it moves.
func (c *Connector) relayed(from chains.KeyRef, a asset) bool {
	return c.relayer != nil && len(from.EphemeralPub) > 0 && !a.Native()
}

// withdrawRelayed is a token withdrawal whose fee payer is the relayer.
// One transaction, signed by the relayer (fee payer, under its own spend:
// the fee and the rent of any token account it creates) and by the
// one-time address (under the withdrawal's spend and the relayer's fee, a
// second spend of the agent in the same signing request): it creates the
// destination's token account if needed (rent from the relayer), moves
// the amount less the relayer's fee to the destination and the fee to the
// relayer's token account; for "everything" it then closes the address's
// token account and sends every lamport the address holds to the
// destination, so nothing is left and no fee was taken from it.
func (c *Connector) withdrawRelayed(ctx context.Context, from chains.KeyRef, src, dst solanago.PublicKey, a asset, amt uint64, all bool, key string, sides chains.SideRecorder) (chains.TxResult, error) {
	rel, err := parseAddress(c.relayer.Address)
	if err != nil {
		return chains.TxResult{}, err
	}
	fee := uint64(0)
	if f := c.relayer.Fee(a.Symbol); f != "" {
		v, err := chains.ParseAmount(f, a.Decimals)
		if err != nil {
			return chains.TxResult{}, fmt.Errorf("solana: the relayer's %s fee %q: %w", a.Symbol, f, err)
		}
		if fee, err = baseUnits(v); err != nil {
			return chains.TxResult{}, err
		}
	}
	amtStr := "all"
	if !all {
		if amt <= fee {
			return chains.TxResult{}, fmt.Errorf("%w: withdrawing %s %s leaves nothing after the relayer's fee of %s %s (docs/chains-solana.md, Relayer); nothing was moved",
				chains.ErrInsufficientFunds, format(amt, a.Decimals), a.Symbol, format(fee, a.Decimals), a.Symbol)
		}
		amtStr = strconv.FormatUint(amt, 10)
	}
	it := &intent{Op: "withdrawal", Fingerprint: intents.Fingerprint("withdraw", src.String(), dst.String(), a.Symbol, amtStr, "relayer", rel.String()), Source: src.String(), KeyRef: from,
		Params: map[string]string{"to": dst.String(), "asset": a.Symbol, "amount": amtStr, "feePayer": rel.String()},
		Spend:  spendOf(a.Spend(key, from.AgentID, chains.NewAmount(new(big.Int).SetUint64(amt-fee), a.Decimals), dst.String())),
		// The relayer's spend: what it pays, set by the builder per attempt.
		Relayer: spendOf(c.NativeAsset().Spend("relay/"+key, chains.RelayerID, chains.NewAmount(big.NewInt(2*LamportsPerSignature), Decimals), src.String()))}
	if all {
		it.Spend.Amount, it.Spend.All = chains.Amount{}, true
	}
	if fee > 0 {
		it.Fee = spendOf(a.Spend(chains.RelayerFeeKey(key), from.AgentID, chains.NewAmount(new(big.Int).SetUint64(fee), a.Decimals), rel.String()))
	}
	var cost uint64
	build := func(ctx context.Context) ([]solanago.Instruction, error) {
		srcATA, dstATA, relATA := ata(src, a.mint), ata(dst, a.mint), ata(rel, a.mint)
		have, exists, err := c.tokenAmount(ctx, srcATA)
		if err != nil {
			return nil, err
		}
		move := amt - fee
		if all {
			if have <= fee {
				return nil, fmt.Errorf("%w: %s holds %s %s, not more than the relayer's fee of %s", chains.ErrInsufficientFunds, src, format(have, a.Decimals), a.Symbol, format(fee, a.Decimals))
			}
			move = have - fee
		}
		if !exists || move == 0 || have < move+fee {
			return nil, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, src, format(have, a.Decimals), a.Symbol)
		}
		cost = 2 * LamportsPerSignature
		var ixs []solanago.Instruction
		for _, acct := range []struct {
			owner, ata solanago.PublicKey
			need       bool
		}{{dst, dstATA, true}, {rel, relATA, fee > 0}} {
			if !acct.need {
				continue
			}
			_, ok, err := c.tokenAmount(ctx, acct.ata)
			if err != nil {
				return nil, err
			}
			if !ok {
				r165, err := c.rentExempt(ctx, 165)
				if err != nil {
					return nil, err
				}
				cost += r165
				ixs = append(ixs, createATAIdempotent(rel, acct.owner, a.mint))
			}
		}
		relBal, err := c.lamports(ctx, rel)
		if err != nil {
			return nil, err
		}
		if relBal < cost {
			return nil, fmt.Errorf("%w: the solana relayer %s holds %s SOL, the withdrawal's fee and accounts take %s: the operator must fund the relayer (docs/operations.md, Relayers); nothing was moved",
				chains.ErrInsufficientFunds, rel, format(relBal, Decimals), format(cost, Decimals))
		}
		it.Relayer.Amount = chains.NewAmount(new(big.Int).SetUint64(cost), Decimals)
		ixs = append(ixs, token.NewTransferCheckedInstruction(move, uint8(a.Decimals), srcATA, a.mint, dstATA, src, nil).Build())
		if fee > 0 {
			ixs = append(ixs, token.NewTransferCheckedInstruction(fee, uint8(a.Decimals), srcATA, a.mint, relATA, src, nil).Build())
		}
		if all {
			// The emptied token account's rent and any SOL the address
			// holds go to the destination: nothing stays behind.
			ixs = append(ixs, token.NewCloseAccountInstruction(srcATA, dst, src, nil).Build())
			bal, err := c.lamports(ctx, src)
			if err != nil {
				return nil, err
			}
			if bal > 0 {
				ixs = append(ixs, system.NewTransferInstruction(bal, src, dst).Build())
			}
		}
		return ixs, nil
	}
	// The fee rides in the withdrawal's own transaction: its record (the
	// agent's relayer_fee) shares the withdrawal's hash and settlement.
	res, err := chains.RecordSide(ctx, sides, chains.SideOf(chains.SideRelayerFee, it.Fee, key, true), func(ctx context.Context) (chains.TxResult, error) {
		return c.run(ctx, key, it, build)
	})
	if err == nil {
		c.relayer.Paid(new(big.Int).SetUint64(cost))
	}
	return res, err
}
