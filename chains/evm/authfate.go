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

// EIP-3009's events: AuthorizationUsed(authorizer, nonce) when a transfer
// uses the nonce, AuthorizationCanceled(authorizer, nonce) when
// cancelAuthorization burns it. Either sets authorizationState.
var (
	authorizationUsedTopic     = crypto.Keccak256Hash([]byte("AuthorizationUsed(address,bytes32)"))
	authorizationCanceledTopic = crypto.Keccak256Hash([]byte("AuthorizationCanceled(address,bytes32)"))
)

// Bounds of the search for an authorization's log (authorizationLog).
const (
	// authLogChunks is how many eth_getLogs calls (of Config.LogRange
	// blocks each) one maintenance pass spends on one authorization; a
	// longer range goes on from there on the next pass (signedAuth.Searched).
	authLogChunks = 50
	// authLogOverlap is how far before the last block searched a later
	// search starts again (blocks): a log a reorg moved, or one a node
	// behind the one that answered the head had not yet indexed, is still
	// found.
	authLogOverlap = 64
)

// Reasons the payer's record carries.
const (
	reasonAuthCanceled = "the payment authorization was canceled; nothing was transferred"
	reasonAuthNoLog    = "the authorization's nonce is used on chain but no transfer log was found; checking again"
	reasonAuthLogLate  = "the authorization's transfer log was found on a later check"
)

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
	// Searched is the last block searched for its log without finding
	// one (0: none yet); the next pass searches on from a little before
	// it (authLogOverlap) rather than from Block again.
	Searched uint64 `json:"searched,omitempty"`
	// NoLog: its nonce was found used with neither log anywhere from
	// Block to the head, and the payer's record was told so (once).
	NoLog bool `json:"noLog,omitempty"`
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
//   - its nonce canceled (an AuthorizationCanceled log, cancelAuthorization
//     signed by the payer's key): failed, with the canceling transaction;
//     nothing was transferred;
//   - its nonce used with neither log from the block it was signed at to
//     the head: no guess. It stays pending, its record says so once (a
//     SettlementPending note, warned once) and later passes search on.
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
			found, err := c.authorizationLog(ctx, d.a, head.Number.Uint64())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			switch {
			case found.tx == "":
				if err := c.noLog(ctx, d.rec, d.a, found.searched, head.Number.Uint64()); err != nil {
					errs = append(errs, err)
				}
				continue
			case found.canceled:
				s = c.opts.NewSettlement(c.cfg.Chain, c.callerKey(d.rec.Key), d.a.AgentID, "authorization", found.tx, chains.SettlementFailed, 0, reasonAuthCanceled)
			default:
				late := ""
				if d.a.NoLog {
					late = reasonAuthLogLate // the record said none was found
				}
				s = c.opts.NewSettlement(c.cfg.Chain, c.callerKey(d.rec.Key), d.a.AgentID, "authorization", found.tx, chains.SettlementConfirmed, 1, late)
			}
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

// authLog is what authorizationLog found: the transaction of the log that
// used or canceled the nonce ("" when none), and the last block searched.
type authLog struct {
	tx       string
	canceled bool
	searched uint64
}

// authorizationLog searches a's AuthorizationUsed and AuthorizationCanceled
// logs (one query for both), from the block it was signed at (or, after a
// fruitless search, from a.Searched less authLogOverlap) towards head, in
// ranges of Config.LogRange blocks (RPC providers cap eth_getLogs ranges),
// at most authLogChunks of them this pass. searched is the last block
// searched; below head, the next pass goes on.
func (c *Connector) authorizationLog(ctx context.Context, a signedAuth, head uint64) (authLog, error) {
	// The overlap is at most half a pass's ranges, so that every pass
	// also searches blocks no pass searched before, however small LogRange.
	overlap := min(authLogOverlap, authLogChunks/2*c.cfg.LogRange)
	from := a.Block
	if a.Searched > a.Block+overlap {
		from = a.Searched - overlap
	}
	out := authLog{searched: a.Searched}
	topics := [][]common.Hash{{authorizationUsedTopic, authorizationCanceledTopic},
		{common.BytesToHash(common.HexToAddress(a.From).Bytes())}, {common.HexToHash(a.Nonce)}}
	for n := 0; from <= head && n < authLogChunks; n++ {
		to := min(from+c.cfg.LogRange-1, head)
		logs, err := c.eth.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
			Addresses: []common.Address{common.HexToAddress(a.Contract)}, Topics: topics})
		if err != nil {
			return out, c.Unavailable("authorization logs", err)
		}
		for _, l := range logs {
			if !l.Removed && len(l.Topics) > 0 {
				return authLog{tx: l.TxHash.Hex(), canceled: l.Topics[0] == authorizationCanceledTopic, searched: to}, nil
			}
		}
		out.searched, from = max(out.searched, to), to+1
	}
	return out, nil
}

// noLog keeps the row of an authorization whose nonce is used with no
// log found up to searched: it remembers how far the search got, and once
// it reached head (the whole range, from the block it was signed at), it
// tells the payer's record so, once, with a SettlementPending note in the
// same commit, and warns once.
func (c *Connector) noLog(ctx context.Context, rec persistence.Record, a signedAuth, searched, head uint64) error {
	tell := searched >= head && !a.NoLog
	if searched == a.Searched && !tell {
		return nil // nothing new: the head has not moved
	}
	a.Searched, a.NoLog = searched, a.NoLog || tell
	val, err := json.Marshal(a)
	if err != nil {
		return err
	}
	ops := []persistence.Op{persistence.Put(TableAuthorizations, rec.Key, val, persistence.AtVersion(rec.Version))}
	var note chains.Settlement
	if tell {
		note = c.opts.NewSettlement(c.cfg.Chain, chains.NoteKey(c.callerKey(rec.Key)), a.AgentID, "authorization", "", chains.SettlementPending, 0, reasonAuthNoLog)
		ops = append(ops, c.opts.SettleOps(note)...)
	}
	if _, err := c.opts.Store.Apply(ctx, ops...); err != nil {
		if errors.Is(err, persistence.ErrConflict) { // another pass got there
			return nil
		}
		return err
	}
	if tell {
		c.opts.Log.Warn("authorization nonce used but neither AuthorizationUsed nor AuthorizationCanceled logged; its record stays pending",
			"key", rec.Key, "from", a.From, "nonce", a.Nonce, "fromBlock", a.Block, "toBlock", searched)
		c.opts.Deliver(ctx, note)
	}
	return nil
}
