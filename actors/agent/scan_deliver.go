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
	"github.com/veilhq/veil/persistence"
	"github.com/veilhq/veil/runtime/audit"
)

// TableNotified remembers the events that raised a notification, so that
// each raises one however often it is delivered (a page scanned again after
// a crash, the on-demand scan and the background scanner finding the same
// payment, POST /invoice/:id/paid repeated). The marker is written in the
// same atomic batch as the notification. Keys:
// "<agentID>/pay/<chain>/<address>/<txHash>", "<agentID>/inv/<invoiceID>"
// and, for a tool call's notification, "<agentID>/tool/<hash of its
// idempotency key and text>" (toolenv.go).
const TableNotified = "agent_notified"

// errNotified reports that the event's notification exists already.
var errNotified = errors.New("already notified")

// notifyOnceFunc raises n with the marker key, or answers errNotified.
type notifyOnceFunc func(ctx context.Context, n *Notify, marker string) error

// notifyOnce is the actor's own notifyOnceFunc (message handlers run one at
// a time, so nothing else writes the record meanwhile).
func (a *Actor) notifyOnce(ctx context.Context, n *Notify, marker string) error {
	_, err := a.notify(ctx, n, persistence.Put(TableNotified, marker, []byte{'1'}, persistence.Absent()))
	var ce *persistence.ConflictError
	if errors.As(err, &ce) && ce.Table == TableNotified {
		return errNotified
	}
	return err
}

// notifyOnce is the chat tools' variant: tool calls of one response run
// concurrently, so it takes the notifier's lock like Notify does.
func (n *notifier) notifyOnce(ctx context.Context, note *Notify, marker string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.a.notifyOnce(ctx, note, marker)
}

func lowerIfEVM(c chains.ID, addr string) string {
	if c.Family() == chains.FamilyEVM {
		return strings.ToLower(addr)
	}
	return addr
}

func paymentMarker(agentID string, c chains.ID, addr, tx string) string {
	return agentID + "/pay/" + string(c) + "/" + lowerIfEVM(c, addr) + "/" + lowerIfEVM(c, tx)
}

func invoiceMarker(agentID, invoiceID string) string { return agentID + "/inv/" + invoiceID }

// invoices is the agent's invoice store for reading and marking paid (no
// address generator, no name: it creates nothing). It does not read a.rec,
// so chat tools may use it from their goroutines.
func (a *Actor) invoices() *state.Invoices {
	return state.NewInvoices(a.deps.Store, a.id, a.deps.now, "", a.deps.PublicURL, nil)
}

