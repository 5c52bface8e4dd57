package evm

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
)

var _ chains.GasFunder = (*Connector)(nil)

// dustGas bounds the gas margin of a token transfer from a one-time
// address. The transfer is priced with tip = fee cap = P, so the address
// pays exactly gasUsed·P and keeps (limit − used)·P ≤ dustGas·P: less than
// the 21,000·P a transfer of it would cost, so nothing is left that could
// have been moved.
const dustGas = 20_000

// WithdrawWithGas is Withdraw, with the gas a token withdrawal needs and
// the one-time address lacks sent to it first from payer (the agent's main
// account), or from the relayer when one is set (UseRelayer: payer is then
// ignored, so the agent's account never funds its one-time addresses): exactly gas·P less what the address holds, in a transfer
// recorded under the key "gas/<idempotencyKey>" and signed under its own
// spend (asset: the native one, recipient: the one-time address), which
// the enclave checks against the agent's policy; payer.Record, when set,
// wraps its signing (the agent's gas_funding payment record). The call waits for that
// transfer's receipt, then submits the withdrawal. A retry with the same
// key funds nothing again. See Withdraw for the rest.
func (c *Connector) WithdrawWithGas(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest, payer chains.GasPayer) (chains.TxResult, error) {
	if _, err := parseAddress(payer.Address); err != nil {
		return chains.TxResult{}, fmt.Errorf("gas payer: %w", err)
	}
	return c.withdraw(ctx, from, req, &payer)
}

// tokenGas prices a token transfer from src for a dust-free fee: gas
// limit = estimate + min(estimate/4, dustGas), price = the current fee cap
// (tip = cap). It returns the limit and the price.
func (c *Connector) tokenGas(ctx context.Context, src, token common.Address, data []byte) (uint64, *big.Int, error) {
	est, err := c.eth.EstimateGas(ctx, callMsg(src, token, nil, data))
	if err != nil {
		return 0, nil, c.callError("estimate gas", err)
	}
	_, price, err := c.feeCaps(ctx)
	if err != nil {
		return 0, nil, err
	}
	return est + min(est/4, dustGas), price, nil
}

