package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/persistence"
)

// TableAuthorizations: "<chain>/<idempotency key>" → signedAuth (JSON):
// every EIP-3009 authorization SignAuthorization handed out whose fate is
// not known yet. The payee holds it and may submit it until its
// validBefore; once that has passed, maintenance reports what became of
// it (settleAuthorizations) and removes the row in the same commit.
const TableAuthorizations = "evm_authorizations"

// authorizationUsedTopic is EIP-3009's AuthorizationUsed(authorizer, nonce).
var authorizationUsedTopic = crypto.Keccak256Hash([]byte("AuthorizationUsed(address,bytes32)"))

// signedAuth is what maintenance needs to learn an authorization's fate.
type signedAuth struct {
	AgentID     string `json:"agentId"`
	Contract    string `json:"contract"`
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	Nonce       string `json:"nonce"`       // 0x, 32 bytes
	ValidBefore int64  `json:"validBefore"` // unix seconds
	// Block is the head when it was signed: its use is logged after it.
	Block uint64 `json:"block"`
}

// trackAuthorization records auth, signed for agentID under key, before
// its signature leaves SignAuthorization: an authorization whose fate
// could not be followed is not handed out.
func (c *Connector) trackAuthorization(ctx context.Context, agentID, key string, auth chains.TransferAuthorization) error {
	head, err := c.eth.BlockNumber(ctx)
	if err != nil {
		return c.Unavailable("head", err)
	}
	if auth.ValidBefore == nil || !auth.ValidBefore.IsInt64() {
		return c.refused("validBefore %v is out of range", auth.ValidBefore)
	}
	val, err := json.Marshal(signedAuth{AgentID: agentID, Contract: common.HexToAddress(auth.Contract).Hex(), From: common.HexToAddress(auth.From).Hex(),
		To: common.HexToAddress(auth.To).Hex(), Value: auth.Value.String(), Nonce: hexutil.Encode(auth.Nonce[:]),
		ValidBefore: auth.ValidBefore.Int64(), Block: head})
	if err != nil {
		return err
	}
	_, err = c.opts.Store.Apply(ctx, persistence.Put(TableAuthorizations, c.intentKey(key), val, persistence.Any()))
	return err
}

// settleAuthorizations reports the fate of each tracked authorization
// whose validBefore has passed by the connector's clock (Options.Now), as
// a settlement under its key (the agent's x402 payment record), and
// forgets it in the same commit:
//   - its nonce used: confirmed, with the transaction that used it (its
//     AuthorizationUsed log), which the payee's own answer may not have
//     told the payer;
//   - its nonce unused at a block whose timestamp is not before
//     validBefore: failed. EIP-3009 accepts it only in a block stamped
//     before validBefore, and every later block is stamped no earlier, so
//     it can provably never be settled: nothing was transferred.
//
// A chain whose head is still stamped before validBefore (its clock
// behind ours) is asked again on the next pass.
func (c *Connector) settleAuthorizations(ctx context.Context, rep *MaintainReport) error {
	recs, err := c.opts.Store.List(ctx, TableAuthorizations, persistence.Query{Prefix: string(c.cfg.Chain) + "/"})
	if err != nil || len(recs) == 0 {
		return err
	}
	now := c.opts.Now().Unix()
	type due struct {
		rec persistence.Record
		a   signedAuth
	}
	var dues []due
	for _, r := range recs {
		var a signedAuth
		if err := json.Unmarshal(r.Value, &a); err != nil {
			return fmt.Errorf("evm: decode authorization %s: %w", r.Key, err)
		}
		if now >= a.ValidBefore {
			dues = append(dues, due{r, a})
		}
	}
	if len(dues) == 0 {
		return nil
	}
	// The head first; every state is read at that block, so "unused at a
	// block stamped at or after validBefore" is what one answer says.
	head, err := c.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		return c.Unavailable("head", err)
	}
	at := hexutil.EncodeBig(head.Number)
	used := make([]hexutil.Bytes, len(dues))
	batch := make([]rpc.BatchElem, len(dues))
	for i, d := range dues {
		token := common.HexToAddress(d.a.Contract)
		var nonce [32]byte
		copy(nonce[:], common.FromHex(d.a.Nonce))
		batch[i] = rpc.BatchElem{Method: "eth_call", Args: []any{map[string]any{"to": token, "data": hexutil.Bytes(c.token.PackAuthorizationState(common.HexToAddress(d.a.From), nonce))}, at},
			Result: &used[i]}
	}
	if err := c.rpc.BatchCallContext(ctx, batch); err != nil {
		return c.Unavailable("authorization states", err)
	}
	var errs []error
	for i, d := range dues {
		if batch[i].Error != nil {
			errs = append(errs, c.callError("authorizationState", batch[i].Error))
			continue
		}
		isUsed, err := c.token.UnpackAuthorizationState(used[i])
		if err != nil {
			errs = append(errs, fmt.Errorf("evm: %s: authorizationState of %s: %w", c.cfg.Chain, d.rec.Key, err))
			continue
		}
		var s chains.Settlement
		switch {
		case isUsed:
			tx, err := c.authorizationTx(ctx, d.a, head.Number)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if tx == "" {
				// Used, but not by a transfer this node logs (canceled, or
				// its log out of reach): say nothing rather than guess.
				c.opts.Log.Warn("authorization used but no AuthorizationUsed log found", "key", d.rec.Key, "from", d.a.From, "nonce", d.a.Nonce)
				continue
			}
			s = c.opts.NewSettlement(c.cfg.Chain, c.callerKey(d.rec.Key), d.a.AgentID, "authorization", tx, chains.SettlementConfirmed, 1, "")
		case int64(head.Time) >= d.a.ValidBefore:
			s = c.opts.NewSettlement(c.cfg.Chain, c.callerKey(d.rec.Key), d.a.AgentID, "authorization", "", chains.SettlementFailed, 0,
				fmt.Sprintf("the payment authorization expired at %s without being settled: it can never be, nothing was transferred",
					time.Unix(d.a.ValidBefore, 0).UTC().Format(time.RFC3339)))
		default:
			continue // the chain's clock is behind: ask again
		}
		ops := append([]persistence.Op{persistence.Delete(TableAuthorizations, d.rec.Key, persistence.AtVersion(d.rec.Version))}, c.opts.SettleOps(s)...)
		if _, err := c.opts.Store.Apply(ctx, ops...); err != nil {
			if !errors.Is(err, persistence.ErrConflict) { // another pass reported it
				errs = append(errs, err)
			}
			continue
		}
		rep.Authorizations++
		c.opts.Deliver(ctx, s)
	}
	return errors.Join(errs...)
}

// authorizationTx is the transaction that logged a's AuthorizationUsed,
// searched from the block it was signed at to upTo; "" when none.
func (c *Connector) authorizationTx(ctx context.Context, a signedAuth, upTo *big.Int) (string, error) {
	logs, err := c.eth.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(a.Block), ToBlock: upTo,
		Addresses: []common.Address{common.HexToAddress(a.Contract)},
		Topics:    [][]common.Hash{{authorizationUsedTopic}, {common.BytesToHash(common.HexToAddress(a.From).Bytes())}, {common.HexToHash(a.Nonce)}}})
	if err != nil {
		return "", c.Unavailable("authorization logs", err)
	}
	for _, l := range logs {
		if !l.Removed {
			return l.TxHash.Hex(), nil
		}
	}
	return "", nil
}
