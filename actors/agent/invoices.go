package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/payuri"
	"github.com/veilhq/veil/runtime/audit"
)

func (a *Actor) invoiceRecord(ctx context.Context, id string) (state.InvoiceRecord, error) {
	rec, err := a.invoices().Record(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		return rec, ErrInvoiceNotFound
	}
	return rec, err
}

func (a *Actor) getInvoice(ctx context.Context, m *GetInvoice) (*tools.Invoice, error) {
	rec, err := a.invoiceRecord(ctx, m.InvoiceID)
	if err != nil {
		return nil, err
	}
	inv := rec.Invoice
	return &inv, nil
}

// confirmInvoicePaid verifies a payment of the invoice before it flips; an
// invoice already paid is answered as it is (its invoice_paid notification
// is raised once in any case).
func (a *Actor) confirmInvoicePaid(ctx context.Context, m *ConfirmInvoicePaid) (*tools.Invoice, error) {
	rec, err := a.invoiceRecord(ctx, m.InvoiceID)
	if err != nil {
		return nil, err
	}
	if rec.Status == state.InvoicePaid {
		tx := ""
		if rec.TxHash != nil {
			tx = *rec.TxHash
		}
		if _, err := a.settleInvoice(ctx, rec.ID, tx, a.notifyOnce); err != nil {
			return nil, err
		}
		return a.getInvoice(ctx, &GetInvoice{InvoiceID: rec.ID})
	}
	if rec.Expired(a.deps.now()) {
		return nil, fmt.Errorf("%w: invoice %s %s; it can no longer be paid, ask the payee for a new invoice", ErrInvoiceExpired, rec.ID, rec.Closed())
	}
	txHash := strings.TrimSpace(m.TxHash)
	if txHash != "" {
		if err := a.verifyInvoiceTx(ctx, rec, txHash); err != nil {
			return nil, err
		}
	} else if err := a.settleFromRecorded(ctx, rec); err != nil {
		return nil, err
	}
	return a.getInvoice(ctx, &GetInvoice{InvoiceID: rec.ID})
}

// verifyInvoiceTx asks the chain what txHash paid, records what reached the
// invoice's address in its asset as a received payment (once), and settles
// the invoice when the payments there cover it.
func (a *Actor) verifyInvoiceTx(ctx context.Context, rec state.InvoiceRecord, txHash string) error {
	conn, err := a.deps.Chains.Chain(rec.Chain)
	if err != nil {
		return err
	}
	v, ok := conn.Connector().(chains.PaymentVerifier)
	if !ok {
		return fmt.Errorf("%w: payments on %s cannot be verified by transaction hash on this node", chains.ErrUnavailable, rec.Chain)
	}
	transfers, err := v.TransfersIn(ctx, txHash)
	if errors.Is(err, chains.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoPayment, strings.TrimPrefix(err.Error(), chains.ErrNotFound.Error()+": "))
	}
	if err != nil {
		return err
	}
	total, tx := new(big.Rat), ""
	var other []string
	for _, t := range transfers {
		if !sameAddress(rec.Chain, t.To, rec.PayTo) {
			continue
		}
		if !strings.EqualFold(t.Asset, rec.Asset) {
			other = append(other, t.Amount+" "+t.Asset)
			continue
		}
		if r, ok := new(big.Rat).SetString(t.Amount); ok {
			total.Add(total, r)
			tx = t.TxHash
		}
	}
	if tx == "" {
		msg := fmt.Sprintf("transaction %s pays nothing in %s to the invoice's address %s on %s", txHash, rec.Asset, rec.PayTo, rec.Chain)
		if len(other) > 0 {
			msg += fmt.Sprintf(" (it pays %s there, which is not the invoice's asset)", strings.Join(other, ", "))
		}
		return fmt.Errorf("%w: %s", ErrNoPayment, msg)
	}
	amount := strings.TrimRight(strings.TrimRight(total.FloatString(36), "0"), ".")
	if _, _, err := a.deliverIncoming(ctx, rec.Chain, Incoming{StealthAddress: rec.PayTo, Asset: rec.Asset, Amount: amount, TxHash: tx}, a.notifyOnce); err != nil {
		return err
	}
	got, err := a.invoiceRecord(ctx, rec.ID)
	if err != nil {
		return err
	}
	if got.Status != state.InvoicePaid {
		return fmt.Errorf("%w: transaction %s pays %s %s to the invoice's address; the invoice asks for %s %s (received there so far: %s)",
			ErrNoPayment, txHash, amount, rec.Asset, rec.Amount, rec.Asset, a.receivedAt(ctx, rec))
	}
	return nil
}