// deliverIncoming records one payment found on chain for this agent and
// raises its notifications once: payment_received when it is new, and
// invoice_paid when it settles one of the agent's invoices (the payments
// recorded at the invoice's address, in its asset, add up to at least its
// amount). isNew is false for a payment delivered before. Only failures
// worth retrying (the store) are errors: a payment that cannot be recorded
// (malformed, or in another asset than the address already holds) is
// logged and skipped, so that it never blocks a scanner's cursor.
func (a *Actor) deliverIncoming(ctx context.Context, c chains.ID, in Incoming, notify notifyOnceFunc) (isNew bool, paid string, err error) {
	inv, ierr := state.InvoiceByAddress(ctx, a.deps.Store, c, in.StealthAddress)
	isInvoice := ierr == nil && inv.AgentID == a.id
	if ierr != nil && !errors.Is(ierr, state.ErrNotFound) {
		return false, "", ierr
	}
	eph := encodeHex(in.EphemeralPubKey)
	if len(in.EphemeralPubKey) == 0 {
		if !isInvoice {
			a.log(ctx).Warn("payment without an ephemeral key to an address that is no invoice: skipped",
				slog.String("chain", string(c)), slog.String("address", in.StealthAddress), slog.String("tx", in.TxHash))
			return false, "", nil
		}
		eph = inv.EphemeralPubKey
	}
	p, err := state.NewPayments(a.deps.Store, a.id, a.deps.now).Record(ctx, tools.Payment{
		Chain: c, StealthAddress: in.StealthAddress, EphemeralPubKey: eph,
		Asset: in.Asset, Amount: in.Amount, Balance: in.Amount, TxHash: in.TxHash,
	})
	if err == nil {
		// A payment recorded for the first time: its audit record.
		detail := fmt.Sprintf("received %s %s at %s on %s (tx %s)", in.Amount, in.Asset, in.StealthAddress, c, in.TxHash)
		ids := []string{in.TxHash}
		if isInvoice {
			detail += ", the address of invoice " + inv.ID
			ids = append(ids, inv.ID)
		}
		a.appendMoneyAudit(ctx, audit.ActionPaymentReceived, audit.SourceChain, audit.OutcomeOK, detail, ids...)
	}
	switch {
	case errors.Is(err, state.ErrAlreadyKnown):
	case errors.Is(err, state.ErrInvalid):
		a.log(ctx).Warn("payment not recorded", slog.String("chain", string(c)), slog.String("address", in.StealthAddress),
			slog.String("tx", in.TxHash), slog.Any("err", err))
		return false, "", nil
	case err != nil:
		return false, "", err
	}
	title := fmt.Sprintf("Received %s %s", in.Amount, in.Asset)
	body := fmt.Sprintf("%s %s arrived at your stealth address %s on %s (tx %s).", in.Amount, in.Asset, in.StealthAddress, c, in.TxHash)
	if isInvoice {
		body = fmt.Sprintf("%s %s arrived at the address of invoice %s (%s) on %s (tx %s).", in.Amount, in.Asset, inv.ID, inv.Memo, c, in.TxHash)
	}
	switch err := notify(ctx, &Notify{Type: NotePaymentReceived, Title: title, Body: body}, paymentMarker(a.id, c, in.StealthAddress, in.TxHash)); {
	case err == nil:
		isNew = true
	case !errors.Is(err, errNotified):
		return false, "", err
	}
	if !isInvoice || !strings.EqualFold(inv.Asset, p.Asset) || !covers(p.Amount, inv.Amount) {
		return isNew, "", nil
	}
	changed, err := a.settleInvoice(ctx, inv.ID, in.TxHash, notify)
	if errors.Is(err, ErrInvoiceExpired) {
		// The payment is recorded (it is the agent's money) but settles
		// nothing: the invoice expired before it arrived.
		a.log(ctx).Info("payment to an expired invoice", slog.String("invoice", inv.ID), slog.String("tx", in.TxHash))
		return isNew, "", nil
	}
	if err != nil {
		return isNew, "", err
	}
	if changed {
		paid = inv.ID
	}
	return isNew, paid, nil
}

// settleInvoice marks the invoice paid by txHash (an invoice already paid
// keeps its first transaction) and raises invoice_paid once.
func (a *Actor) settleInvoice(ctx context.Context, id, txHash string, notify notifyOnceFunc) (bool, error) {
	inv, _, err := a.invoices().MarkPaid(ctx, id, txHash)
	if errors.Is(err, state.ErrExpired) {
		return false, fmt.Errorf("%w: %s", ErrInvoiceExpired, strings.TrimPrefix(err.Error(), state.ErrExpired.Error()+": "))
	}
	if err != nil {
		return false, err
	}
	tx := txHash
	if inv.TxHash != nil {
		tx = *inv.TxHash
	}
	err = notify(ctx, &Notify{
		Type:  NoteInvoicePaid,
		Title: fmt.Sprintf("Invoice paid: %s %s", inv.Amount, inv.Asset),
		Body:  fmt.Sprintf("Invoice %s (%s) for %s %s was paid on %s in tx %s.", inv.ID, inv.Memo, inv.Amount, inv.Asset, inv.Chain, tx),
	}, invoiceMarker(a.id, id))
	if errors.Is(err, errNotified) {
		return false, nil
	}
	return err == nil, err
}

// covers reports whether the decimal have is at least want.
func covers(have, want string) bool {
	h, ok1 := new(big.Rat).SetString(have)
	w, ok2 := new(big.Rat).SetString(want)
	return ok1 && ok2 && h.Cmp(w) >= 0
}

// deliverPayments handles DeliverPayments from the chain scanner.
func (a *Actor) deliverPayments(ctx context.Context, m *DeliverPayments) (*DeliverReport, error) {
	rep := &DeliverReport{}
	for _, in := range m.Payments {
		isNew, paid, err := a.deliverIncoming(ctx, m.Chain, in, a.notifyOnce)
		if err != nil {
			return rep, err
		}
		if isNew {
			rep.New++
		}
		if paid != "" {
			rep.InvoicesPaid = append(rep.InvoicesPaid, paid)
		}
	}
	return rep, nil
}
