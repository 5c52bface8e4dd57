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

	"github.com/veilhq/veil/chains"
)

// transferTopic is the ERC-20 Transfer(address,address,uint256) event.
var transferTopic = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))

var (
	_ chains.PaymentVerifier = (*Connector)(nil)
	_ chains.TransferScanner = (*Connector)(nil)
)

// maxTransferBlocks bounds the blocks one ScanTransfers call reads.
const maxTransferBlocks = 200

// TransfersIn returns what the transaction txHash delivered, once it is
// mined, successful and Confirmations deep: its native value (top-level
// call only), the ERC-20 Transfer events of the configured tokens, and the
// native amounts of Veil stealth payments it announced (the StealthSender
// forwards them in an internal call no log records otherwise).
func (c *Connector) TransfersIn(ctx context.Context, txHash string) ([]chains.Transfer, error) {
	b, err := hexutil.Decode(txHash)
	if err != nil || len(b) != common.HashLength {
		return nil, fmt.Errorf("%w: transaction hash %q: want 0x and 64 hex digits", chains.ErrNotFound, txHash)
	}
	h := common.BytesToHash(b)
	r, err := c.eth.TransactionReceipt(ctx, h)
	if errors.Is(err, ethereum.NotFound) {
		return nil, fmt.Errorf("%w: transaction %s is not mined on %s (yet)", chains.ErrNotFound, h.Hex(), c.cfg.Chain)
	}
	if err != nil {
		return nil, c.unavailable("receipt", err)
	}
	if c.cfg.Confirmations > 0 {
		head, err := c.eth.BlockNumber(ctx)
		if err != nil {
			return nil, c.unavailable("block number", err)
		}
		if n := r.BlockNumber.Uint64(); head < n+c.cfg.Confirmations {
			return nil, fmt.Errorf("%w: transaction %s is in block %d and needs %d confirmations on %s; retry shortly", chains.ErrNotFound, h.Hex(), n, c.cfg.Confirmations, c.cfg.Chain)
		}
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return nil, fmt.Errorf("%w: transaction %s failed (reverted) on %s and moved nothing", chains.ErrNotFound, h.Hex(), c.cfg.Chain)
	}
	tx, _, err := c.eth.TransactionByHash(ctx, h)
	if err != nil {
		return nil, c.unavailable("transaction", err)
	}
	return c.transfersOf(tx, r), nil
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
// two RPC calls per block (the block with its transactions, and
// eth_getBlockReceipts).
func (c *Connector) ScanTransfers(ctx context.Context, cursor string, limit int) ([]chains.Transfer, string, error) {
	if limit <= 0 {
		limit = 1000
	}
	head, err := c.eth.BlockNumber(ctx)
	if err != nil {
		return nil, cursor, c.unavailable("block number", err)
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
		return nil, c.unavailable("block", err)
	}
	if len(blk.Transactions()) == 0 {
		return nil, nil
	}
	var receipts []*types.Receipt
	if err := c.rpc.CallContext(ctx, &receipts, "eth_getBlockReceipts", hexutil.EncodeUint64(n)); err != nil {
		return nil, c.unavailable("block receipts", err)
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
