package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/internal/intents"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
	"github.com/veilhq/veil/persistence"
)

// ERC-5564 metadata markers (bytes 1-4 and 5-24 of an announcement's metadata).
var (
	nativeMarker     = [4]byte{0xee, 0xee, 0xee, 0xee}
	transferSelector = [4]byte{0xa9, 0x05, 0x9c, 0xbb}
	nativeToken      = common.HexToAddress("0xEeeeeEeeeEeEeeEeEeEeeEEEeeeeEeeeeeeeEEeE")
	maxUint256       = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
)

func (c *Connector) needSender() error {
	if c.cfg.Sender == (common.Address{}) {
		return fmt.Errorf("%w: %s: no StealthSender contract configured (VEIL_EVM_%s_SENDER)", chains.ErrUnavailable, c.cfg.Chain, strings.ToUpper(string(c.cfg.Chain)))
	}
	return nil
}

func (c *Connector) needNames() error {
	if c.cfg.Names == (common.Address{}) {
		return fmt.Errorf("%w: %s: no name registry configured (VEIL_EVM_%s_NAMES)", chains.ErrUnavailable, c.cfg.Chain, strings.ToUpper(string(c.cfg.Chain)))
	}
	return nil
}

// SendStealth pays req.To (a meta-address) req.Amount of req.Asset from fromAddress (signed with
// from): it derives a one-time stealth address and calls the StealthSender,
// which transfers and announces in one transaction. A token payment first
// approves the StealthSender once per token (its own transaction, awaited)
// and carries TokenGasStipend gas worth of the native asset to the stealth
// address so that the tokens can be withdrawn from it. The call returns
// once the node accepted the transaction (Maintain confirms it).
func (c *Connector) SendStealth(ctx context.Context, from chains.KeyRef, fromAddress string, req chains.SendRequest) (chains.TxResult, error) {
	if err := c.needSender(); err != nil {
		return chains.TxResult{}, err
	}
	r, err := c.reqs.Send(fromAddress, req)
	if err != nil {
		return chains.TxResult{}, err
	}
	src, meta, a, amt := r.From, r.To, r.Asset, r.Units
	key := intents.KeyOr(req.IdempotencyKey, c.opts.Rand)
	fp := intents.Fingerprint("send", src.Hex(), meta.String(), a.Symbol, amt.String())
	if r, ok, err := c.lookup(ctx, key, fp); ok || err != nil {
		return r, err
	}
	ann, err := secp256k1.Generate(meta, c.opts.Rand)
	if err != nil {
		return chains.TxResult{}, fmt.Errorf("evm: derive stealth address: %w", err)
	}
	// Value goes to the StealthSender (and pulls from the token): refuse
	// before signing if either is not a contract.
	if err := c.requireCode(ctx, c.cfg.Sender, "SENDER"); err != nil {
		return chains.TxResult{}, err
	}
	if err := c.requireToken(ctx, a); err != nil {
		return chains.TxResult{}, err
	}
	stealthAddr := common.Address(ann.StealthAddress)
	sp := a.Spend(key, from.AgentID, chains.NewAmount(amt, a.Decimals), meta.String())
	spend := &sp
	spec := txSpec{
		op: "send", fingerprint: fp, from: src, ref: from, to: c.cfg.Sender, spend: spend,
		extra: map[string]string{
			"stealthAddress": stealthAddr.Hex(), "ephemeralPubKey": hexutil.Encode(ann.EphemeralPub[:]),
			"asset": a.Symbol, "amount": chains.FormatAmount(amt, a.Decimals), "recipient": meta.String(),
		},
	}
	if a.Native() {
		spec.value = amt
		spec.data = c.sender.PackSendNative(stealthAddr, ann.EphemeralPub[:], [1]byte{ann.ViewTag})
	} else {
		bal, err := c.balanceOf(ctx, a, src)
		if err != nil {
			return chains.TxResult{}, c.callError("balance", err)
		}
		if bal.Cmp(amt) < 0 {
			return chains.TxResult{}, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, src.Hex(), chains.FormatAmount(bal, a.Decimals), a.Symbol)
		}
		if err := c.ensureAllowance(ctx, from, src, a, amt, spend); err != nil {
			return chains.TxResult{}, err
		}
		_, feeCap, err := c.feeCaps(ctx)
		if err != nil {
			return chains.TxResult{}, err
		}
		spec.value = new(big.Int).Mul(new(big.Int).SetUint64(c.cfg.TokenGasStipend), feeCap)
		spec.data = c.sender.PackSendToken(a.token, amt, stealthAddr, ann.EphemeralPub[:], [1]byte{ann.ViewTag})
	}
	if spec.gas, err = c.estimateGas(ctx, src, spec.to, spec.value, spec.data); err != nil {
		return chains.TxResult{}, err
	}
	return c.submit(ctx, key, spec)
}

