package console

import (
	"context"
	"encoding/hex"
	"errors"
	"math/big"
	"time"

	"github.com/veilhq/veil/chains"
)

// Explorer reads one devnet chain for the explorer pages. Every method is
// read-only and safe for concurrent use. A transaction, address or block
// the chain does not know answers an error matching chains.ErrNotFound.
type Explorer interface {
	Tx(ctx context.Context, hash string) (*Tx, error)
	Address(ctx context.Context, address string) (*Address, error)
	Block(ctx context.Context, number uint64) (*Block, error)
	// Head is the newest block's number.
	Head(ctx context.Context) (uint64, error)
}

// ErrBadInput is a hash, address or number the chain cannot read (a 400).
var ErrBadInput = errors.New("bad input")

// Tx is one transaction as the explorer shows it.
type Tx struct {
	Chain chains.ID `json:"chain"`
	Hash  string    `json:"hash"`
	// Status is "success", "failed" or "pending" (not mined yet).
	Status string    `json:"status"`
	Block  uint64    `json:"block"`
	Time   time.Time `json:"time,omitzero"`
	From   string    `json:"from"`
	// To is the account or contract the transaction called; ToLabel names
	// a known contract ("Veil stealth sender").
	To      string `json:"to"`
	ToLabel string `json:"toLabel,omitempty"`
	// Value is the native amount the transaction itself carried.
	Value string `json:"value"`
	Fee   string `json:"fee,omitempty"`
	// Transfers is what the transaction delivered: native value, token
	// transfers and stealth payments (to the one-time address).
	Transfers []chains.Transfer `json:"transfers"`
	// Announcements are the stealth payment announcements it made.
	Announcements []Announcement `json:"announcements"`
}

// Announcement is a stealth payment announcement: the one-time address
// and the ephemeral key its recipient's viewing key needs to find it.
type Announcement struct {
	StealthAddress  string `json:"stealthAddress"`
	EphemeralPubKey string `json:"ephemeralPubKey"` // hex
	ViewTag         int    `json:"viewTag"`
	Asset           string `json:"asset"`
	Amount          string `json:"amount"`
}

// Address is one account as the explorer shows it.
type Address struct {
	Chain   chains.ID      `json:"chain"`
	Address string         `json:"address"`
	Balance chains.Balance `json:"balance"`
	// Nonce counts the transactions the account sent (EVM).
	Nonce uint64 `json:"nonce"`
	// Name is the Veil name registered to the address, if any.
	Name string `json:"name,omitempty"`
	// Txs are the account's transactions in the recent blocks, newest first.
	Txs []TxSummary `json:"txs"`
	// Scanned is how many recent blocks Txs covers.
	Scanned uint64 `json:"scanned"`
}

// Block is one block as the explorer shows it.
type Block struct {
	Chain  chains.ID   `json:"chain"`
	Number uint64      `json:"number"`
	Hash   string      `json:"hash"`
	Time   time.Time   `json:"time,omitzero"`
	Txs    []TxSummary `json:"txs"`
	Head   uint64      `json:"head"`
}

// TxSummary is a transaction in a list.
type TxSummary struct {
	Hash  string `json:"hash"`
	Block uint64 `json:"block"`
	From  string `json:"from"`
	To    string `json:"to"`
	Value string `json:"value"`
}

// announcements converts the chain's announcements for the page.
func announcements(anns []chains.Announcement) []Announcement {
	out := make([]Announcement, 0, len(anns))
	for _, a := range anns {
		out = append(out, Announcement{
			StealthAddress: a.StealthAddress, EphemeralPubKey: "0x" + hex.EncodeToString(a.EphemeralPubKey),
			ViewTag: int(a.ViewTag), Asset: a.Asset, Amount: a.Amount,
		})
	}
	return out
}

// withPayment completes the transaction of a chain whose transactions
// call no contract: its announcement, if ok, and the first transfer's
// recipient as what it called.
func withPayment(out *Tx, a chains.Announcement, ok bool) *Tx {
	if ok {
		out.Announcements = announcements([]chains.Announcement{a})
	}
	if len(out.Transfers) > 0 {
		out.To = out.Transfers[0].To
	}
	return out
}

// transfersOf is the transfers a connector's TransfersIn reads, or none
// for a transaction it does not count (failed, not confirmed yet).
func transfersOf(ctx context.Context, v chains.PaymentVerifier, hash string) []chains.Transfer {
	ts, err := v.TransfersIn(ctx, hash)
	if err != nil || ts == nil {
		return []chains.Transfer{}
	}
	return ts
}

func bigInt(v int64) *big.Int { return big.NewInt(v) }
