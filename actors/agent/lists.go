package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/veilhq/veil/agent/state"
	"github.com/veilhq/veil/agent/tools"
	"github.com/veilhq/veil/client"
)

// ListInvoices is GET /agent/:id/invoices: one page of the agent's
// invoices, newest first, as Filter selects (docs/api.md, "Lists and
// paging"). A filter the store refuses is ErrBadFilter.
type ListInvoices struct {
	answers[*state.InvoicePage]
	AccountID string
	Filter    state.InvoiceFilter
}

func (m *ListInvoices) Account() string { return m.AccountID }

func (a *Actor) listInvoices(ctx context.Context, m *ListInvoices) (*state.InvoicePage, error) {
	p, err := a.invoices().Page(ctx, m.Filter)
	if errors.Is(err, state.ErrInvalid) {
		return nil, fmt.Errorf("%w: %w", ErrBadFilter, err)
	}
	if err != nil {
		return nil, err
	}
	if p.Invoices == nil {
		p.Invoices = []tools.Invoice{}
	}
	return &p, nil
}

// ListPayments is GET /agent/:id/payments: one page of the payments the
// agent made (its outgoing payment records, agent/state Outgoing), newest
// first, as Filter selects.
type ListPayments struct {
	answers[*client.PaymentPage]
	AccountID string
	Filter    state.PaymentFilter
}

func (m *ListPayments) Account() string { return m.AccountID }

// GetPayment is GET /agent/:id/payments/:paymentId: one payment record
// (ErrPaymentNotFound when the agent has none by that id).
type GetPayment struct {
	answers[*client.PaymentRecord]
	AccountID string
	PaymentID string
}

func (m *GetPayment) Account() string { return m.AccountID }

func (a *Actor) listPayments(ctx context.Context, m *ListPayments) (*client.PaymentPage, error) {
	p, err := a.outgoing().List(ctx, m.Filter)
	if errors.Is(err, state.ErrInvalid) {
		return nil, fmt.Errorf("%w: %w", ErrBadFilter, err)
	}
	if err != nil {
		return nil, err
	}
	out := &client.PaymentPage{Payments: make([]client.PaymentRecord, len(p.Payments)), NextCursor: p.Next}
	for i, r := range p.Payments {
		out.Payments[i] = PaymentView(r)
	}
	return out, nil
}

func (a *Actor) getPayment(ctx context.Context, m *GetPayment) (*client.PaymentRecord, error) {
	p, err := a.outgoing().Get(ctx, m.PaymentID)
	if errors.Is(err, state.ErrNotFound) {
		return nil, ErrPaymentNotFound
	}
	if err != nil {
		return nil, err
	}
	v := PaymentView(p)
	return &v, nil
}

// PaymentView is a payment record as the API shows it: the amount as a
// decimal, the idempotency key left out (it is the sender's, not the
// reader's, business).
func PaymentView(p tools.OutgoingPayment) client.PaymentRecord {
	return client.PaymentRecord{
		ID: p.ID, AgentID: p.AgentID, Kind: string(p.Kind),
		Source: client.PaymentSource{Type: string(p.Source.Type), ID: p.Source.ID},
		Chain:  string(p.Chain), Asset: p.Asset, Amount: p.Amount.String(), All: p.All,
		Recipient: client.PaymentRecipient{Name: p.Recipient.Name, Address: p.Recipient.Address},
		From:      p.From, ForPayment: p.ForPayment, Status: string(p.Status), TxHash: p.TxHash, TxHashes: p.TxHashes,
		Confirmations: p.Confirmations, Reason: p.Reason,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, BroadcastAt: p.BroadcastAt, SettledAt: p.SettledAt,
	}
}

// ListReceived is GET /agent/:id/payments/received: one page of the
// stealth payments the agent received (the scanner's and invoice claims'
// records, agent/state Payments), newest first, as Filter selects.
type ListReceived struct {
	answers[*client.ReceivedPage]
	AccountID string
	Filter    state.ReceivedFilter
}

func (m *ListReceived) Account() string { return m.AccountID }

func (a *Actor) listReceived(ctx context.Context, m *ListReceived) (*client.ReceivedPage, error) {
	p, err := state.NewPayments(a.deps.Store, a.id, a.deps.now).Page(ctx, m.Filter)
	if errors.Is(err, state.ErrInvalid) {
		return nil, fmt.Errorf("%w: %w", ErrBadFilter, err)
	}
	if err != nil {
		return nil, err
	}
	out := &client.ReceivedPage{Payments: make([]client.ReceivedPayment, len(p.Payments)), NextCursor: p.NextCursor}
	for i, r := range p.Payments {
		out.Payments[i] = ReceivedView(r)
	}
	return out, nil
}

// ReceivedView is a received payment as the API shows it.
func ReceivedView(p state.PaymentRecord) client.ReceivedPayment {
	return client.ReceivedPayment{
		Chain: string(p.Chain), StealthAddress: p.StealthAddress, EphemeralPubKey: p.EphemeralPubKey,
		Asset: p.Asset, Amount: p.Amount, Balance: p.Balance, TxHash: p.TxHash, TxHashes: p.TxHashes,
		Withdrawn: p.Withdrawn, ReceivedAt: p.ReceivedAt,
	}
}
