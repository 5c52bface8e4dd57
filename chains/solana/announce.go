package solana

import (
	"context"
	"errors"
	"fmt"

	solanago "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/veilhq/veil/chains"
)

var _ chains.AnnouncementReader = (*Connector)(nil)

// AnnouncementsIn implements chains.AnnouncementReader: the announcement
// of the successful, confirmed transaction txHash (a base58 signature),
// decoded as Scan decodes it (none when it announced nothing), at the
// Position a scan from the start of its slot gives it. An unknown, not yet
// confirmed or failed transaction matches chains.ErrNotFound.
func (c *Connector) AnnouncementsIn(ctx context.Context, txHash string) ([]chains.Announcement, error) {
	// Scan skips failed transactions, and reads at the confirmed
	// commitment, as successfulTx does.
	tx, r, err := c.successfulTx(ctx, txHash)
	if err != nil {
		return nil, err
	}
	a, ok := c.DecodeAnnouncement(tx)
	if !ok {
		return nil, nil
	}
	idx, err := c.announcementsBefore(ctx, tx.Signatures[0], r.Slot)
	if err != nil {
		return nil, err
	}
	a.Position = r.Slot<<20 | idx
	return []chains.Announcement{a}, nil
}

// successfulTx reads the transaction txHash (a base58 signature) at the
// confirmed commitment; one that is unknown, not confirmed yet, without a
// status or failed is an error matching chains.ErrNotFound that says which.
func (c *Connector) successfulTx(ctx context.Context, txHash string) (*solanago.Transaction, *rpc.GetTransactionResult, error) {
	sig, err := solanago.SignatureFromBase58(txHash)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: signature %q: want base58", chains.ErrNotFound, txHash)
	}
	tx, r, err := c.fetch(ctx, sig)
	if errors.Is(err, chains.ErrNotFound) {
		return nil, nil, fmt.Errorf("%w: transaction %s is not confirmed on solana (yet)", chains.ErrNotFound, txHash)
	}
	if err != nil {
		return nil, nil, err
	}
	if r.Meta == nil {
		return nil, nil, fmt.Errorf("%w: transaction %s has no status yet", chains.ErrNotFound, txHash)
	}
	if r.Meta.Err != nil {
		return nil, nil, fmt.Errorf("%w: transaction %s failed on solana and moved nothing", chains.ErrNotFound, txHash)
	}
	return tx, r, nil
}

// announcementsBefore counts the announcements Scan reads before sig in
// sig's slot (the index Scan's Position gives the next one in that slot):
// the successful transactions of the announcement account's history that
// precede sig in the slot and decode as announcements.
func (c *Connector) announcementsBefore(ctx context.Context, sig solanago.Signature, slot uint64) (uint64, error) {
	var same []solanago.Signature
	before := sig
	for {
		n := 1000
		page, err := c.rpc.GetSignaturesForAddressWithOpts(ctx, c.ann, &rpc.GetSignaturesForAddressOpts{
			Limit: &n, Before: before, Commitment: rpc.CommitmentConfirmed,
		})
		if err != nil {
			return 0, c.Unavailable("getSignaturesForAddress", err)
		}
		for _, s := range page {
			if s.Slot != slot {
				// Newest first: the slot's earlier transactions are all read.
				return c.countAnnouncements(ctx, same)
			}
			if s.Err == nil {
				same = append(same, s.Signature)
			}
		}
		if len(page) < n {
			return c.countAnnouncements(ctx, same)
		}
		before = page[len(page)-1].Signature
	}
}

// countAnnouncements counts the transactions sigs that decode as
// announcements.
func (c *Connector) countAnnouncements(ctx context.Context, sigs []solanago.Signature) (uint64, error) {
	if len(sigs) == 0 {
		return 0, nil
	}
	txs, err := c.fetchBatch(ctx, sigs)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, s := range sigs {
		if _, ok := c.DecodeAnnouncement(txs[s]); ok {
			n++
		}
	}
	return n, nil
}
