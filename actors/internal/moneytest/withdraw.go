package moneytest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	"github.com/veilhq/veil/chains"
)

// The fake chain's withdrawals: the gas a one-time address needs first,
// the relayer's fee, the native rest, and the withdrawal itself, which is
// made once per idempotency key like the real connectors' (a retry under
// the key answers the first transaction).

// Withdrawal is one withdrawal the fake chain made.
type Withdrawal struct {
	Key, From, To, Asset, Amount string
	All                          bool
	TxHash                       string
}

// Withdrawals lists the withdrawals made on chain, in order: one per
// idempotency key, whatever was retried.
func (c *Chain) Withdrawals() []Withdrawal {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Withdrawal(nil), c.withdrawOrder...)
}

// WithdrawOutcomeUnknown makes the next new withdrawals answer
// chains.ErrOutcomeUnknown with no hash at all (signed, the node's answer
// lost before a hash was known); the withdrawal is made.
func (c *Chain) WithdrawOutcomeUnknown(on bool) {
	c.mu.Lock()
	c.withdrawUnknown = on
	c.mu.Unlock()
}

// AuthorizeWith makes every new withdrawal ask auth about its spend before
// it is made, as the enclave asks the owner's policy before it signs
// (enclave.WithPolicy with agent/policy's Gate): an error refuses it and
// nothing is withdrawn. nil asks nobody.
func (c *Chain) AuthorizeWith(auth func(context.Context, chains.Spend) error) {
	c.mu.Lock()
	c.authorize = auth
	c.mu.Unlock()
}

// withdrawOnce makes the withdrawal req of from's agent, once per key: a
// key already withdrawn answers its transaction, "0xw".
func (c *Chain) withdrawOnce(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest) (chains.TxResult, error) {
	c.mu.Lock()
	w, done := c.withdrawn[req.IdempotencyKey]
	auth, unknown := c.authorize, c.withdrawUnknown
	c.mu.Unlock()
	if done {
		return chains.TxResult{TxHash: w.TxHash}, nil
	}
	asset := req.Asset.Symbol
	if asset == "" {
		asset = c.ID.NativeAsset()
	}
	if auth != nil {
		if err := auth(ctx, chains.Spend{Key: req.IdempotencyKey, AgentID: from.AgentID, Chain: c.ID, Asset: asset, Amount: req.Amount,
			All: req.All, Recipient: req.To}); err != nil {
			return chains.TxResult{}, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, done := c.withdrawn[req.IdempotencyKey]; done {
		return chains.TxResult{TxHash: w.TxHash}, nil
	}
	w = Withdrawal{Key: req.IdempotencyKey, From: req.From, To: req.To, Asset: asset, Amount: req.Amount.String(), All: req.All, TxHash: "0xw"}
	if c.withdrawn == nil {
		c.withdrawn = map[string]Withdrawal{}
	}
	c.withdrawn[w.Key] = w
	c.withdrawOrder = append(c.withdrawOrder, w)
	if unknown {
		return chains.TxResult{}, fmt.Errorf("withdrawal %s: %w", w.Key, chains.ErrOutcomeUnknown)
	}
	return chains.TxResult{TxHash: w.TxHash}, nil
}

// Relayer is the address the fake relayer's fees go to (RelayerFee).
const Relayer = "0x00000000000000000000000000000000000000fe"

// RelayerFee makes every withdrawal pay amount (in the withdrawal's asset,
// 18 decimals) to Relayer under the key "relayfee/<key>" through
// chains.RecordSide, as the connectors with a relayer do: in a
// transaction of its own before the withdrawal (EVM), or in the
// withdrawal's own (sameTx: Stellar, Solana); "" pays none.
func (c *Chain) RelayerFee(amount string, sameTx bool) {
	c.mu.Lock()
	c.relayFee, c.relayFeeSameTx = amount, sameTx
	c.mu.Unlock()
}

// FeeOutcomeUnknown makes the next relayer fee transfers of their own (a
// RelayerFee not in the withdrawal's transaction) answer
// chains.ErrOutcomeUnknown with their hash (signed, the node's answer
// lost): the withdrawal is not sent. A retry of the withdrawal's key finds
// the fee sent and withdraws, as the EVM connector's intent ledger does.
func (c *Chain) FeeOutcomeUnknown(on bool) {
	c.mu.Lock()
	c.feeUnknown = on
	c.mu.Unlock()
}

// Remainder makes every withdrawal send amount of the native asset after
// it to its destination, under the key "rest/<key>" through
// chains.RecordSide (the native rest of an everything-withdrawal of a
// token, chains/evm); "" sends none.
func (c *Chain) Remainder(amount string) {
	c.mu.Lock()
	c.rest = amount
	c.mu.Unlock()
}

// sideHash is the fake transaction hash of what is sent under key.
func sideHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return "0x" + hex.EncodeToString(h[:])
}

// GasOutcomeUnknown makes the next gas transfers answer
// chains.ErrOutcomeUnknown with their hash (signed and recorded, the
// node's answer lost): the withdrawal is not sent. A retry of the
// withdrawal's key finds the gas sent and withdraws.
func (c *Chain) GasOutcomeUnknown(on bool) {
	c.mu.Lock()
	c.gasUnknown = on
	c.mu.Unlock()
}

// NeedGas makes every withdrawal need amount of ETH sent to its one-time
// address first, from the payer (WithdrawWithGas, as the EVM connector
// does for a token withdrawal), through the payer's Record when it has
// one; "" needs none. A retry of a withdrawal's key sends no gas again.
func (c *Chain) NeedGas(amount string) {
	c.mu.Lock()
	c.gas = amount
	c.mu.Unlock()
}

// GasSent lists the gas transfers made (key → transaction hash).
func (c *Chain) GasSent() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.gasSent)
}

