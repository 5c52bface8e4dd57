package evm

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stealth/secp256k1"
)

// transferTopic is the ERC-20 Transfer(address,address,uint256) event.
var transferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

var (
	_ chains.PaymentVerifier    = (*Connector)(nil)
	_ chains.AnnouncementReader = (*Connector)(nil)
	_ chains.TransferScanner    = (*Connector)(nil)
)

// maxTransferBlocks bounds the blocks one ScanTransfers call reads.
const maxTransferBlocks = 200

// TransfersIn returns what the transaction txHash delivered, once it is
// mined, successful and Confirmations deep: its native value (top-level
// call only), the ERC-20 Transfer events of the configured tokens, and the
// native amounts of Veil stealth payments it announced (the StealthSender
// forwards them in an internal call no log records otherwise).
func (c *Connector) TransfersIn(ctx context.Context, txHash string) ([]chains.Transfer, error) {
	r, h, err := c.confirmedReceipt(ctx, txHash)
	if err != nil {
		return nil, err
	}
	tx, _, err := c.eth.TransactionByHash(ctx, h)
	if err != nil {
		return nil, c.Unavailable("transaction", err)
	}
	return c.transfersOf(tx, r), nil
}

// AnnouncementsIn returns the Veil stealth announcements of the
// transaction txHash once it is mined, successful and Confirmations deep,
// decoded as Scan decodes them (same fields, same formats).
func (c *Connector) AnnouncementsIn(ctx context.Context, txHash string) ([]chains.Announcement, error) {
	if err := c.needSender(); err != nil {
		return nil, err
	}
	r, _, err := c.confirmedReceipt(ctx, txHash)
	if err != nil {
		return nil, err
	}
	ev := c.ann.GetABI().Events["Announcement"].ID
	scheme := common.BigToHash(big.NewInt(secp256k1.SchemeID))
	caller := common.BytesToHash(c.cfg.Sender.Bytes())
	var out []chains.Announcement
	for _, l := range r.Logs {
		if l.Removed || l.Address != c.cfg.Announcer || len(l.Topics) != 4 || l.Topics[0] != ev || l.Topics[1] != scheme || l.Topics[3] != caller {
			continue
		}
		if a, ok := c.decodeAnnouncement(l); ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// confirmedReceipt is the receipt of txHash when it is mined, successful
// and Confirmations deep; otherwise an error matching chains.ErrNotFound
// (or ErrUnavailable) that says why.
func (c *Connector) confirmedReceipt(ctx context.Context, txHash string) (*types.Receipt, common.Hash, error) {
	b, err := hexutil.Decode(txHash)
	if err != nil || len(b) != common.HashLength {
		return nil, common.Hash{}, fmt.Errorf("%w: transaction hash %q: want 0x and 64 hex digits", chains.ErrNotFound, txHash)
	}
	h := common.BytesToHash(b)
	r, err := c.eth.TransactionReceipt(ctx, h)
	if errors.Is(err, ethereum.NotFound) {
		return nil, h, fmt.Errorf("%w: transaction %s is not mined on %s (yet)", chains.ErrNotFound, h.Hex(), c.cfg.Chain)
	}
	if err != nil {
		return nil, h, c.Unavailable("receipt", err)
	}
	if c.cfg.Confirmations > 0 {
		head, err := c.eth.BlockNumber(ctx)
		if err != nil {
			return nil, h, c.Unavailable("block number", err)
		}
		if n := r.BlockNumber.Uint64(); head < n+c.cfg.Confirmations {
			return nil, h, fmt.Errorf("%w: transaction %s is in block %d and needs %d confirmations on %s; retry shortly", chains.ErrNotFound, h.Hex(), n, c.cfg.Confirmations, c.cfg.Chain)
		}
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return nil, h, fmt.Errorf("%w: transaction %s failed (reverted) on %s and moved nothing", chains.ErrNotFound, h.Hex(), c.cfg.Chain)
	}
	return r, h, nil
}

// transfersOf lists the transfers of one successful transaction.
func (c *Connector) transfersOf(tx *types.Transaction, r *types.Receipt) []chains.Transfer {
	var out []chains.Transfer
	pos := r.BlockNumber.Uint64()<<24 | uint64(r.TransactionIndex)<<8
	if to := tx.To(); to != nil && tx.Value().Sign() > 0 {
		out = append(out, chains.Transfer{
			To: to.Hex(), Asset: c.cfg.Chain.NativeAsset(), Amount: chains.FormatAmount(tx.Value(), NativeDecimals),
			TxHash: tx.Hash().Hex(), Position: pos,
		})
	}
	annEv := c.ann.GetABI().Events["Announcement"].ID
	sender := common.BytesToHash(c.cfg.Sender.Bytes())
	for _, l := range r.Logs {
		if l.Removed || len(l.Topics) == 0 {
			continue
		}
		switch {
		case l.Topics[0] == transferTopic && len(l.Topics) == 3 && len(l.Data) == 32:
			t, ok := c.tokenByAddress(l.Address)
			if !ok {
				continue
			}
			v := new(big.Int).SetBytes(l.Data)
			if v.Sign() == 0 {
				continue
			}
			out = append(out, chains.Transfer{
				To: common.BytesToAddress(l.Topics[2].Bytes()).Hex(), Asset: t.Symbol, Amount: chains.FormatAmount(v, t.Decimals),
				TxHash: tx.Hash().Hex(), Position: l.BlockNumber<<24 | uint64(l.Index),
			})
		case l.Address == c.cfg.Announcer && l.Topics[0] == annEv && len(l.Topics) == 4 && l.Topics[3] == sender && c.cfg.Sender != (common.Address{}):
			a, ok := c.decodeAnnouncement(l)
			// Token payments already show as a Transfer event.
			if !ok || a.Asset != c.cfg.Chain.NativeAsset() {
				continue
			}
			out = append(out, chains.Transfer{To: a.StealthAddress, Asset: a.Asset, Amount: a.Amount, TxHash: a.TxHash, Position: a.Position})
		}
	}
	return out
}

// ScanTransfers reads whole blocks after cursor (a block number; "" starts
// after the current confirmed head), at most 200 per call and stopping
// after the block where limit transfers were reached, and returns their
// transfers (see TransfersIn) with the next block as the cursor. It costs
// two RPC calls per block with transactions (the block, and
// eth_getBlockReceipts or, where the node lacks it, one batch of
// eth_getTransactionReceipt).
func (c *Connector) ScanTransfers(ctx context.Context, cursor string, limit int) ([]chains.Transfer, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	head, err := c.eth.BlockNumber(ctx)
	if err != nil {
		return nil, cursor, c.Unavailable("block number", err)
	}
	var confirmed uint64
	if head >= c.cfg.Confirmations {
		confirmed = head - c.cfg.Confirmations
	}
	if cursor == "" {
		return nil, strconv.FormatUint(confirmed+1, 10), nil
	}
	from, err := strconv.ParseUint(cursor, 10, 64)
	if err != nil {
		return nil, cursor, fmt.Errorf("evm: bad transfer cursor %q", cursor)
	}
	var out []chains.Transfer
	n := from
	for ; n <= confirmed && n < from+maxTransferBlocks && len(out) < limit; n++ {
		ts, err := c.blockTransfers(ctx, n)
		if err != nil {
			return out, strconv.FormatUint(n, 10), err
		}
		out = append(out, ts...)
	}
	return out, strconv.FormatUint(n, 10), nil
}

func (c *Connector) blockTransfers(ctx context.Context, n uint64) ([]chains.Transfer, error) {
	blk, err := c.eth.BlockByNumber(ctx, new(big.Int).SetUint64(n))
	if err != nil {
		return nil, c.Unavailable("block", err)
	}
	if len(blk.Transactions()) == 0 {
		return nil, nil
	}
	receipts, err := c.blockReceipts(ctx, n, blk.Transactions())
	if err != nil {
		return nil, err
	}
	byHash := make(map[common.Hash]*types.Receipt, len(receipts))
	for _, r := range receipts {
		if r != nil {
			byHash[r.TxHash] = r
		}
	}
	var out []chains.Transfer
	for _, tx := range blk.Transactions() {
		r := byHash[tx.Hash()]
		if r == nil {
			return nil, fmt.Errorf("%w: %s: block %d: no receipt for %s", chains.ErrUnavailable, c.cfg.Chain, n, tx.Hash().Hex())
		}
		if r.Status != types.ReceiptStatusSuccessful {
			continue
		}
		if r.BlockNumber == nil {
			r.BlockNumber = new(big.Int).SetUint64(n)
		}
		out = append(out, c.transfersOf(tx, r)...)
	}
	return out, nil
}

// receiptBatch bounds the receipts asked for in one JSON-RPC batch
// (providers cap batches; 100 is below every common cap).
const receiptBatch = 100

// blockReceipts reads the receipts of block n: eth_getBlockReceipts where
// the node serves it (one call), else eth_getTransactionReceipt per
// transaction in batches. Not every node serves eth_getBlockReceipts
// (Hardhat 2 answers "Method eth_getBlockReceipts is not supported", as do
// some providers); the first such answer switches this connector to the
// per-transaction path for good.
func (c *Connector) blockReceipts(ctx context.Context, n uint64, txs types.Transactions) ([]*types.Receipt, error) {
	if !c.noBlockReceipts.Load() {
		var receipts []*types.Receipt
		err := c.rpc.CallContext(ctx, &receipts, "eth_getBlockReceipts", hexutil.EncodeUint64(n))
		if err == nil {
			return receipts, nil
		}
		if !methodMissing(err) {
			return nil, c.Unavailable("block receipts", err)
		}
		if !c.noBlockReceipts.Swap(true) {
			c.opts.Log.Info("the node does not serve eth_getBlockReceipts; reading receipts per transaction", "err", err)
		}
	}
	receipts := make([]*types.Receipt, len(txs))
	for lo := 0; lo < len(txs); lo += receiptBatch {
		hi := min(lo+receiptBatch, len(txs))
		batch := make([]rpc.BatchElem, 0, hi-lo)
		for i := lo; i < hi; i++ {
			batch = append(batch, rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{txs[i].Hash()}, Result: &receipts[i]})
		}
		if err := c.rpc.BatchCallContext(ctx, batch); err != nil {
			return nil, c.Unavailable("receipts", err)
		}
		for _, b := range batch {
			if b.Error != nil {
				return nil, c.Unavailable("receipt", b.Error)
			}
		}
	}
	return receipts, nil
}

// methodMissing reports whether err says the node does not serve the
// method: JSON-RPC -32601 (method not found) or -32004 (method not
// supported, EIP-1474), or the wordings nodes and providers use for it.
func methodMissing(err error) bool {
	var re rpc.Error
	if errors.As(err, &re) && (re.ErrorCode() == -32601 || re.ErrorCode() == -32004) {
		return true
	}
	return mentions(err, "method not found", "not supported", "does not exist", "not available", "unsupported method", "method not allowed", "unknown method")
}