// settleFromRecorded settles the invoice from the payments the scanners
// already recorded at its address.
func (a *Actor) settleFromRecorded(ctx context.Context, rec state.InvoiceRecord) error {
	p, err := state.NewPayments(a.deps.Store, a.id, a.deps.now).Get(ctx, rec.Chain, rec.PayTo)
	if errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("%w: no payment to the invoice's address %s on %s has been seen yet; if it was paid, send {\"txHash\": \"…\"} to have that transaction verified", ErrNoPayment, rec.PayTo, rec.Chain)
	}
	if err != nil {
		return err
	}
	if !strings.EqualFold(p.Asset, rec.Asset) || !covers(p.Amount, rec.Amount) || len(p.TxHashes) == 0 {
		return fmt.Errorf("%w: the invoice asks for %s %s; its address %s has received %s %s", ErrNoPayment, rec.Amount, rec.Asset, rec.PayTo, p.Amount, p.Asset)
	}
	_, err = a.settleInvoice(ctx, rec.ID, p.TxHashes[len(p.TxHashes)-1], a.notifyOnce)
	return err
}

func (a *Actor) receivedAt(ctx context.Context, rec state.InvoiceRecord) string {
	p, err := state.NewPayments(a.deps.Store, a.id, a.deps.now).Get(ctx, rec.Chain, rec.PayTo)
	if err != nil {
		return "0 " + rec.Asset
	}
	return p.Amount + " " + p.Asset
}

func sameAddress(c chains.ID, x, y string) bool {
	if c.Family() == chains.FamilyEVM {
		return strings.EqualFold(x, y)
	}
	return x == y
}

// publicInvoice answers the pay page's view, with the transaction's
// explorer link once paid.
func (a *Actor) publicInvoice(ctx context.Context, m *PublicInvoice) (*PayView, error) {
	rec, err := a.invoiceRecord(ctx, m.InvoiceID)
	if err != nil {
		return nil, err
	}
	v := PayViewOf(rec)
	v.Expired = rec.Status != state.InvoicePaid && rec.Expired(a.deps.now())
	ref, err := a.deps.Chains.Chain(rec.Chain)
	if err != nil {
		return v, nil // the page still shows the address
	}
	if rec.TxHash != nil {
		v.TxLink = ref.TxLink(*rec.TxHash)
	}
	if err := paymentURI(v, rec, ref.Connector()); err != nil {
		a.log(ctx).Warn("no payment URI for the invoice", slog.String("invoice", rec.ID), slog.String("err", err.Error()))
	}
	return v, nil
}

// paymentURI fills v's wallet request from what conn says about the
// invoice's asset on its chain. A Solana invoice carries its Solana Pay
// reference, by which the scanner finds the wallet's payment
// (chains.ReferenceScanner); the invoice's memo travels as the
// wallet-shown message, never on chain.
func paymentURI(v *PayView, rec state.InvoiceRecord, conn chains.Connector) error {
	t, ok := conn.(payuri.Target)
	if !ok {
		return nil
	}
	chainID, token, ok := t.PaymentTarget(rec.Asset)
	if !ok {
		return fmt.Errorf("%s does not carry %s", rec.Chain, rec.Asset)
	}
	asset, err := tools.LookupAsset(rec.Chain, rec.Asset)
	if err != nil {
		return err
	}
	req := payuri.Request{PayTo: rec.PayTo, Amount: rec.Amount, Decimals: asset.Decimals, AssetCode: asset.Symbol, Token: token, ChainID: chainID}
	if rec.Chain.Family() == chains.FamilySolana {
		req.Label, req.Message, req.Reference = v.Payee, rec.Memo, rec.Reference
	}
	if n, ok := conn.(payuri.Networked); ok {
		req.NetworkPassphrase = n.PaymentNetwork()
	}
	uri, err := payuri.For(rec.Chain.Family(), req)
	if err != nil {
		return err
	}
	v.PaymentURI, v.Token, v.ChainID = uri, token, chainID
	return nil
}