// ensureAllowance approves the StealthSender for an unlimited amount of
// token when its allowance is below amt, and waits for the approval. The
// approval is signed under the payment's spend (same key: counted once).
func (c *Connector) ensureAllowance(ctx context.Context, ref chains.KeyRef, owner common.Address, a asset, amt *big.Int, spend *chains.Spend) error {
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &a.token, Data: c.token.PackAllowance(owner, c.cfg.Sender)}, nil)
	if err != nil {
		return c.callError("allowance", err)
	}
	allowance, err := c.token.UnpackAllowance(out)
	if err != nil {
		return fmt.Errorf("evm: %s: allowance of %s: %w", c.cfg.Chain, a.Symbol, err)
	}
	if allowance.Cmp(amt) >= 0 {
		return nil
	}
	data := c.token.PackApprove(c.cfg.Sender, maxUint256)
	gas, err := c.estimateGas(ctx, owner, a.token, nil, data)
	if err != nil {
		return err
	}
	// Keyed by the allowance it replaces: concurrent payments share one
	// approval; a later exhausted allowance gets a new one.
	key := fmt.Sprintf("approve/%s/%s/%s", strings.ToLower(owner.Hex()), strings.ToLower(a.token.Hex()), allowance)
	fp := intents.Fingerprint("approve", owner.Hex(), a.token.Hex(), allowance.String())
	r, err := c.submit(ctx, key, txSpec{op: "approve", fingerprint: fp, from: owner, ref: ref, to: a.token, data: data, gas: gas, spend: spend})
	if errors.Is(err, chains.ErrOutcomeUnknown) {
		// The approval moves nothing, and the payment is not signed yet:
		// nothing was paid, and a retry with the same key waits for this
		// approval instead of signing another.
		return fmt.Errorf("%w: %s: the approval of %s for the stealth sender is pending (%v); nothing was paid: retry with the same idempotency key", chains.ErrUnavailable, c.cfg.Chain, a.Symbol, err)
	}
	if err != nil {
		return fmt.Errorf("evm: %s: approve %s for the stealth sender: %w", c.cfg.Chain, a.Symbol, err)
	}
	rc, err := c.WaitMined(ctx, r.TxHash)
	if err != nil {
		return err
	}
	if rc.Status != types.ReceiptStatusSuccessful {
		return fmt.Errorf("evm: %s: approval %s reverted", c.cfg.Chain, r.TxHash)
	}
	return nil
}

// Withdraw moves req.Amount of req.Asset from req.From (signed with from,
// whose EphemeralPub selects the one-time key) to req.To; gas is paid by the
// stealth address itself (WithdrawWithGas has the agent's account pay what
// it lacks). req.All withdraws everything: for the native asset
// the transaction's fee is exactly gas × price (tip = fee cap) and the
// value is the balance less that fee, so nothing is left; for a token the
// whole token balance moves, and the native asset the address holds beyond
// the transfer's gas (a payment's gas stipend) follows it to req.To in a
// second transaction (key "rest/<key>"). A token transfer is priced with
// tip = fee cap and a gas margin of at most dustGas, so what stays behind
// costs more to move than it is worth.
func (c *Connector) Withdraw(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest) (chains.TxResult, error) {
	return c.withdraw(ctx, from, req, nil)
}

