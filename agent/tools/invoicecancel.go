package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// cancel_invoice withdraws one of this agent's open invoices: it stops
// accepting payment at once. A cancelled invoice keeps the spec's status
// pending and expires at the moment it was cancelled (expiresAt, plus
// cancelledAt saying why): every path that pays or settles an invoice
// already refuses an expired one (pay_invoice, an approval decided later,
// the pay page, MarkPaid), so none needs a rule of its own
// (docs/invoices.md, "Cancelling").

// InvoiceCanceller is implemented by an Invoices store that can cancel
// (agent/state Invoices).
type InvoiceCanceller interface {
	// Cancel cancels the agent's invoice id. changed is false when it was
	// already cancelled. A paid or expired invoice is refused with an
	// error matching ErrInvoiceNotCancellable; an unknown one matches
	// ErrUnknownInvoice.
	Cancel(ctx context.Context, id string) (inv Invoice, changed bool, err error)
}

// ErrInvoiceNotCancellable: the invoice is paid or expired; nothing was
// changed.
var ErrInvoiceNotCancellable = errors.New("invoice cannot be cancelled")

// CancelledInvoice is the detail of cancel_invoice.
type CancelledInvoice struct {
	Invoice
	// AlreadyCancelled: it was cancelled before this call; nothing changed.
	AlreadyCancelled bool `json:"alreadyCancelled,omitempty"`
}

var invoiceCanceller = service{"no invoice store that can cancel", func(env *Env) bool {
	_, ok := env.Invoices.(InvoiceCanceller)
	return !ok
}}

var cancelInvoiceSpec = spec{
	{name: "invoice_id", maxLen: 300, example: "3f2a9c1e", desc: "The invoice's id, a unique prefix of at least 4 characters, or its payment link (…/pay/<id>). Omit it to name the invoice by amount, asset and/or memo instead."},
	{name: "amount", maxLen: MaxAmountLen, example: "5", desc: "Without invoice_id: the open invoice asking for this amount."},
	{name: "asset", maxLen: 10, example: "USDC", desc: "Without invoice_id: the open invoice in this asset."},
	{name: "memo", maxLen: MaxMemoLen, example: "logo work", desc: "Without invoice_id: the open invoice whose memo contains this text."},
}

func cancelInvoice() Tool {
	return withArgs(Tool{
		Name: "cancel_invoice",
		Description: "Cancel one of this agent's open (unpaid, unexpired) invoices so it can no longer be paid, by its id (or a unique prefix of " +
			"at least 4 characters, or its payment link) or by what the user called it (amount, asset, memo: \"the invoice for 5 USDC\"). " +
			"A paid or expired invoice is refused and nothing changes. When several invoices match, nothing changes and the error lists " +
			"them: ask the user which one.",
		needs: []service{invoiceStore, invoiceCanceller},
	}, cancelInvoiceSpec, func(ctx context.Context, env *Env, a *args) (any, error) {
		all, err := env.Invoices.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing invoices: %w", err)
		}
		inv, err := findInvoice(env, all, a)
		if err != nil {
			return nil, err
		}
		done, changed, err := env.Invoices.(InvoiceCanceller).Cancel(ctx, inv.ID)
		if err != nil {
			return nil, err
		}
		return &CancelledInvoice{Invoice: done, AlreadyCancelled: !changed}, nil
	})
}