// fundGas makes sure src holds fee of the native asset, sending the
// shortfall from payer under the key "gas/<key>" and waiting for it. It
// returns the price the withdrawal may use: price, or, when an earlier
// attempt already funded the address at another price, what the balance
// pays per unit of gas.
func (c *Connector) fundGas(ctx context.Context, payer *chains.GasPayer, src common.Address, gas uint64, price, native *big.Int, key string) (*big.Int, error) {
	fee := new(big.Int).Mul(new(big.Int).SetUint64(gas), price)
	if native.Cmp(fee) >= 0 {
		return price, nil
	}
	nativeSym := c.cfg.Chain.NativeAsset()
	gasKey := chains.GasKey(key)
	r, funded, err := c.lookup(ctx, gasKey, "")
	if err != nil {
		return nil, err
	}
	if !funded {
		if payer == nil {
			return nil, fmt.Errorf("%w: %s holds %s %s for gas, the transfer needs up to %s; the agent's main account can pay it (WithdrawWithGas)", chains.ErrInsufficientFunds, src.Hex(),
				chains.FormatAmount(native, NativeDecimals), nativeSym, chains.FormatAmount(fee, NativeDecimals))
		}
		payerAddr, err := parseAddress(payer.Address)
		if err != nil {
			return nil, err
		}
		short := new(big.Int).Sub(fee, native)
		_, feeCap, err := c.feeCaps(ctx)
		if err != nil {
			return nil, err
		}
		pbal, err := c.eth.BalanceAt(ctx, payerAddr, nil)
		if err != nil {
			return nil, c.Unavailable("balance", err)
		}
		need := new(big.Int).Add(short, new(big.Int).Mul(big.NewInt(21000), feeCap))
		if pbal.Cmp(need) < 0 {
			if payer.Key.IsRelayer() {
				return nil, fmt.Errorf("%w: the %s relayer %s holds %s %s; paying the gas of the withdrawal from %s takes %s with its own fee: the operator must fund the relayer (docs/operations.md, Relayers); nothing was moved",
					chains.ErrInsufficientFunds, c.cfg.Chain, payerAddr.Hex(), chains.FormatAmount(pbal, NativeDecimals), nativeSym, src.Hex(), chains.FormatAmount(need, NativeDecimals))
			}
			return nil, fmt.Errorf("%w: the agent's account %s holds %s %s; paying the gas of the withdrawal from %s takes %s with its own fee: fund the account",
				chains.ErrInsufficientFunds, payerAddr.Hex(), chains.FormatAmount(pbal, NativeDecimals), nativeSym, src.Hex(), chains.FormatAmount(need, NativeDecimals))
		}
		spec := txSpec{
			op: "gas", fingerprint: intents.Fingerprint("gas", payerAddr.Hex(), src.Hex(), short.String()),
			from: payerAddr, ref: payer.Key, to: src, value: short, gas: 21000,
			extra: map[string]string{"for": key, "asset": nativeSym, "amount": chains.FormatAmount(short, NativeDecimals)},
			spend: c.nativeSpend(gasKey, payer.Key.AgentID, short, src.Hex()),
		}
		send := func(ctx context.Context) (chains.TxResult, error) { return c.submit(ctx, gasKey, spec) }
		if payer.Record != nil && !payer.Key.IsRelayer() {
			g := chains.GasFunding{Chain: c.cfg.Chain, IdempotencyKey: gasKey, For: key, To: src.Hex(), Asset: nativeSym, Amount: chains.NewAmount(short, NativeDecimals)}
			r, err = payer.Record(ctx, g, send)
		} else {
			r, err = send(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("evm: %s: paying the gas of the withdrawal from %s: %w", c.cfg.Chain, src.Hex(), err)
		}
		who := "the agent's account"
		if payer.Key.IsRelayer() {
			who = "the relayer"
		}
		c.opts.Log.Info("gas for a one-time address paid by "+who, "from", payerAddr.Hex(), "to", src.Hex(), "wei", short, "tx", r.TxHash, "key", key)
	}
	rc, err := c.WaitMined(ctx, r.TxHash)
	if err != nil {
		// The gas transfer is recorded and may be mined: it is a payment
		// of its own (key gas/<key>), and the withdrawal is not signed yet.
		return nil, c.OutcomeUnknown(gasKey, r.TxHash, "gas transfer receipt", err)
	}
	if rc.Status != types.ReceiptStatusSuccessful {
		return nil, fmt.Errorf("evm: %s: the gas transfer %s to %s reverted", c.cfg.Chain, r.TxHash, src.Hex())
	}
	if !funded {
		if payer.Key.IsRelayer() {
			c.relayerPaid(rc, new(big.Int).Sub(fee, native))
		}
		return price, nil
	}
	// Funded by an earlier attempt (at its price): use what is there.
	bal, err := c.eth.BalanceAt(ctx, src, nil)
	if err != nil {
		return nil, c.Unavailable("balance", err)
	}
	p := new(big.Int).Div(bal, new(big.Int).SetUint64(gas))
	if p.Sign() == 0 {
		return nil, fmt.Errorf("%w: %s holds %s wei, not enough gas for the withdrawal", chains.ErrInsufficientFunds, src.Hex(), bal)
	}
	return p, nil
}

func callMsg(from, to common.Address, value *big.Int, data []byte) ethereum.CallMsg {
	return ethereum.CallMsg{From: from, To: &to, Value: value, Data: data}
}

// nativeSpend is the spend of amount (wei) of the native asset under key,
// by agent, to recipient.
func (c *Connector) nativeSpend(key, agentID string, amount *big.Int, recipient string) *chains.Spend {
	return spendOf(c.NativeAsset().Spend(key, agentID, chains.NewAmount(amount, NativeDecimals), recipient))
}

func spendOf(s chains.Spend) *chains.Spend { return &s }
