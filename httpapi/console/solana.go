package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/solana"
)

// solanaListed bounds the signatures an address page lists.
const solanaListed = 50

// Solana is the explorer of a Solana devnet, over its connector's RPC
// client. A "block" is a slot; the embedded devnet keeps no blocks to
// list, so block pages answer not found there.
type Solana struct {
	conn *solana.Connector
}

// NewSolana reads the cluster conn is connected to.
func NewSolana(conn *solana.Connector) *Solana { return &Solana{conn: conn} }

var _ Explorer = (*Solana)(nil)

// Tx reads a transaction: its fee payer, fee, slot, what it delivered and
// its stealth announcement.
func (s *Solana) Tx(ctx context.Context, hash string) (*Tx, error) {
	sig, err := solanago.SignatureFromBase58(hash)
	if err != nil {
		return nil, fmt.Errorf("%w: transaction signature %q: want base58", ErrBadInput, hash)
	}
	v := uint64(0)
	r, err := s.conn.Client().GetTransaction(ctx, sig, &rpc.GetTransactionOpts{Encoding: solanago.EncodingBase64, Commitment: rpc.CommitmentConfirmed, MaxSupportedTransactionVersion: &v})
	if errors.Is(err, rpc.ErrNotFound) || err == nil && (r == nil || r.Transaction == nil) {
		return nil, fmt.Errorf("%w: transaction %s is not on solana", chains.ErrNotFound, sig)
	}
	if err != nil {
		return nil, fmt.Errorf("transaction %s on solana: %w", sig, err)
	}
	tx, err := r.Transaction.GetTransaction()
	if err != nil {
		return nil, fmt.Errorf("decode transaction %s: %w", sig, err)
	}
	out := &Tx{Chain: chains.Solana, Hash: sig.String(), Status: "success", Block: r.Slot, Transfers: transfersOf(ctx, s.conn, hash), Announcements: []Announcement{}}
	if r.BlockTime != nil {
		out.Time = time.Unix(int64(*r.BlockTime), 0).UTC()
	}
	if r.Meta != nil {
		if r.Meta.Err != nil {
			out.Status = "failed"
		}
		out.Fee = chains.FormatAmount(bigInt(int64(r.Meta.Fee)), 9)
	}
	if keys := tx.Message.AccountKeys; len(keys) > 0 {
		out.From = keys[0].String()
	}
	a, ok := s.conn.DecodeAnnouncement(tx)
	return withPayment(out, a, ok), nil
}

// Address reads an account's balances and its latest signatures.
func (s *Solana) Address(ctx context.Context, address string) (*Address, error) {
	pk, err := solanago.PublicKeyFromBase58(address)
	if err != nil {
		return nil, fmt.Errorf("%w: address %q: want a base58 public key", ErrBadInput, address)
	}
	bal, err := s.conn.Balance(ctx, pk.String())
	if err != nil {
		return nil, err
	}
	n := solanaListed
	sigs, err := s.conn.Client().GetSignaturesForAddressWithOpts(ctx, pk, &rpc.GetSignaturesForAddressOpts{Limit: &n, Commitment: rpc.CommitmentConfirmed})
	if err != nil {
		return nil, fmt.Errorf("signatures of %s on solana: %w", pk, err)
	}
	out := &Address{Chain: chains.Solana, Address: pk.String(), Balance: bal, Txs: []TxSummary{}}
	for _, sg := range sigs {
		out.Txs = append(out.Txs, TxSummary{Hash: sg.Signature.String(), Block: sg.Slot})
	}
	return out, nil
}

// Block is not available: the embedded devnet answers no getBlock.
func (s *Solana) Block(context.Context, uint64) (*Block, error) {
	return nil, fmt.Errorf("%w: the Solana devnet keeps no blocks to list", chains.ErrNotFound)
}

// Head is the current slot.
func (s *Solana) Head(ctx context.Context) (uint64, error) {
	n, _, err := s.conn.Head(ctx)
	return n, err
}