// findInvoice picks the invoice a cancel_invoice call names among the
// agent's: by id (or prefix, or payment link), else the one open invoice
// that fits the description. None or several is an error the model can
// act on; a paid or expired invoice named by id is refused with the
// reason.
func findInvoice(env *Env, all []Invoice, a *args) (Invoice, error) {
	now := env.now()
	if ref := strings.TrimSpace(a.str("invoice_id")); ref != "" {
		id := strings.ToLower(ref)
		if i := strings.LastIndex(id, "/pay/"); i >= 0 {
			id = strings.Trim(id[i+len("/pay/"):], "/")
		}
		if len(id) < 4 || strings.Trim(id, "0123456789abcdef-") != "" {
			return Invoice{}, argErr("invoice_id %q is not an invoice id: give the id (or at least its first 4 characters) or its payment link; check_invoices lists them", clip(ref, 80))
		}
		var hits []Invoice
		for _, inv := range all {
			if inv.ID == id {
				hits = []Invoice{inv}
				break
			}
			if strings.HasPrefix(inv.ID, id) {
				hits = append(hits, inv)
			}
		}
		switch len(hits) {
		case 0:
			return Invoice{}, fmt.Errorf("%w: this agent has no invoice %s (only its own invoices can be cancelled); check_invoices lists them. Nothing was changed", ErrUnknownInvoice, clip(id, 36))
		case 1:
			return hits[0], cancellable(hits[0], now)
		}
		return Invoice{}, fmt.Errorf("%w: %d invoices have ids starting %q: %s. Nothing was changed; give more of the id", ErrInvalidArgs, len(hits), id, invoiceLines(hits))
	}
	amount, asset := strings.TrimSpace(a.str("amount")), strings.ToUpper(strings.TrimSpace(a.str("asset")))
	memo := strings.ToLower(strings.TrimSpace(a.str("memo")))
	var hits, closed []Invoice
	for _, inv := range all {
		if amount != "" && !sameAmount(inv.Amount, amount) || asset != "" && !strings.EqualFold(inv.Asset, asset) ||
			memo != "" && !strings.Contains(strings.ToLower(inv.Memo), memo) {
			continue
		}
		if inv.CancelledAt != nil || cancellable(inv, now) != nil {
			closed = append(closed, inv)
			continue
		}
		hits = append(hits, inv)
	}
	switch {
	case len(hits) == 1:
		return hits[0], nil
	case len(hits) > 1:
		return Invoice{}, fmt.Errorf("%w: %d open invoices match: %s. Nothing was changed; ask the user which one (by id, amount or memo)", ErrInvalidArgs, len(hits), invoiceLines(hits))
	case len(closed) == 1:
		// Only a cancelled, paid or expired one fits: a cancelled one is
		// answered as it is (the call is idempotent); otherwise say why it
		// cannot be cancelled.
		if closed[0].CancelledAt != nil {
			return closed[0], nil
		}
		return Invoice{}, cancellable(closed[0], now)
	}
	what := "that description"
	if amount == "" && asset == "" && memo == "" {
		what = "anything"
	}
	return Invoice{}, fmt.Errorf("%w: no open invoice of this agent matches %s; check_invoices lists them. Nothing was changed", ErrUnknownInvoice, what)
}

// cancellable refuses a paid or expired invoice; a cancelled one passes
// (cancelling again answers it as it is: the call is idempotent).
func cancellable(inv Invoice, now time.Time) error {
	switch {
	case inv.Status == "paid":
		tx := ""
		if inv.TxHash != nil && *inv.TxHash != "" {
			tx = " (transaction " + *inv.TxHash + ")"
		}
		return fmt.Errorf("%w: invoice %s (%s %s, %q) is already paid%s; a paid invoice cannot be cancelled. Nothing was changed; to give the money back, send a payment to the payer", ErrInvoiceNotCancellable, inv.ID, inv.Amount, inv.Asset, clip(inv.Memo, 40), tx)
	case inv.CancelledAt != nil:
		return nil
	case inv.Expired(now):
		return fmt.Errorf("%w: invoice %s (%s %s, %q) already expired at %s; it can no longer be paid, so there is nothing to cancel. Nothing was changed", ErrInvoiceNotCancellable, inv.ID, inv.Amount, inv.Asset, clip(inv.Memo, 40), inv.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

func invoiceLines(invs []Invoice) string {
	var lines []string
	for _, inv := range invs {
		lines = append(lines, fmt.Sprintf("%s (%s %s, %q, %s)", inv.ID[:min(8, len(inv.ID))], inv.Amount, inv.Asset, clip(inv.Memo, 30), inv.Status))
	}
	return strings.Join(lines, "; ")
}
