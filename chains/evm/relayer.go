package evm

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

var _ chains.RelayerUser = (*Connector)(nil)

// UseRelayer implements chains.RelayerUser: from now on the relayer, never
// the agent's main account, pays the gas a one-time address lacks for a
// token withdrawal (WithdrawWithGas ignores its payer), taking its fee in
// the token (relayerFee), and submits x402 settlements
// (SettleAuthorization ignores its submitter). docs/chains-evm.md,
// "Relayer". Called once, before the connector serves.
func (c *Connector) UseRelayer(r *chains.Relayer) { c.relayer = r }

// relayerPayer is the gas payer of a withdrawal from the key from: the
// relayer when one is set and from is a one-time key, else payer.
func (c *Connector) relayerPayer(from chains.KeyRef, payer *chains.GasPayer) (*chains.GasPayer, bool) {
	if c.relayer == nil || len(from.EphemeralPub) == 0 {
		return payer, false
	}
	return &chains.GasPayer{Key: c.relayer.Key, Address: c.relayer.Address}, true
}

// relayerFee is the relayer's fee for a withdrawal of a (base units; nil
// when it takes none).
func (c *Connector) relayerFee(a asset) (*big.Int, error) {
	f := c.relayer.Fee(a.Symbol)
	if f == "" {
		return nil, nil
	}
	v, err := chains.ParseAmount(f, a.Decimals)
	if err != nil {
		return nil, fmt.Errorf("evm: %s: the relayer's %s fee %q: %w", c.cfg.Chain, a.Symbol, f, err)
	}
	if v.Sign() == 0 {
		return nil, nil
	}
	return v, nil
}

// relayerFeeSpec is the token transfer of fee from src to the relayer,
// under the agent's own spend (key chains.RelayerFeeKey(key)): the owner's
// policy sees it as a payment to the relayer.
func (c *Connector) relayerFeeSpec(from chains.KeyRef, src common.Address, a asset, fee *big.Int, key string) txSpec {
	rel := common.HexToAddress(c.relayer.Address)
	feeKey := chains.RelayerFeeKey(key)
	return txSpec{op: "relayfee", fingerprint: intents.Fingerprint("relayfee", src.Hex(), rel.Hex(), a.Symbol, fee.String()),
		from: src, ref: from, to: a.token, data: c.token.PackTransfer(rel, fee),
		extra: map[string]string{"to": rel.Hex(), "asset": a.Symbol, "amount": chains.FormatAmount(fee, a.Decimals), "for": key},
		spend: spendOf(a.Spend(feeKey, from.AgentID, chains.NewAmount(fee, a.Decimals), rel.Hex()))}
}

// relayerPaid reports what a mined transaction of the relayer cost it:
// value plus the gas it used.
func (c *Connector) relayerPaid(rc *types.Receipt, value *big.Int) {
	if c.relayer == nil || rc == nil {
		return
	}
	cost := new(big.Int)
	if value != nil {
		cost.Set(value)
	}
	if rc.EffectiveGasPrice != nil {
		cost.Add(cost, new(big.Int).Mul(new(big.Int).SetUint64(rc.GasUsed), rc.EffectiveGasPrice))
	}
	c.relayer.Paid(cost)
}

// settleSubmitter is who submits an x402 settlement: the relayer when one
// is set (the agent's main account would be linked to the invoice's
// one-time address by the transaction), else the given submitter.
func (c *Connector) settleSubmitter(submitter chains.KeyRef, address string) (chains.KeyRef, string, bool) {
	if c.relayer == nil {
		return submitter, address, false
	}
	return c.relayer.Key, c.relayer.Address, true
}

// withdrawFee is the relayer's fee transfer for a withdrawal of amt of a
// from src (nil when the relayer takes no fee in a, or took it already in
// an earlier attempt of this withdrawal) and what then goes to the
// destination: amt less the fee. A withdrawal that the fee would use up
// is refused before anything is signed.
func (c *Connector) withdrawFee(ctx context.Context, from chains.KeyRef, src common.Address, a asset, amt *big.Int, all bool, key string) (*txSpec, *big.Int, error) {
	fee, err := c.relayerFee(a)
	if err != nil || fee == nil {
		return nil, amt, err
	}
	spec := c.relayerFeeSpec(from, src, a, fee, key)
	_, paid, err := c.lookup(ctx, spec.spend.Key, "")
	if err != nil {
		return nil, nil, err
	}
	if !paid && amt.Cmp(fee) <= 0 {
		return nil, nil, fmt.Errorf("%w: withdrawing %s %s from %s leaves nothing after the relayer's fee of %s %s (docs/chains-evm.md, Relayer); nothing was moved",
			chains.ErrInsufficientFunds, chains.FormatAmount(amt, a.Decimals), a.Symbol, src.Hex(), chains.FormatAmount(fee, a.Decimals), a.Symbol)
	}
	if paid {
		// An earlier attempt paid it: "everything" is what is left now; a
		// named amount still moves amt − fee.
		if all {
			return nil, amt, nil
		}
		return nil, new(big.Int).Sub(amt, fee), nil
	}
	return &spec, new(big.Int).Sub(amt, fee), nil
}