// WithdrawWithGas implements chains.GasFunder: the gas of NeedGas first,
// under the key "gas/<key>", then Withdraw.
func (c *Chain) WithdrawWithGas(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest, payer chains.GasPayer) (chains.TxResult, error) {
	key := chains.GasKey(req.IdempotencyKey)
	c.mu.Lock()
	need, sent := c.gas, c.gasSent[key] != ""
	c.mu.Unlock()
	if need != "" && !sent {
		amt, err := chains.ParseAmountOf(need, 18)
		if err != nil {
			return chains.TxResult{}, err
		}
		send := func(context.Context) (chains.TxResult, error) {
			h := sha256.Sum256([]byte(key))
			r := chains.TxResult{TxHash: "0x" + hex.EncodeToString(h[:])}
			c.mu.Lock()
			if c.gasSent == nil {
				c.gasSent = map[string]string{}
			}
			c.gasSent[key] = r.TxHash
			unknown := c.gasUnknown
			c.mu.Unlock()
			if unknown {
				return r, fmt.Errorf("gas for %s: %w", req.IdempotencyKey, chains.ErrOutcomeUnknown)
			}
			return r, nil
		}
		if payer.Record != nil {
			_, err = payer.Record(ctx, chains.GasFunding{Chain: c.ID, IdempotencyKey: key, For: req.IdempotencyKey, To: req.From, Asset: c.ID.NativeAsset(), Amount: amt}, send)
		} else {
			_, err = send(ctx)
		}
		if err != nil {
			return chains.TxResult{}, err
		}
	}
	return c.Withdraw(ctx, from, req)
}

// Withdraw answers the hash "0xw" (withdrawOnce), with the relayer's fee
// of RelayerFee and the rest of Remainder, each through chains.RecordSide.
func (c *Chain) Withdraw(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest) (chains.TxResult, error) {
	c.mu.Lock()
	fee, sameTx, rest := c.relayFee, c.relayFeeSameTx, c.rest
	prior, done := c.withdrawn[req.IdempotencyKey]
	c.mu.Unlock()
	if done {
		// A retry: the key's transaction is answered as recorded, nothing
		// is built or signed again (its fee and rest neither).
		return chains.TxResult{TxHash: prior.TxHash}, nil
	}
	key := req.IdempotencyKey
	withdraw := func(ctx context.Context) (chains.TxResult, error) { return c.withdrawOnce(ctx, from, req) }
	if fee != "" {
		amt, err := chains.ParseAmountOf(fee, 18)
		if err != nil {
			return chains.TxResult{}, err
		}
		asset := req.Asset.Symbol
		if asset == "" {
			asset = c.ID.NativeAsset()
		}
		sp := &chains.Spend{Key: chains.RelayerFeeKey(key), Chain: c.ID, Asset: asset, Amount: amt, Recipient: Relayer}
		if sameTx {
			inner := withdraw
			withdraw = func(ctx context.Context) (chains.TxResult, error) {
				return chains.RecordSide(ctx, req.Sides, chains.SideOf(chains.SideRelayerFee, sp, key, true), inner)
			}
		} else {
			c.mu.Lock()
			sent := c.feeSent[sp.Key] != ""
			c.mu.Unlock()
			if !sent {
				if _, err := chains.RecordSide(ctx, req.Sides, chains.SideOf(chains.SideRelayerFee, sp, key, false), func(context.Context) (chains.TxResult, error) {
					r := chains.TxResult{TxHash: sideHash(sp.Key)}
					c.mu.Lock()
					if c.feeSent == nil {
						c.feeSent = map[string]string{}
					}
					c.feeSent[sp.Key] = r.TxHash
					unknown := c.feeUnknown
					c.mu.Unlock()
					if unknown {
						return r, fmt.Errorf("relayer fee for %s: %w", key, chains.ErrOutcomeUnknown)
					}
					return r, nil
				}); err != nil {
					return chains.TxResult{}, err
				}
			}
		}
	}
	res, err := withdraw(ctx)
	if err != nil || rest == "" {
		return res, err
	}
	amt, err := chains.ParseAmountOf(rest, 18)
	if err != nil {
		return res, err
	}
	sp := &chains.Spend{Key: "rest/" + key, Chain: c.ID, Asset: c.ID.NativeAsset(), Amount: amt, Recipient: req.To}
	_, _ = chains.RecordSide(ctx, req.Sides, chains.SideOf(chains.SideRemainder, sp, key, false), func(context.Context) (chains.TxResult, error) {
		return chains.TxResult{TxHash: sideHash(sp.Key)}, nil
	})
	return res, nil
}
