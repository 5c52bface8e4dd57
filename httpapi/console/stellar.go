package console

import (
	"context"
	"fmt"
	"regexp"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/stellar"
)

// stellarListed bounds the transactions an address or ledger page lists
// (one Horizon page).
const stellarListed = 200

var stellarHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Stellar is the explorer of a Stellar devnet, over its connector's
// Horizon client. A "block" is a ledger.
type Stellar struct {
	conn *stellar.Connector
}

// NewStellar reads the network conn is connected to.
func NewStellar(conn *stellar.Connector) *Stellar { return &Stellar{conn: conn} }

var _ Explorer = (*Stellar)(nil)

func (s *Stellar) horizonErr(what string, err error) error {
	if horizonclient.IsNotFoundError(err) {
		return fmt.Errorf("%w: %s is not on stellar", chains.ErrNotFound, what)
	}
	return fmt.Errorf("%s on stellar: %w", what, err)
}

// Tx reads a transaction: its source, fee, ledger, what it delivered and
// its stealth announcement.
func (s *Stellar) Tx(ctx context.Context, hash string) (*Tx, error) {
	if !stellarHash.MatchString(hash) {
		return nil, fmt.Errorf("%w: transaction hash %q: want 64 lower-case hex digits", ErrBadInput, hash)
	}
	t, err := s.conn.Client().TransactionDetail(hash)
	if err != nil {
		return nil, s.horizonErr("transaction "+hash, err)
	}
	out := &Tx{Chain: chains.Stellar, Hash: t.Hash, Status: "failed", Block: uint64(t.Ledger), Time: t.LedgerCloseTime.UTC(), From: t.Account,
		Fee: chains.FormatAmount(bigInt(t.FeeCharged), 7), Transfers: transfersOf(ctx, s.conn, hash), Announcements: []Announcement{}}
	if t.Successful {
		out.Status = "success"
	}
	a, ok := s.conn.DecodeAnnouncement(t)
	return withPayment(out, a, ok), nil
}

// Address reads an account's balances and its latest transactions.
func (s *Stellar) Address(ctx context.Context, address string) (*Address, error) {
	if !strkey.IsValidEd25519PublicKey(address) {
		return nil, fmt.Errorf("%w: address %q: want a Stellar account (G…)", ErrBadInput, address)
	}
	bal, err := s.conn.Balance(ctx, address)
	if err != nil {
		return nil, err
	}
	page, err := s.conn.Client().Transactions(horizonclient.TransactionRequest{ForAccount: address, Order: horizonclient.OrderDesc, Limit: stellarListed})
	if err != nil && !horizonclient.IsNotFoundError(err) {
		return nil, s.horizonErr("transactions of "+address, err)
	}
	return &Address{Chain: chains.Stellar, Address: address, Balance: bal, Txs: stellarSummaries(page.Embedded.Records, 0)}, nil
}

// Block lists a ledger's transactions among the network's latest ones
// (the devnet's Horizon has no ledger endpoint).
func (s *Stellar) Block(ctx context.Context, number uint64) (*Block, error) {
	head, err := s.Head(ctx)
	if err != nil {
		return nil, err
	}
	if number == 0 || number > head {
		return nil, fmt.Errorf("%w: ledger %d (the latest is %d)", chains.ErrNotFound, number, head)
	}
	page, err := s.conn.Client().Transactions(horizonclient.TransactionRequest{Order: horizonclient.OrderDesc, Limit: stellarListed})
	if err != nil {
		return nil, s.horizonErr("transactions", err)
	}
	return &Block{Chain: chains.Stellar, Number: number, Txs: stellarSummaries(page.Embedded.Records, number), Head: head}, nil
}

// Head is the latest ledger.
func (s *Stellar) Head(ctx context.Context) (uint64, error) {
	n, _, err := s.conn.Head(ctx)
	return n, err
}

// stellarSummaries lists txs (of ledger when it is not 0).
func stellarSummaries(txs []hProtocol.Transaction, ledger uint64) []TxSummary {
	out := []TxSummary{}
	for _, t := range txs {
		if ledger != 0 && uint64(t.Ledger) != ledger {
			continue
		}
		out = append(out, TxSummary{Hash: t.Hash, Block: uint64(t.Ledger), From: t.Account})
	}
	return out
}