func (c *Connector) withdraw(ctx context.Context, from chains.KeyRef, req chains.WithdrawRequest, payer *chains.GasPayer) (chains.TxResult, error) {
	w, err := c.reqs.Withdraw(req)
	if err != nil {
		return chains.TxResult{}, err
	}
	src, dst, a, amt, all := w.From, w.To, w.Asset, w.Units, w.All
	key := intents.KeyOr(req.IdempotencyKey, c.opts.Rand)
	amtStr, amount := "all", "" // base units for the fingerprint, whole units for the record
	if !all {
		amtStr, amount = amt.String(), chains.FormatAmount(amt, a.Decimals)
	}
	fp := intents.Fingerprint("withdraw", src.Hex(), dst.Hex(), a.Symbol, amtStr)
	if r, ok, err := c.lookup(ctx, key, fp); ok || err != nil {
		return r, err
	}
	spec := txSpec{op: "withdraw", fingerprint: fp, from: src, ref: from,
		extra: map[string]string{"to": dst.Hex(), "asset": a.Symbol, "amount": amount}}
	var rest *txSpec // the native rest of an "all" token withdrawal
	// The spend names the amount that moves: the given one, or for "all"
	// the balance (an upper bound: a native sweep moves it less the fee).
	spend := a.Spend(key, from.AgentID, chains.Amount{}, dst.Hex())
	native, err := c.eth.BalanceAt(ctx, src, nil)
	if err != nil {
		return chains.TxResult{}, c.Unavailable("balance", err)
	}
	_, feeCap, err := c.feeCaps(ctx)
	if err != nil {
		return chains.TxResult{}, err
	}
	if a.Native() {
		spec.to = dst
		code, err := c.eth.CodeAt(ctx, dst, nil)
		if err != nil {
			return chains.TxResult{}, c.Unavailable("code", err)
		}
		spec.gas = 21000
		if len(code) > 0 {
			probe := new(big.Int).Set(native)
			if !all {
				probe = amt
			}
			if spec.gas, err = c.estimateGas(ctx, src, dst, probe, nil); err != nil {
				return chains.TxResult{}, err
			}
		}
		if all {
			// A sweep must see the final balance: wait for the address's
			// earlier transactions (a token withdrawal spending gas) first.
			if native, err = c.settledBalance(ctx, src); err != nil {
				return chains.TxResult{}, err
			}
			spec.sweep, spec.sweepBalance = true, native
			if _, err := sweepValue(native, spec.gas, feeCap); err != nil {
				return chains.TxResult{}, err
			}
		} else {
			need := new(big.Int).Add(amt, new(big.Int).Mul(new(big.Int).SetUint64(spec.gas), feeCap))
			if native.Cmp(need) < 0 {
				return chains.TxResult{}, fmt.Errorf("%w: %s holds %s %s, needs %s with the fee", chains.ErrInsufficientFunds, src.Hex(),
					chains.FormatAmount(native, NativeDecimals), a.Symbol, chains.FormatAmount(need, NativeDecimals))
			}
			spec.value = amt
		}
	} else {
		if err := c.requireToken(ctx, a); err != nil {
			return chains.TxResult{}, err
		}
		bal, err := c.balanceOf(ctx, a, src)
		if err != nil {
			return chains.TxResult{}, c.callError("balance", err)
		}
		if all {
			amt = bal
		}
		if amt.Sign() == 0 || bal.Cmp(amt) < 0 {
			return chains.TxResult{}, fmt.Errorf("%w: %s holds %s %s", chains.ErrInsufficientFunds, src.Hex(), chains.FormatAmount(bal, a.Decimals), a.Symbol)
		}
		// With a relayer, it pays the gas and takes its fee out of the
		// amount moved, in a transfer of its own before the withdrawal
		// (an account cannot make two transfers in one transaction).
		var feeSpec *txSpec
		var relayed bool
		if payer, relayed = c.relayerPayer(from, payer); relayed {
			if feeSpec, amt, err = c.withdrawFee(ctx, from, src, a, amt, all, key); err != nil {
				return chains.TxResult{}, err
			}
		}
		spec.to = a.token
		spec.data = c.token.PackTransfer(dst, amt)
		gas, price, err := c.tokenGas(ctx, src, a.token, spec.data)
		if err != nil {
			return chains.TxResult{}, err
		}
		spec.gas = gas
		need := gas
		if feeSpec != nil {
			if feeSpec.gas, _, err = c.tokenGas(ctx, src, a.token, feeSpec.data); err != nil {
				return chains.TxResult{}, err
			}
			need += feeSpec.gas
		}
		if spec.price, err = c.fundGas(ctx, payer, src, need, price, native, key); err != nil {
			return chains.TxResult{}, err
		}
		if feeSpec != nil {
			feeSpec.price = spec.price
			fs := *feeSpec
			send := func(ctx context.Context) (chains.TxResult, error) { return c.submit(ctx, fs.spend.Key, fs) }
			if _, err := chains.RecordSide(ctx, req.Sides, chains.SideOf(chains.SideRelayerFee, fs.spend, key, false), send); err != nil {
				return chains.TxResult{}, fmt.Errorf("evm: %s: the relayer's fee for the withdrawal from %s: %w", c.cfg.Chain, src.Hex(), err)
			}
		}
		// What the address holds beyond this transfer's gas (a payment's
		// stipend) follows the tokens when everything is withdrawn.
		if all {
			left := new(big.Int).Sub(native, new(big.Int).Mul(new(big.Int).SetUint64(need+21000), spec.price))
			if left.Sign() > 0 {
				rest = &txSpec{op: "withdraw", fingerprint: intents.Fingerprint("rest", src.Hex(), dst.Hex()), from: src, ref: from, to: dst,
					value: left, gas: 21000, price: spec.price,
					extra: map[string]string{"to": dst.Hex(), "asset": c.cfg.Chain.NativeAsset(), "amount": chains.FormatAmount(left, NativeDecimals), "rest": key},
					spend: c.nativeSpend("rest/"+key, from.AgentID, left, dst.Hex())}
			}
		}
	}
	if all && a.Native() {
		spend.Amount = chains.NewAmount(spec.sweepBalance, a.Decimals)
	} else {
		spend.Amount = chains.NewAmount(amt, a.Decimals)
	}
	spec.spend = &spend
	res, err := c.submit(ctx, key, spec)
	if err != nil || rest == nil {
		return res, err
	}
	// The stipend's rest, at the next nonce: best effort (the tokens have
	// moved; a failure leaves the rest for a native withdrawal).
	sendRest := func(ctx context.Context) (chains.TxResult, error) { return c.submit(ctx, "rest/"+key, *rest) }
	if r, err := chains.RecordSide(ctx, req.Sides, chains.SideOf(chains.SideRemainder, rest.spend, key, false), sendRest); err != nil {
		c.opts.Log.Warn("withdrawal: the native rest stays on the one-time address", "address", src.Hex(), "key", key, "err", err)
	} else {
		c.opts.Log.Info("withdrawal: native rest moved with the tokens", "address", src.Hex(), "tx", r.TxHash, "key", key)
	}
	return res, nil
}

