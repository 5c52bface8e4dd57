package console

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
)

// addressScanBlocks bounds how many recent blocks an address page reads
// for the account's transactions (a devnet explorer keeps no index).
const addressScanBlocks = 128

// EVM is the explorer of an EVM devnet, over its connector's RPC client.
type EVM struct {
	conn *evm.Connector
}

// NewEVM reads the chain conn is connected to.
func NewEVM(conn *evm.Connector) *EVM { return &EVM{conn: conn} }

var _ Explorer = (*EVM)(nil)

func (e *EVM) chain() chains.ID { return e.conn.Chain() }

func (e *EVM) notFound(what string, err error) error {
	if errors.Is(err, ethereum.NotFound) {
		return fmt.Errorf("%w: %s is not on %s", chains.ErrNotFound, what, e.chain())
	}
	return fmt.Errorf("%s on %s: %w", what, e.chain(), err)
}

// Tx reads a transaction, its receipt and its block's time.
func (e *EVM) Tx(ctx context.Context, hash string) (*Tx, error) {
	b, err := hexutil.Decode(hash)
	if err != nil || len(b) != common.HashLength {
		return nil, fmt.Errorf("%w: transaction hash %q: want 0x and 64 hex digits", ErrBadInput, hash)
	}
	h := common.BytesToHash(b)
	cl := e.conn.Client()
	tx, pending, err := cl.TransactionByHash(ctx, h)
	if err != nil {
		return nil, e.notFound("transaction "+h.Hex(), err)
	}
	out := &Tx{Chain: e.chain(), Hash: h.Hex(), Status: "pending", Value: chains.FormatAmount(tx.Value(), evm.NativeDecimals),
		Transfers: []chains.Transfer{}, Announcements: []Announcement{}}
	if from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx); err == nil {
		out.From = from.Hex()
	}
	if to := tx.To(); to != nil {
		out.To = to.Hex()
		if e.conn.IsStealthSender(*to) {
			out.ToLabel = "Veil stealth sender"
		}
	}
	if pending {
		return out, nil
	}
	r, err := cl.TransactionReceipt(ctx, h)
	if err != nil {
		return nil, e.notFound("receipt of "+h.Hex(), err)
	}
	out.Block = r.BlockNumber.Uint64()
	out.Status = "failed"
	if r.Status == types.ReceiptStatusSuccessful {
		out.Status = "success"
	}
	if r.EffectiveGasPrice != nil {
		fee := new(big.Int).Mul(r.EffectiveGasPrice, new(big.Int).SetUint64(r.GasUsed))
		out.Fee = chains.FormatAmount(fee, evm.NativeDecimals)
	}
	if hd, err := cl.HeaderByNumber(ctx, r.BlockNumber); err == nil {
		out.Time = time.Unix(int64(hd.Time), 0).UTC()
	}
	transfers, anns := e.conn.Explain(tx, r)
	if transfers != nil {
		out.Transfers = transfers
	}
	out.Announcements = announcements(anns)
	return out, nil
}

// Address reads an account's balances, nonce and Veil name, and its
// transactions in the last addressScanBlocks blocks.
func (e *EVM) Address(ctx context.Context, address string) (*Address, error) {
	if !common.IsHexAddress(address) {
		return nil, fmt.Errorf("%w: address %q: want 0x and 40 hex digits", ErrBadInput, address)
	}
	a := common.HexToAddress(address)
	bal, err := e.conn.Balance(ctx, a.Hex())
	if err != nil {
		return nil, err
	}
	cl := e.conn.Client()
	nonce, err := cl.NonceAt(ctx, a, nil)
	if err != nil {
		return nil, e.notFound("nonce of "+a.Hex(), err)
	}
	out := &Address{Chain: e.chain(), Address: a.Hex(), Balance: bal, Nonce: nonce, Txs: []TxSummary{}}
	// A chain without a name registry, or an address without a name,
	// shows none.
	if name, err := e.conn.NameOf(ctx, a.Hex()); err == nil {
		out.Name = name
	}
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		return nil, e.notFound("head", err)
	}
	for n := head; ; n-- {
		if out.Scanned == addressScanBlocks {
			break
		}
		out.Scanned++
		blk, err := cl.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			return nil, e.notFound(fmt.Sprintf("block %d", n), err)
		}
		for _, s := range e.summaries(blk) {
			if s.From == a.Hex() || s.To == a.Hex() {
				out.Txs = append(out.Txs, s)
			}
		}
		if n == 0 {
			break
		}
	}
	return out, nil
}

// Block reads a block and its transactions.
func (e *EVM) Block(ctx context.Context, number uint64) (*Block, error) {
	cl := e.conn.Client()
	blk, err := cl.BlockByNumber(ctx, new(big.Int).SetUint64(number))
	if err != nil {
		return nil, e.notFound(fmt.Sprintf("block %d", number), err)
	}
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		return nil, e.notFound("head", err)
	}
	return &Block{Chain: e.chain(), Number: number, Hash: blk.Hash().Hex(), Time: time.Unix(int64(blk.Time()), 0).UTC(),
		Txs: e.summaries(blk), Head: head}, nil
}

// Head is the newest block's number.
func (e *EVM) Head(ctx context.Context) (uint64, error) {
	n, err := e.conn.Client().BlockNumber(ctx)
	if err != nil {
		return 0, e.notFound("head", err)
	}
	return n, nil
}

func (e *EVM) summaries(blk *types.Block) []TxSummary {
	out := make([]TxSummary, 0, len(blk.Transactions()))
	for _, tx := range blk.Transactions() {
		s := TxSummary{Hash: tx.Hash().Hex(), Block: blk.NumberU64(), Value: chains.FormatAmount(tx.Value(), evm.NativeDecimals)}
		if from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx); err == nil {
			s.From = from.Hex()
		}
		if to := tx.To(); to != nil {
			s.To = to.Hex()
		}
		out = append(out, s)
	}
	return out
}
