// Package payuri builds the payment URI of an invoice, the text a payer's
// wallet reads from the pay page's QR code or its "Open in wallet" link: an
// EIP-681 request on the EVM chains, a Solana Pay transfer request on
// Solana and a SEP-7 pay request on Stellar (docs/invoices.md).
//
// Amounts never pass through a float: the invoice's decimal amount is
// parsed into base units with the asset's decimals, and written either as
// an integer of base units (EIP-681's value and uint256) or as the exact
// decimal (Solana Pay's amount, SEP-7's amount).
package payuri

import (
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"

	"github.com/stellar/go-stellar-sdk/network"

	"github.com/veilhq/veil/chains"
)

// ErrIncomplete is returned when a request lacks what its format needs.
var ErrIncomplete = errors.New("payment request incomplete")

// Request is what an invoice asks a payer to send.
type Request struct {
	// PayTo is the invoice's one-time address.
	PayTo string
	// Amount is the decimal amount in the asset's units ("0.05").
	Amount string
	// Decimals of the asset (18 for ETH, 6 for USDC on EVM, 7 on Stellar).
	Decimals int
	// AssetCode is the asset's symbol (SEP-7's asset_code).
	AssetCode string
	// Token is empty for the chain's native asset; otherwise the ERC-20
	// contract (EVM), the SPL mint (Solana) or the issuer account (Stellar).
	Token string
	// ChainID is the EIP-155 chain id (EVM only).
	ChainID uint64
	// Reference is Solana Pay's reference key (base58 public key), optional.
	Reference string
	// NetworkPassphrase is the Stellar network's passphrase: SEP-7's
	// network_passphrase, which the URI carries for every network but the
	// public one (SEP-7: "only need to set if this transaction is for a
	// network other than the public network"), so a wallet on the public
	// network does not pay a testnet or devnet invoice there. EIP-681 has
	// the chain id for this (ChainID); Solana Pay has no field for the
	// cluster (the pay page names it instead, docs/invoices.md).
	NetworkPassphrase string
	// Label and Message are shown by Solana Pay wallets; Memo goes on chain
	// (Solana Pay's memo, SEP-7's memo as MEMO_TEXT). All optional.
	Label, Message, Memo string
}

// For returns the URI of r in the format of chain's family.
func For(family chains.Family, r Request) (string, error) {
	switch family {
	case chains.FamilyEVM:
		return EIP681(r)
	case chains.FamilySolana:
		return SolanaPay(r)
	case chains.FamilyStellar:
		return SEP7(r)
	}
	return "", fmt.Errorf("%w: no payment URI format for chain family %q", ErrIncomplete, family)
}

// units parses r.Amount into base units; it must be positive.
func (r Request) units() (*big.Int, error) {
	v, err := chains.ParseAmount(r.Amount, r.Decimals)
	if err != nil {
		return nil, err
	}
	if v.Sign() <= 0 {
		return nil, fmt.Errorf("%w: amount %q is not positive", chains.ErrInvalidAmount, r.Amount)
	}
	return v, nil
}

// decimal is r.Amount normalised (no trailing zeros, no exponent), of a
// request that names the address to pay (what: the URI's name for it).
func (r Request) decimal(what string) (string, error) {
	if err := need(what, r.PayTo); err != nil {
		return "", err
	}
	v, err := r.units()
	if err != nil {
		return "", err
	}
	return chains.FormatAmount(v, r.Decimals), nil
}

func need(what, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: no %s", ErrIncomplete, what)
	}
	return nil
}

// EIP681 is an EIP-681 request: for the native asset
// ethereum:<payTo>@<chainId>?value=<wei>, for a token
// ethereum:<token>@<chainId>/transfer?address=<payTo>&uint256=<units>.
// Amounts are integers of base units.
func EIP681(r Request) (string, error) {
	if err := need("address to pay", r.PayTo); err != nil {
		return "", err
	}
	if r.ChainID == 0 {
		return "", fmt.Errorf("%w: no EVM chain id", ErrIncomplete)
	}
	v, err := r.units()
	if err != nil {
		return "", err
	}
	if r.Token == "" {
		return fmt.Sprintf("ethereum:%s@%d?value=%s", r.PayTo, r.ChainID, v), nil
	}
	return fmt.Sprintf("ethereum:%s@%d/transfer?address=%s&uint256=%s", r.Token, r.ChainID, r.PayTo, v), nil
}

// SolanaPay is a Solana Pay transfer request:
// solana:<payTo>?amount=<decimal>&spl-token=<mint>&reference=…&label=…&message=…&memo=…
// The amount is the exact decimal in the asset's units (SOL or the
// token's), as the specification requires.
func SolanaPay(r Request) (string, error) {
	amt, err := r.decimal("address to pay")
	if err != nil {
		return "", err
	}
	q := []string{"amount=" + amt}
	if r.Token != "" {
		q = append(q, "spl-token="+r.Token)
	}
	if r.Reference != "" {
		q = append(q, "reference="+r.Reference)
	}
	q = appendText(q, "label", r.Label)
	q = appendText(q, "message", r.Message)
	q = appendText(q, "memo", r.Memo)
	return "solana:" + r.PayTo + "?" + strings.Join(q, "&"), nil
}

// SEP7 is a SEP-7 pay request:
// web+stellar:pay?destination=<payTo>&amount=<decimal>&asset_code=…&asset_issuer=…&memo=…&memo_type=MEMO_TEXT&network_passphrase=…
// The native asset (XLM) carries no asset_code or asset_issuer; the
// public network carries no network_passphrase (it is SEP-7's default).
func SEP7(r Request) (string, error) {
	amt, err := r.decimal("destination")
	if err != nil {
		return "", err
	}
	q := []string{"destination=" + r.PayTo, "amount=" + amt}
	if r.Token != "" {
		if err := need("asset code", r.AssetCode); err != nil {
			return "", err
		}
		q = append(q, "asset_code="+url.QueryEscape(r.AssetCode), "asset_issuer="+r.Token)
	}
	if r.Memo != "" {
		// A Stellar text memo holds at most 28 bytes.
		m := clipBytes(r.Memo, 28)
		q = append(q, "memo="+escape(m), "memo_type=MEMO_TEXT")
	}
	if r.NetworkPassphrase != "" && r.NetworkPassphrase != network.PublicNetworkPassphrase {
		q = append(q, "network_passphrase="+escape(r.NetworkPassphrase))
	}
	return "web+stellar:pay?" + strings.Join(q, "&"), nil
}

func appendText(q []string, key, v string) []string {
	if v == "" {
		return q
	}
	return append(q, key+"="+escape(v))
}

// escape percent-encodes a text value (spaces as %20, which every parser
// reads; '+' would be read as a plus sign by some).
func escape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// clipBytes cuts s to at most n bytes without splitting a character.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Target is implemented by connectors that can say what a payer's wallet
// needs beyond the address: the EIP-155 chain id (EVM; 0 elsewhere) and the
// asset's token — ERC-20 contract, SPL mint or Stellar issuer, "" for the
// native asset. ok is false for an asset the connector does not carry.
type Target interface {
	PaymentTarget(asset string) (chainID uint64, token string, ok bool)
}

// Networked is implemented by connectors whose payment requests name
// their network beyond a chain id: Stellar's network passphrase.
type Networked interface {
	PaymentNetwork() string
}