// PayViewOf is the pay page's view of a stored invoice (without TxLink,
// Expired and the payment URI, which need the clock and the chain).
func PayViewOf(rec state.InvoiceRecord) *PayView {
	return &PayView{
		PayableInvoice: tools.PayableInvoice{ID: rec.ID, Payee: rec.AgentName + chains.NameSuffix, Amount: rec.Amount, Asset: rec.Asset, Memo: rec.Memo,
			Chain: rec.Chain, PayTo: rec.PayTo, Status: rec.Status, ExpiresAt: rec.ExpiresAt, CancelledAt: rec.CancelledAt},
		TxHash: rec.TxHash, CreatedAt: rec.CreatedAt, PaidAt: rec.PaidAt,
	}
}

// claimInvoicePaid settles the invoice from a transaction anyone names
// (the public POST /pay/:id/paid): the chain, not the caller, says what it
// paid. A paid invoice answers as it is for one of the transactions that
// paid it and refuses any other; nothing else changes.
func (a *Actor) claimInvoicePaid(ctx context.Context, m *ClaimInvoicePaid) (*PayView, error) {
	rec, err := a.invoiceRecord(ctx, m.InvoiceID)
	if err != nil {
		return nil, err
	}
	txHash := strings.TrimSpace(m.TxHash)
	if txHash == "" {
		return nil, fmt.Errorf("%w: name the transaction that paid the invoice: {\"txHash\": \"…\"}", ErrNoPayment)
	}
	if rec.Status == state.InvoicePaid {
		if !a.paidBy(ctx, rec, txHash) {
			return nil, fmt.Errorf("%w: invoice %s was paid by another transaction; %s is not one of its payments", ErrInvoiceSettled, rec.ID, txHash)
		}
		return a.publicInvoice(ctx, &PublicInvoice{InvoiceID: rec.ID})
	}
	if rec.Expired(a.deps.now()) {
		return nil, fmt.Errorf("%w: invoice %s %s; it can no longer be paid, ask the payee for a new invoice", ErrInvoiceExpired, rec.ID, rec.Closed())
	}
	if err := a.verifyInvoiceTx(ctx, rec, txHash); err != nil {
		return nil, err
	}
	a.appendMoneyAudit(ctx, audit.ActionInvoiceClaim, audit.SourcePayPage, audit.OutcomeOK,
		fmt.Sprintf("invoice %s (%s %s) settled by transaction %s, named by a payer on the public pay page and verified on %s", rec.ID, rec.Amount, rec.Asset, txHash, rec.Chain),
		rec.ID, txHash)
	return a.publicInvoice(ctx, &PublicInvoice{InvoiceID: rec.ID})
}

// paidBy: txHash is the transaction that settled rec or one of the
// payments recorded at its address.
func (a *Actor) paidBy(ctx context.Context, rec state.InvoiceRecord, txHash string) bool {
	same := func(h string) bool {
		if rec.Chain.Family() == chains.FamilyEVM {
			return strings.EqualFold(h, txHash)
		}
		return h == txHash
	}
	if rec.TxHash != nil && same(*rec.TxHash) {
		return true
	}
	p, err := state.NewPayments(a.deps.Store, a.id, a.deps.now).Get(ctx, rec.Chain, rec.PayTo)
	if err != nil {
		return false
	}
	for _, h := range p.TxHashes {
		if same(h) {
			return true
		}
	}
	return false
}
