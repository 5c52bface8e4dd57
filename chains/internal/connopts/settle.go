package connopts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// TableSettlements holds the settlements not yet delivered to
// Options.OnSettled: "<chain>/<idempotency key>/<tx hash>" → the
// chains.Settlement (JSON). Every connector writes it (the outbox of
// chains.SettlementFunc's contract).
const TableSettlements = "chain_settlements"

func settlementKey(s chains.Settlement) string {
	return string(s.Chain) + "/" + s.IdempotencyKey + "/" + s.TxHash
}

// NewSettlement is the settlement of the transaction txHash recorded under
// key by agent for op, seen now.
func (o *Options) NewSettlement(chain chains.ID, key, agentID, op, txHash string, status chains.SettlementStatus, confirmations uint64, reason string) chains.Settlement {
	return chains.Settlement{Chain: chain, IdempotencyKey: key, AgentID: agentID, Op: op, TxHash: txHash,
		Status: status, Confirmations: confirmations, Reason: reason, At: o.Now().UTC()}
}

// SettleOps are the store writes that keep s for delivery, to be applied
// in the commit that makes its outcome final; none without a receiver.
func (o *Options) SettleOps(s chains.Settlement) []persistence.Op {
	if o.OnSettled == nil {
		return nil
	}
	val, err := json.Marshal(s)
	if err != nil {
		// A Settlement always encodes; nothing to keep otherwise.
		o.Log.Error("encode settlement", "key", s.IdempotencyKey, "err", err)
		return nil
	}
	return []persistence.Op{persistence.Put(TableSettlements, settlementKey(s), val, persistence.Any())}
}

// Deliver hands s, committed with SettleOps, to the receiver and removes it
// once the receiver took it; otherwise it stays for Redeliver.
func (o *Options) Deliver(ctx context.Context, s chains.Settlement) {
	if o.OnSettled == nil {
		return
	}
	if err := o.OnSettled(ctx, s); err != nil {
		lvl := o.Log.Warn
		if errors.Is(err, chains.ErrNoSettlementReceiver) {
			lvl = o.Log.Debug
		}
		lvl("settlement kept for the next pass", "key", s.IdempotencyKey, "tx", s.TxHash, "status", string(s.Status), "err", err)
		return
	}
	ctx = persistence.WithoutFence(context.WithoutCancel(ctx))
	if _, err := o.Store.Apply(ctx, persistence.Delete(TableSettlements, settlementKey(s), persistence.Any())); err != nil {
		o.Log.Warn("remove a delivered settlement (it will be delivered again)", "key", s.IdempotencyKey, "err", err)
	}
}

// Redeliver delivers every settlement of chain still in TableSettlements
// (a receiver that refused one, a crash before its removal). The
// connectors call it on every maintenance pass.
func (o *Options) Redeliver(ctx context.Context, chain chains.ID) error {
	if o.OnSettled == nil {
		return nil
	}
	recs, err := o.Store.List(ctx, TableSettlements, persistence.Query{Prefix: string(chain) + "/"})
	if err != nil {
		return err
	}
	for _, r := range recs {
		var s chains.Settlement
		if err := json.Unmarshal(r.Value, &s); err != nil || !strings.HasPrefix(r.Key, string(s.Chain)+"/") {
			return fmt.Errorf("%s: settlement %s: undecodable (%v)", chain, r.Key, err)
		}
		o.Deliver(ctx, s)
	}
	return nil
}