// settledBalance waits until every transaction the ledger sent from a is
// in a block, then returns a's balance. (The node's pending nonce is no
// guide: a pool promotes new transactions asynchronously.)
func (c *Connector) settledBalance(ctx context.Context, a common.Address) (*big.Int, error) {
	recs, err := c.opts.Store.List(ctx, TablePending, persistence.Query{Prefix: c.addrKey(a) + "/"})
	if err != nil {
		return nil, err
	}
	for _, p := range recs {
		rec, err := c.opts.Store.Get(ctx, TableIntents, string(p.Value))
		if errors.Is(err, persistence.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var it intent
		if err := json.Unmarshal(rec.Value, &it); err != nil {
			return nil, err
		}
		if err := c.waitAnyMined(ctx, it.Attempts); err != nil {
			return nil, fmt.Errorf("%w: %s has unconfirmed transactions; withdraw everything once they are mined (%v)", chains.ErrUnavailable, a.Hex(), err)
		}
	}
	bal, err := c.eth.BalanceAt(ctx, a, nil)
	if err != nil {
		return nil, c.Unavailable("balance", err)
	}
	return bal, nil
}

// waitAnyMined polls until one of the attempts has a receipt.
func (c *Connector) waitAnyMined(ctx context.Context, attempts []attempt) error {
	t := time.NewTicker(c.cfg.PollInterval)
	defer t.Stop()
	for {
		for _, at := range attempts {
			if _, err := c.eth.TransactionReceipt(ctx, at.Hash); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Fund asks the devnet faucet for the native asset and every test token
// (one transaction, awaited). Elsewhere there is no faucet Veil can call:
// it reports chains.ErrNoFaucet, saying which address to fund.
func (c *Connector) Fund(ctx context.Context, address string) (chains.TxResult, error) {
	a, err := parseAddress(address)
	if err != nil {
		return chains.TxResult{}, err
	}
	if !c.cfg.DevnetFaucet {
		return chains.TxResult{}, fmt.Errorf("%w (%s, chain id %d): fund %s yourself: send it %s for gas (and any tokens) from a funded wallet or the network's public faucet",
			chains.ErrNoFaucet, c.cfg.Chain, c.cfg.ChainID, a.Hex(), c.cfg.Chain.NativeAsset())
	}
	var h common.Hash
	if err := c.rpc.CallContext(ctx, &h, "veil_fund", a); err != nil {
		return chains.TxResult{}, c.Unavailable("faucet", err)
	}
	r, err := c.WaitMined(ctx, h.Hex())
	if err != nil {
		return chains.TxResult{}, err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return chains.TxResult{}, fmt.Errorf("evm: %s: faucet transaction %s reverted", c.cfg.Chain, h.Hex())
	}
	return c.Result(h.Hex()), nil
}
