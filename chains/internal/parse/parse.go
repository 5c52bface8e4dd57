// Package parse checks the requests every connector takes (a stealth
// payment, a withdrawal, a name registration) in one order, with the
// connector's own readers of addresses and meta-addresses and its own
// assets, so that the same mistake is the same error on every chain. A
// request's asset is typed (chains.Asset, resolved where the request was
// made): it is checked to be one of the connector's own, never looked up
// by its symbol.
package parse

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/veilhq/veil/chains"
)

// Chain is how a connector reads its addresses (Addr) and meta-addresses
// (Meta); Own checks that a request's asset is one of the connector's own
// (connopts.Base.Own) and Asset turns such an asset into the connector's
// form of it (a contract, an issuer, a mint).
type Chain[Addr, Meta, Asset any] struct {
	Address func(string) (Addr, error)
	Meta    func(string) (Meta, error)
	Own     func(chains.Asset) error
	Asset   func(chains.Asset) Asset
}

// Send is a parsed chains.SendRequest: the source, the recipient's
// meta-address, the asset and the amount in its base units.
type Send[Addr, Meta, Asset any] struct {
	From  Addr
	To    Meta
	Asset Asset
	Units *big.Int
}

// Send reads a payment of req from fromAddress.
func (c Chain[Addr, Meta, Asset]) Send(fromAddress string, req chains.SendRequest) (s Send[Addr, Meta, Asset], err error) {
	if s.From, err = c.Address(fromAddress); err == nil {
		if s.To, err = c.Meta(req.To); err == nil {
			s.Asset, s.Units, err = c.amount(req.Asset, req.Units)
		}
	}
	return s, err
}

// amount checks a request's asset and reads the amount of it (units: the
// request's Units, in the asset's decimals).
func (c Chain[Addr, Meta, Asset]) amount(a chains.Asset, units func() (*big.Int, error)) (Asset, *big.Int, error) {
	if err := c.Own(a); err != nil {
		var zero Asset
		return zero, nil, err
	}
	u, err := units()
	return c.Asset(a), u, err
}

// Withdraw is a parsed chains.WithdrawRequest; Units is nil with All.
type Withdraw[Addr, Asset any] struct {
	From, To Addr
	Asset    Asset
	Units    *big.Int
	All      bool
}

// Withdraw reads a withdrawal.
func (c Chain[Addr, Meta, Asset]) Withdraw(req chains.WithdrawRequest) (w Withdraw[Addr, Asset], err error) {
	w.All = req.All
	if w.From, err = c.Address(req.From); err == nil {
		if w.To, err = c.Address(req.To); err == nil {
			w.Asset, w.Units, err = c.amount(req.Asset, req.Units)
		}
	}
	return w, err
}

// Registration is a parsed name registration: the name as
// chains.ParseName leaves it, its owner and its meta-address.
type Registration[Addr, Meta any] struct {
	Name  string
	Owner Addr
	Meta  Meta
}

// Register reads the registration of name to metaAddress by ownerAddress.
func (c Chain[Addr, Meta, Asset]) Register(ownerAddress, name, metaAddress string) (Registration[Addr, Meta], error) {
	var r Registration[Addr, Meta]
	var err error
	if r.Name, err = chains.ParseName(name); err != nil {
		return r, err
	}
	if r.Owner, err = c.Address(ownerAddress); err != nil {
		return r, err
	}
	r.Meta, err = c.Meta(metaAddress)
	return r, err
}

// Meta is a Chain's Meta from a stealth scheme's parser: the text is
// trimmed, and what the scheme refuses is chains.ErrInvalidAddress.
func Meta[M any](scheme func(string) (M, error)) func(string) (M, error) {
	return func(s string) (M, error) {
		m, err := scheme(strings.TrimSpace(s))
		if err != nil {
			return m, fmt.Errorf("%w: meta-address: %v", chains.ErrInvalidAddress, err)
		}
		return m, nil
	}
}
